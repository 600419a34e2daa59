"""Everything on disk: the write-ahead log, snapshots, stream and table-metadata files, recovery,
repair, group commit and rollback."""
