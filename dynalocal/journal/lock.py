"""The data directory's lock: one server (or `dynalocal repair`) at a time per directory."""
from __future__ import annotations

import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def lock_directory(directory: Path) -> int | None:
    """Lock the data directory for this process: two servers on one directory would corrupt it.

    The lock is an flock on the directory itself, held by a descriptor open for the server's life:
    deleting a file in it (such as an old LOCK file) cannot free it, and the kernel frees it when
    the process ends, however it ends."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY)
    if fcntl is None:  # not POSIX: no advisory locks
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise DataDirectoryInUse(f"data directory {directory} is in use by another dynalocal server") from None
    return fd


class DataDirectoryInUse(RuntimeError):
    """Another server (process) holds the data directory."""
