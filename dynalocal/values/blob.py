"""Stored JSON blobs: orjson output trimmed to its length.

orjson.dumps returns bytes that keep their multi-KB output buffer (tracemalloc and RSS
both show ~4 KB per small item), so a blob kept in storage is copied to its exact size.
"""
from __future__ import annotations

from typing import Any

import orjson

_NEWLINE = orjson.OPT_APPEND_NEWLINE


def dumps(obj: Any) -> bytes:
    """JSON bytes of `obj` sized exactly (slicing copies; the trailing newline goes)."""
    return orjson.dumps(obj, option=_NEWLINE)[:-1]
