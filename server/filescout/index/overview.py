"""What the workspace overview reads: every file's row, the import graph's keys, how often and how
lately the history touched each path, and the access log, all at once.

Read only: the tables stay their own rooms'. An overview looks at the whole workspace, so these
are whole-table reads (a fifth of a second at 100K files); `version` tells a caller when what it
read last is still what the index holds, so it can keep what it derived from it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import msgspec

from filescout.core.records import SKIPPED_SUMMARIES
from filescout.index.database import Database

_decode_list = msgspec.json.Decoder(list[str]).decode
CHUNK = 5000
"""Rows read at a time."""


@dataclass(frozen=True, slots=True)
class FileFacts:
    """One file as the overview shows and weighs it."""

    path: str
    kind: str
    language: str | None
    summary: str
    """The summary it shows, or for a file never annotated from its content, why not."""
    tags: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WorkspaceFacts:
    files: list[FileFacts]
    """Sorted by path."""
    imports: list[tuple[str, str]] = field(default_factory=list)
    """(importer's path, key of what it imports): `core.import_keys`."""
    changes: dict[str, tuple[int, int]] = field(default_factory=dict)
    """path -> (commits that touched it, the newest such commit's id)"""
    newest_commit: int = 0
    """The newest commit's id (0 without a history): ids grow with each newer commit."""
    access: dict[str, float] = field(default_factory=dict)
    """path -> stored frecency rank (`index.access`)"""
    hashes: list[str] = field(default_factory=list)
    """Each file's content hash, in the order of `files`: what directory keys are made from
    (`index.directory_summaries`); not kept with the files."""


class OverviewReads:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def version(self) -> tuple[object, int]:
        """Changes whenever another connection (this process's writer included) commits, or the
        connections are replaced (a repaired index): what was read under an equal version is
        still what the index holds. (SQLite's data version counts per connection.)"""
        reader = self._db.reader
        ((version,),) = await reader.execute_fetchall("PRAGMA data_version")
        return reader, int(version)

    async def facts(self, *, summary_chars: int) -> WorkspaceFacts:
        """Everything at once; each summary cut to `summary_chars` characters, and the words
        many files share (kinds, languages, tags) held once: a caller may keep these for a
        whole workspace. The files are read in chunks, so their rows are never all held too."""
        reader = self._db.reader
        intern = sys.intern
        files: list[FileFacts] = []
        hashes: list[str] = []
        async with reader.execute(
            "SELECT path, kind, language, substr(summary, 1, ?), tags, skip_reason, hash FROM files "
            "ORDER BY path",
            (summary_chars,),
        ) as cursor:
            while rows := await cursor.fetchmany(CHUNK):
                hashes += [str(row[6]) for row in rows]
                files += [
                    FileFacts(
                        str(path),
                        intern(kind),
                        intern(language) if language else None,
                        summary or (SKIPPED_SUMMARIES.get(skip, "") if skip else ""),
                        tuple(intern(tag) for tag in _decode_list(tags)) if tags != "[]" else (),
                    )
                    for path, kind, language, summary, tags, skip, _ in rows
                ]
        imports = await reader.execute_fetchall(
            "SELECT f.path, k.key FROM import_keys AS k JOIN files AS f ON f.id = k.file_id"
        )
        changes = await reader.execute_fetchall(
            "SELECT p.path, count(*), max(cf.commit_id) FROM commit_files AS cf "
            "JOIN history_paths AS p ON p.id = cf.path_id GROUP BY p.id"
        )
        ((newest,),) = await reader.execute_fetchall("SELECT COALESCE(max(id), 0) FROM commits")
        access = await reader.execute_fetchall("SELECT path, rank FROM access")
        return WorkspaceFacts(
            files=files,
            imports=[(str(path), str(key)) for path, key in imports],
            changes={str(path): (int(count), int(last)) for path, count, last in changes},
            newest_commit=int(newest),
            access={str(path): float(rank) for path, rank in access},
            hashes=hashes,
        )
