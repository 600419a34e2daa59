"""DynamoDB without HTTP: the operation catalogue, request validation, and one module per operation family."""
