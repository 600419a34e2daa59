"""The shared model: attribute values, numbers, keys, item sizes, stored blobs."""
