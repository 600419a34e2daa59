"""PartiQL operations: ExecuteStatement, BatchExecuteStatement, ExecuteTransaction, planned onto the item operations."""
