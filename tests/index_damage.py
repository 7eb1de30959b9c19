"""Damage done to a real index file, as a failing disk or another program would leave it: data
pages overwritten with garbage at their offsets while page 1 (the header and the schema) stays
intact, or a table of the schema dropped through SQLite. A running server sees the damage at its
next statement: an outside commit makes every connection drop the pages it had cached."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

GARBAGE = bytes((index * 37 + 11) % 256 for index in range(256))
KEPT = ("sqlite_schema", "sqlite_master", "schema_version")
"""What the damage leaves alone: the schema, and the version an index is recognised by."""


def _connect(db: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(db, isolation_level=None, timeout=10)
    connection.execute("PRAGMA busy_timeout = 10000")
    return connection


def settle(db: Path, timeout: float = 10.0) -> None:
    """Copy the write-ahead log into the file, so the file's pages are the ones read."""
    deadline = time.monotonic() + timeout
    connection = _connect(db)
    try:
        while connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] != 0:
            if time.monotonic() > deadline:
                raise AssertionError(f"the log of {db} could not be checkpointed")
            time.sleep(0.05)
    finally:
        connection.close()


def pages_of(db: Path, tables: Iterable[str] | None = None) -> list[int]:
    """The pages (numbered from 1) of `tables`, or of every table and index but the schema and
    its version."""
    connection = _connect(db)
    try:
        rows = connection.execute("SELECT name, pageno FROM dbstat").fetchall()
    finally:
        connection.close()
    wanted = set(tables) if tables is not None else None
    return sorted(
        page for name, page in rows if page > 1 and name not in KEPT and (wanted is None or name in wanted)
    )


def overwrite_pages(db: Path, tables: Iterable[str] | None = None) -> list[int]:
    """Overwrite the pages of `tables` (default: every table but the schema) with garbage, in
    the file itself; returns the pages."""
    settle(db)
    connection = _connect(db)
    try:
        (page_size,) = connection.execute("PRAGMA page_size").fetchone()
    finally:
        connection.close()
    pages = pages_of(db, tables)
    assert pages, f"no pages of {tables} in {db}"
    with open(db, "r+b") as handle:
        for page in pages:
            handle.seek((page - 1) * page_size)
            handle.write(GARBAGE * (page_size // len(GARBAGE)))
    return pages


def make_readers_look_again(db: Path) -> None:
    """Commit a change of page 1 only: every connection of a running server then drops its
    cached pages at its next transaction, and reads the damaged ones from the file."""
    connection = _connect(db)
    try:
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        connection.execute(f"PRAGMA user_version = {version + 1}")
    finally:
        connection.close()


def drop_table(db: Path, table: str) -> None:
    connection = _connect(db)
    try:
        connection.execute(f"DROP TABLE {table}")
    finally:
        connection.close()


def aside_copies(db: Path) -> list[str]:
    """The copies of the index moved aside beside it (its log files not counted)."""
    return sorted(
        path.name
        for path in db.parent.iterdir()
        if path.name.startswith(db.name + ".") and not path.name.endswith(("-wal", "-shm", ".lock"))
    )
