"""The index checked against the disk, read from the SQLite file itself (read-only, so checking
changes nothing a restarted server will find): the properties crash safety and file system
faults must keep, with the offending paths named.

Some findings are defects at any moment (a failed integrity check, a duplicated row, a row whose
size and modification time match the file while its hash does not: no later scan would notice);
others only once a pass has run to its end with the disk at rest (rows out of date, files not
indexed yet, rows of files that are gone)."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import xxhash

OVERSIZED_HASH_BYTES = 1 << 20
MAX_FILE_SIZE = 1 << 20  # the settings' default
MACHINE_ANNOTATORS = ("structural/", "heuristic/")
NAMED = 5


def disk_hash(path: Path, size: int, max_file_size: int = MAX_FILE_SIZE) -> str | None:
    """The content hash the index format defines (xxh3-128 of the bytes; of an oversized file,
    of its first megabyte plus its size), or None if the file cannot be read."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(OVERSIZED_HASH_BYTES if size > max_file_size else -1)
    except OSError:
        return None
    digest = xxhash.xxh3_128_hexdigest(data)
    return digest if size <= max_file_size else f"{digest[:24]}{size:08x}"


@dataclass(frozen=True)
class Row:
    path: str
    size: int
    mtime_ns: int
    hash: str
    annotator: str | None
    summary: str
    tags: str
    skip_reason: str | None


@dataclass
class Findings:
    integrity: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    descriptions_astray: list[str] = field(default_factory=list)
    """files_fts rows missing, orphaned, or saying something the file's row does not."""
    stale: list[str] = field(default_factory=list)
    """Size and mtime match the file on disk, the hash does not: no scan would ever notice."""
    annotations_astray: list[str] = field(default_factory=list)
    """A row showing an annotation that does not exist, or summary/tags other than its own."""
    words_missing: list[str] = field(default_factory=list)
    """Content annotated by a machine annotator whose words are not in the content index."""
    contents_astray: int = 0
    """body_fts rows without a contents row, or the other way round."""
    # Expected only while a pass is under way or was killed:
    outdated: list[str] = field(default_factory=list)
    """Size or mtime differ from the file on disk (the next scan re-reads it)."""
    vanished: list[str] = field(default_factory=list)
    """Indexed, but no regular file on disk any more."""
    lost: list[str] = field(default_factory=list)
    """On disk (and expected in the index), not indexed."""
    pending: list[str] = field(default_factory=list)
    """Annotatable, but showing no annotation."""
    orphan_contents: int = 0
    """Content words no indexed file has any more: garbage, not a fault (they match no file);
    a full pass that changes something collects them."""
    rows: int = 0

    def broken(self) -> dict[str, object]:
        """What is wrong at any moment, even right after a kill."""
        return self._named(
            "integrity",
            "duplicated",
            "descriptions_astray",
            "stale",
            "annotations_astray",
            "words_missing",
            "contents_astray",
        )

    def unfinished(self) -> dict[str, object]:
        """What a complete pass over a disk at rest must leave none of."""
        return {
            **self.broken(),
            **self._named("outdated", "vanished", "lost", "pending"),
        }

    def _named(self, *names: str) -> dict[str, object]:
        found: dict[str, object] = {}
        for name in names:
            value = getattr(self, name)
            if isinstance(value, list) and value:
                found[name] = f"{len(value)}: {', '.join(sorted(value)[:NAMED])}"
            elif isinstance(value, int) and value:
                found[name] = value
        return found


def connect(db: Path | str) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def audit(
    db: Path | str,
    root: Path,
    *,
    expected: Iterable[str] | None = None,
    max_file_size: int = MAX_FILE_SIZE,
) -> Findings:
    """Check the index at `db` against the workspace at `root`. `expected`: the paths a
    complete pass must have indexed (for `lost`)."""
    findings = Findings()
    connection = connect(db)
    try:
        findings.integrity = [
            str(row[0]) for row in connection.execute("PRAGMA integrity_check") if row[0] != "ok"
        ]
        rows = [
            Row(*row)
            for row in connection.execute(
                "SELECT path, size, mtime_ns, hash, annotator, summary, tags, skip_reason FROM files"
            )
        ]
        findings.rows = len(rows)
        findings.duplicated = [
            str(path)
            for (path,) in connection.execute("SELECT path FROM files GROUP BY path HAVING count(*) > 1")
        ]
        findings.descriptions_astray = _descriptions_astray(connection)
        findings.annotations_astray = _annotations_astray(connection)
        findings.words_missing = _words_missing(connection)
        findings.contents_astray = _contents_astray(connection)
        ((findings.orphan_contents,),) = connection.execute(
            "SELECT count(*) FROM contents WHERE hash NOT IN (SELECT hash FROM files)"
        )
    finally:
        connection.close()
    indexed = {row.path for row in rows}
    for row in rows:
        _compare_with_disk(row, root, max_file_size, findings)
        if row.annotator is None and row.skip_reason is None:
            findings.pending.append(row.path)
    if expected is not None:
        findings.lost = sorted(set(expected) - indexed)
    return findings


