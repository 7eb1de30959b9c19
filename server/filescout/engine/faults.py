"""Faults of the storage under the index: a full disk, a file system that cannot be written, a
damaged index file. They are conditions of the machine, not defects of filescout: each is said in
words that name the index, once, without a traceback, and the index keeps answering with what it
holds (a damaged one, once it is rebuilt)."""

from __future__ import annotations

import errno
import re
import sqlite3
from pathlib import Path

from filescout.index.database import schema_objects

SQLITE_FULL = 13
SQLITE_CORRUPT = 11
SQLITE_NOTADB = 26
DAMAGE_WORDS = ("database disk image is malformed", "file is not a database")
"""SQLITE_CORRUPT's and SQLITE_NOTADB's messages, for Pythons without `sqlite_errorcode`."""
_MISSING_TABLE = re.compile(r"no such table: (?:\w+\.)?(\w+)")
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


def index_damage(exc: BaseException) -> str | None:
    """What is wrong with the index file, when `exc` says it is damaged: SQLITE_CORRUPT or
    SQLITE_NOTADB from any statement, or a table of the schema gone ("no such table"). None for
    every other error."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    message = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11 and later
    if (code is not None and code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)) or any(
        words in message for words in DAMAGE_WORDS
    ):
        return message
    missing = _MISSING_TABLE.search(message)
    return message if missing is not None and missing.group(1) in schema_objects() else None


def damaged_message(path: Path, reason: str, aside: Path | None) -> str:
    kept = f"it was moved to {aside} and" if aside is not None else "it"
    return f"the index at {path} is damaged ({reason}): {kept} is being rebuilt from the workspace"


def damaged_elsewhere_message(path: Path, reason: str, writer: str) -> str:
    return (
        f"the index at {path} is damaged ({reason}); {writer} rebuilds it when it meets the "
        "damage, and this process reads the new index as soon as it is there"
    )
