"""Faults of the storage under the index: a full disk, a file system that cannot be written.
They are conditions of the machine, not defects of filescout: each is said in words that name
the index, once, without a traceback, and the index keeps answering with what it holds."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

SQLITE_FULL = 13
FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
UNWRITABLE_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
"""Why a lock file cannot be created: a read-only file system or directory."""


def is_disk_full(exc: BaseException) -> bool:
    """SQLite's SQLITE_FULL, or the OS's ENOSPC / EDQUOT."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11 and later
        return (code is not None and code & 0xFF == SQLITE_FULL) or "database or disk is full" in str(exc)
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS


def disk_full_message(path: Path) -> str:
    return (
        f"the disk holding the index is full ({path}): indexing stopped, and the index answers "
        "with what it holds until space is freed"
    )


def cannot_write_message(path: Path, exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    return (
        f"the index at {path} cannot be written ({reason.lower()}): answering from what it holds, "
        "without indexing"
    )
