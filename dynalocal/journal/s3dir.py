"""A local stand-in for S3 (`--s3-dir`): bucket `B` is the directory `DIR/B/`, object key `k/x.json`
the file `DIR/B/k/x.json`. Bulk loads, imports and exports read and write objects through here only.

Objects are listed under a key prefix in lexical key order (as S3 lists them), read line by line
through their compression (NONE, GZIP from the standard library, ZSTD with `zstandard`, a run-time
dependency) and written atomically (a temporary file, then a rename), so a reader never sees half
an object. A missing directory or bucket is an `S3Error` the operation reports as its failure
(docs/behaviour/bulk.md).
"""
from __future__ import annotations

import gzip
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple


class S3Error(Exception):
    """An object store problem an operation reports as its FailureCode and FailureMessage."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class S3Object(NamedTuple):
    """One object found under a prefix: its key, file and size in bytes."""

    key: str
    path: Path
    size: int


def bucket_dir(root: str | None, bucket: str) -> Path:
    """The directory standing in for `bucket`; S3Error when there is no --s3-dir or no such bucket."""
    if not root:
        raise S3Error("S3_NOT_CONFIGURED", "dynalocal has no S3 stand-in: start it with --s3-dir DIR "
                                           "(or DYNALOCAL_S3_DIR) and create DIR/<bucket>/")
    path = Path(root) / bucket
    if bucket in ("", ".", "..") or "/" in bucket or not path.is_dir():
        raise S3Error("S3_BUCKET_NOT_FOUND", f"The specified bucket does not exist: {bucket} (no directory {path})")
    return path


def _inside(base: Path, key: str) -> Path:
    """The file of `key` below `base`; S3Error for a key that would leave the bucket."""
    parts = [p for p in key.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise S3Error("S3_INVALID_KEY", f"Object keys with '.' or '..' segments are not supported here: {key}")
    return base.joinpath(*parts) if parts else base


def list_objects(root: str | None, bucket: str, prefix: str = "") -> list[S3Object]:
    """Every object whose key starts with `prefix`, in lexical key order (hidden temporary files excluded)."""
    base = bucket_dir(root, bucket)
    start = _inside(base, prefix.rpartition("/")[0])  # the deepest directory every match lies in
    found: list[S3Object] = []
    if not start.is_dir():
        return found
    for directory, _, files in os.walk(start):
        for name in files:
            if name.startswith(".tmp-"):
                continue
            path = Path(directory) / name
            key = path.relative_to(base).as_posix()
            if key.startswith(prefix):
                found.append(S3Object(key, path, path.stat().st_size))
    found.sort(key=lambda o: o.key)
    return found


def open_object(path: Path, compression: str) -> BinaryIO:
    """A binary stream of an object's content after decompression (NONE, GZIP or ZSTD)."""
    if compression == "GZIP":
        return io.BufferedReader(gzip.GzipFile(path, "rb"))
    if compression == "ZSTD":
        try:
            import zstandard  # only when ZSTD is asked for: kept off start-up
        except ImportError:  # a dependency, but an install may lack it (e.g. no wheel for the platform)
            raise S3Error("UNSUPPORTED_COMPRESSION", "ZSTD input needs the Python package `zstandard`, which is not "
                                                     "installed (pip install zstandard)") from None
        raw = path.open("rb")
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True))
    return path.open("rb")


def unreadable(err: Exception) -> bool:
    """Whether an error met while reading an object means its content is damaged (bad compression,
    truncated, not UTF-8) rather than a bug."""
    if isinstance(err, (OSError, EOFError, UnicodeDecodeError)):
        return True
    zstd = sys.modules.get("zstandard")  # loaded only if a ZSTD object was opened
    return zstd is not None and isinstance(err, zstd.ZstdError)


def lines(path: Path, compression: str) -> Iterator[bytes]:
    """An object's lines (JSON Lines), decompressed, with their line ends."""
    with open_object(path, compression) as stream:
        yield from stream


def write_object(root: str | None, bucket: str, key: str, data: bytes) -> Path:
    """Write one object atomically (a temporary file beside it, then a rename); returns its file."""
    path = _inside(bucket_dir(root, bucket), key)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".tmp-{path.name}")
    with temporary.open("wb") as out:
        out.write(data)
    os.replace(temporary, path)
    return path


def join(*parts: str | None) -> str:
    """An object key from prefix parts, with exactly one `/` between non-empty parts."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))
