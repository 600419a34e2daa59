"""Seed files for --init: JSON seed files and CloudFormation/SAM templates, parsed into DynamoDB requests."""