def _compare_with_disk(row: Row, root: Path, max_file_size: int, findings: Findings) -> None:
    try:
        info = os.stat(root / row.path)
    except OSError:
        info = None
    if info is None or not stat.S_ISREG(info.st_mode):
        findings.vanished.append(row.path)
        return
    if (info.st_size, info.st_mtime_ns) != (row.size, row.mtime_ns):
        findings.outdated.append(row.path)
        return
    digest = disk_hash(root / row.path, info.st_size, max_file_size)
    if digest is not None and digest != row.hash:
        findings.stale.append(row.path)


def _descriptions_astray(connection: sqlite3.Connection) -> list[str]:
    rows = connection.execute(
        """
        SELECT f.path FROM files AS f LEFT JOIN files_fts AS d ON d.rowid = f.id
        WHERE d.rowid IS NULL OR d.summary IS NOT f.summary
        """
    ).fetchall()
    ((orphans,),) = connection.execute(
        "SELECT count(*) FROM files_fts WHERE rowid NOT IN (SELECT id FROM files)"
    )
    return [str(path) for (path,) in rows] + [f"<{orphans} orphaned files_fts rows>"] * bool(orphans)


def _annotations_astray(connection: sqlite3.Connection) -> list[str]:
    rows = connection.execute(
        """
        SELECT f.path FROM files AS f
        LEFT JOIN annotations AS a ON a.hash = f.hash AND a.annotator = f.annotator
        WHERE (f.annotator IS NOT NULL AND (a.hash IS NULL OR a.summary IS NOT f.summary
                                             OR a.tags IS NOT f.tags))
           OR (f.annotator IS NULL AND (f.summary != '' OR f.tags != '[]'))
        """
    ).fetchall()
    return [str(path) for (path,) in rows]


def _words_missing(connection: sqlite3.Connection) -> list[str]:
    machine = " OR ".join(f"a.annotator LIKE '{prefix}%'" for prefix in MACHINE_ANNOTATORS)
    rows = connection.execute(
        f"""
        SELECT f.path FROM files AS f
        WHERE EXISTS (SELECT 1 FROM annotations AS a WHERE a.hash = f.hash AND ({machine}))
          AND NOT EXISTS (SELECT 1 FROM contents AS c WHERE c.hash = f.hash)
        """
    ).fetchall()
    return [str(path) for (path,) in rows]


def _contents_astray(connection: sqlite3.Connection) -> int:
    ((without_words,),) = connection.execute(
        "SELECT count(*) FROM contents WHERE id NOT IN (SELECT rowid FROM body_fts)"
    )
    ((without_contents,),) = connection.execute(
        "SELECT count(*) FROM body_fts WHERE rowid NOT IN (SELECT id FROM contents)"
    )
    return int(without_words) + int(without_contents)


def rows_by_path(db: Path | str) -> dict[str, Row]:
    connection = connect(db)
    try:
        return {
            row[0]: Row(*row)
            for row in connection.execute(
                "SELECT path, size, mtime_ns, hash, annotator, summary, tags, skip_reason FROM files"
            )
        }
    finally:
        connection.close()


def differences(index: Mapping[str, Row], reference: Mapping[str, Row]) -> dict[str, list[str]]:
    """How an index differs from one a clean, uninterrupted run built on the same disk: files
    it lacks or has in excess, files whose content hash differs, and files whose annotation
    state (whose annotation they show, why they are skipped) differs."""
    shared = index.keys() & reference.keys()
    return {
        "lost": sorted(reference.keys() - index.keys()),
        "extra": sorted(index.keys() - reference.keys()),
        "hash_differs": sorted(path for path in shared if index[path].hash != reference[path].hash),
        # Summaries are not compared: an annotation belongs to a content, so a renamed file
        # keeps what was said of it under its old name, which a clean run never saw.
        "status_differs": sorted(
            path
            for path in shared
            if (index[path].annotator, index[path].skip_reason)
            != (reference[path].annotator, reference[path].skip_reason)
        ),
    }


def regular_files(root: Path) -> list[str]:
    """Every regular file below `root` (symlinks not followed), as workspace-relative paths."""
    found: list[str] = []
    for current, dirnames, filenames in os.walk(root):
        dirnames[:] = [name for name in dirnames if name != ".git"]
        for name in filenames:
            absolute = os.path.join(current, name)
            if stat.S_ISREG(os.lstat(absolute).st_mode):
                found.append(os.path.relpath(absolute, root).replace(os.sep, "/"))
    return found
