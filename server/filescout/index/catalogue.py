"""The file catalogue: one row per file in `files` — path, size, mtime, content hash, language,
kind, why it is skipped, and which annotator's summary and tags it shows (copied onto the row, so
listings read one table).

A file's status is derived, never stored: it follows from its skip reason and whose annotation
it shows, compared with the annotator the caller names as current.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import aiosqlite
import msgspec

from filescout.core.records import Annotation, FileEntry, FileRecord, KnownFile
from filescout.index.access import AccessLog
from filescout.index.database import Database, json_list
from filescout.index.graph import ImportGraph
from filescout.index.search import ContentIndex, DescriptionIndex

_decode_list = msgspec.json.Decoder(list[str]).decode
_encode = msgspec.json.encode

STATUS_SQL = """
    CASE
        WHEN f.skip_reason IS NOT NULL THEN 'skipped'
        WHEN f.annotator IS NULL THEN 'pending'
        WHEN f.annotator = :current THEN 'annotated'
        ELSE 'stale'
    END
"""
COUNTS_SQL = "SELECT annotator, skip_reason, kind, count(*) FROM files GROUP BY annotator, skip_reason, kind"
"""Read from files_by_annotator alone, in its order: no table row, no sort (each group's status
is STATUS_SQL's, told by `_status`)."""
ENTRY_COLUMNS = f"""
    f.path, f.summary, f.tags, f.language, f.kind,
    f.size, f.mtime_ns, {STATUS_SQL}, f.annotator, f.skip_reason
"""
ENTRY_SQL = f"SELECT {ENTRY_COLUMNS} FROM files AS f"
# A changed file shows an annotation of its new content if there is one: the current
# annotator's first, otherwise the newest.
BEST_ANNOTATOR_SQL = """
    (SELECT annotator FROM annotations
     WHERE hash = :hash
     ORDER BY annotator = :current DESC, created_at DESC LIMIT 1)
"""
ORDERS = {
    "path": ("", "f.path"),
    "recent": ("", "f.mtime_ns DESC, f.path"),
    "frecency": ("LEFT JOIN access AS ac ON ac.path = f.path", "ac.rank IS NULL, ac.rank DESC, f.path"),
    "rank": ("JOIN json_each(:ranked) AS r ON r.value = f.path", "r.key"),
}
OFFSET_ORDERS = frozenset({"frecency", "rank"})


def entry_of(row: Sequence[Any]) -> FileEntry:
    return FileEntry(
        path=row[0],
        summary=row[1],
        tags=_decode_list(row[2]),
        language=row[3],
        kind=row[4],
        size=row[5],
        mtime_ns=row[6],
        status=row[7],
        annotator=row[8],
        skip_reason=row[9],
    )


def prefix_range(prefix: str) -> tuple[str, str]:
    """Bounds of every path strictly below directory `prefix`: '/' sorts just before '0'."""
    return prefix + "/", prefix + "0"


# Up to this many prefixes, one OR of ranges: SQLite then walks the path index in order, the
# fastest plan for a listing. Each alternative deepens the expression tree, which SQLite caps at
# 1,000, so longer lists become a table of prefixes joined with the range condition (each prefix
# one index search; the matches are sorted per page).
PREFIX_CHAIN_LIMIT = 100
PREFIX_TABLE_SQL = """
    (f.path IN (SELECT value FROM json_each(:prefixes))
     OR f.path IN (SELECT inside.path FROM json_each(:prefixes) AS prefix
                   JOIN files AS inside
                   ON inside.path > prefix.value || '/' AND inside.path < prefix.value || '0'))
"""


def covering_prefixes(prefixes: Iterable[str]) -> list[str]:
    """The prefixes no other one contains (`src` covers `src/app`), sorted: fewer conditions,
    and ranges that never overlap."""
    kept: set[str] = set()
    for prefix in sorted(set(prefixes), key=lambda value: (value.count("/"), value)):
        parts = prefix.split("/")
        if not any("/".join(parts[:depth]) in kept for depth in range(1, len(parts))):
            kept.add(prefix)
    return sorted(kept)


@dataclass(frozen=True)
class FileFilter:
    """Conditions on files that SQLite evaluates (globs are matched afterwards, in Python)."""

    prefixes: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    changed_since_ns: int | None = None
    tags: tuple[str, ...] = ()
    all_tags: bool = False
    ranked: tuple[str, ...] | None = None
    """Only these paths (a text query's matches), best first."""

    def sql(self, current_annotator: str) -> tuple[list[str], dict[str, object]]:
        conditions: list[str] = []
        params: dict[str, object] = {"current": current_annotator}
        prefixes = covering_prefixes(self.prefixes)
        if len(prefixes) > PREFIX_CHAIN_LIMIT:
            params["prefixes"] = json_list(prefixes)
            conditions.append(PREFIX_TABLE_SQL)
        elif prefixes:
            alternatives = []
            for index, prefix in enumerate(prefixes):
                low, high = prefix_range(prefix)
                params[f"exact{index}"], params[f"low{index}"], params[f"high{index}"] = prefix, low, high
                alternatives.append(
                    f"(f.path = :exact{index} OR (f.path > :low{index} AND f.path < :high{index}))"
                )
            conditions.append("(" + " OR ".join(alternatives) + ")")
        for name, values, column in (
            ("kinds", self.kinds, "f.kind"),
            ("languages", self.languages, "f.language"),
            ("statuses", self.statuses, f"({STATUS_SQL})"),
        ):
            if values:
                params[name] = json_list(values)
                conditions.append(f"{column} IN (SELECT value FROM json_each(:{name}))")
        if self.changed_since_ns is not None:
            params["since"] = self.changed_since_ns
            conditions.append("f.mtime_ns >= :since")
        if self.tags:
            params["tags"] = json_list(self.tags)
            matched = (
                "(SELECT count(DISTINCT t.value) FROM json_each(f.tags) AS t "
                "WHERE t.value IN (SELECT value FROM json_each(:tags)))"
            )
            if self.all_tags:
                params["tag_count"] = len(set(self.tags))
                conditions.append(f"{matched} = :tag_count")
            else:
                conditions.append(f"{matched} > 0")
        if self.ranked is not None:
            params["ranked"] = json_list(self.ranked)
            conditions.append("f.path IN (SELECT value FROM json_each(:ranked))")
        return conditions, params


def _status(annotator: str | None, skip_reason: str | None, current: str) -> str:
    """STATUS_SQL's answer, in Python."""
    if skip_reason is not None:
        return "skipped"
    if annotator is None:
        return "pending"
    return "annotated" if annotator == current else "stale"


class Catalogue:
    """The `files` table: what scans store, what listings read."""

    def __init__(
        self, db: Database, contents: ContentIndex | None = None, descriptions: DescriptionIndex | None = None
    ) -> None:
        self._db = db
        self._contents = contents if contents is not None else ContentIndex(db)
        """Told of the contents a batch adds, for the top-k store."""
        self._descriptions = descriptions if descriptions is not None else DescriptionIndex(db)
        """Told of the descriptions a batch rewrites, for their top-k store."""
        self._counted: tuple[tuple[str, int], tuple[dict[str, int], dict[str, int]]] | None = None

    # -- what scans store ------------------------------------------------------------------

    async def known(self) -> dict[str, KnownFile]:
        rows = await self._db.reader.execute_fetchall("SELECT path, size, mtime_ns FROM files")
        return {row[0]: row for row in rows}  # type: ignore[misc]  # rows are (str, int, int)

    async def known_among(self, paths: Sequence[str]) -> dict[str, KnownFile]:
        rows = await self._db.reader.execute_fetchall(
            "SELECT path, size, mtime_ns FROM files WHERE path IN (SELECT value FROM json_each(?))",
            (json_list(paths),),
        )
        return {row[0]: row for row in rows}  # type: ignore[misc]  # rows are (str, int, int)

    async def apply_changes(
        self,
        changed: Sequence[FileRecord],
        removed: Sequence[str],
        *,
        current: str,
        bodies: Sequence[tuple[str, str, bytes]] = (),
    ) -> int:
        """Store one batch of scan findings in one transaction, with the content words the
        scan found (`ContentIndex.store_packed`): a file is searchable by content as soon as it
        is stored. Removed paths whose content reappears under another path (a rename or move)
        hand their access history over. Returns how many removals were renames."""
        if not (changed or removed or bodies):  # a scan's last batch often brings nothing
            return 0
        renamed = 0
        async with (
            self._contents.changes() as stored,
            self._descriptions.changes(),
            self._db.transaction() as db,
        ):
            stored.added += await ContentIndex.store_packed(db, bodies)
            if changed:
                await db.executemany(
                    f"""
                    INSERT INTO files(path, size, mtime_ns, hash, language, kind, skip_reason,
                                      annotator)
                    VALUES (:path, :size, :mtime_ns, :hash, :language, :kind, :skip_reason,
                            {BEST_ANNOTATOR_SQL})
                    ON CONFLICT(path) DO UPDATE SET
                        size = excluded.size, mtime_ns = excluded.mtime_ns,
                        hash = excluded.hash, language = excluded.language,
                        kind = excluded.kind, skip_reason = excluded.skip_reason,
                        annotator = excluded.annotator
                    """,
                    [
                        {
                            "path": item.path,
                            "size": item.size,
                            "mtime_ns": item.mtime_ns,
                            "hash": item.hash,
                            "language": item.language,
                            "kind": item.kind,
                            "skip_reason": item.skip_reason,
                            "current": current,
                        }
                        for item in changed
                    ],
                )
                await self.show_annotations(db, [item.path for item in changed])
            if removed:
                gone = json_list(removed)
                moves = await db.execute_fetchall(
                    """
                    SELECT old.path, min(new.path) FROM files AS old
                    JOIN files AS new ON new.hash = old.hash
                         AND new.path NOT IN (SELECT value FROM json_each(:gone))
                    WHERE old.path IN (SELECT value FROM json_each(:gone))
                    GROUP BY old.path
                    """,
                    {"gone": gone},
                )
                moved = [(str(old), str(new)) for old, new in moves]
                await AccessLog.hand_over(db, moved)
                renamed = len(moved)
                await DescriptionIndex.forget(db, gone)
                await ImportGraph.forget(db, gone)
                await db.execute("DELETE FROM files WHERE path IN (SELECT value FROM json_each(?))", (gone,))
        return renamed

    @staticmethod
    async def show(
        db: aiosqlite.Connection,
        annotator: str,
        annotations: Sequence[tuple[str, Annotation]],
        *,
        replace: bool,
    ) -> None:
        """Inside a transaction: files with these contents now show `annotator`'s annotation
        (with `replace=False`, only files that show none yet). Everything their rows, full-text
        rows and import keys need is in `annotations`: the rows are written from it in one
        statement each, nothing read back through a join."""
        condition = "" if replace else "AND files.annotator IS NULL"
        by_hash = dict(annotations)
        rows = await db.execute_fetchall(
            f"""
            UPDATE files SET annotator = :annotator, summary = shown.summary, tags = shown.tags
            FROM (SELECT value ->> 0 AS hash, value ->> 1 AS summary, value ->> 2 AS tags
                  FROM json_each(:shown)) AS shown
            WHERE files.hash = shown.hash {condition}
            RETURNING files.id, files.path, files.hash, files.language
            """,
            {
                "annotator": annotator,
                "shown": json_list(
                    (digest, item.summary, _encode(item.tags).decode()) for digest, item in by_hash.items()
                ),
            },
        )
        shown = sorted(
            (int(file_id), str(path), by_hash[digest], language) for file_id, path, digest, language in rows
        )
        await DescriptionIndex.rewrite(
            db,
            [
                (file_id, path, item.summary, item.words, item.symbols, item.tags)
                for file_id, path, item, _ in shown
            ],
        )
        await ImportGraph.rewrite(
            db,
            [file_id for file_id, _, _, _ in shown],
            [(file_id, path, language, item.imports) for file_id, path, item, language in shown],
        )

    @staticmethod
    async def show_annotations(db: aiosqlite.Connection, paths: Iterable[str]) -> None:
        """Inside a transaction, after `paths` changed or show another annotation: copy its
        summary and tags onto their rows and rebuild their full-text rows and import keys."""
        paths = list(paths)
        await db.execute(
            """
            UPDATE files SET summary = COALESCE(a.summary, ''), tags = COALESCE(a.tags, '[]')
            FROM files AS f LEFT JOIN annotations AS a ON a.hash = f.hash AND a.annotator = f.annotator
            WHERE files.id = f.id AND f.path IN (SELECT value FROM json_each(?))
            """,
            (json_list(paths),),
        )
        await DescriptionIndex.refresh(db, paths)
        await ImportGraph.refresh(db, paths)

    # -- what listings read ----------------------------------------------------------------

    async def existing(self, paths: Iterable[str]) -> list[str]:
        """Which of `paths` are in the index, in the order given."""
        wanted = list(dict.fromkeys(paths))
        rows = await self._db.reader.execute_fetchall(
            "SELECT path FROM files WHERE path IN (SELECT value FROM json_each(?))", (json_list(wanted),)
        )
        present = {row[0] for row in rows}
        return [path for path in wanted if path in present]

    async def in_directory(self, directory: str, *, limit: int) -> list[str]:
        """Files directly in `directory` ("" for the root)."""
        if directory:
            low, high = prefix_range(directory)
            rows = await self._db.reader.execute_fetchall(
                "SELECT path FROM files WHERE path > ? AND path < ? AND instr(substr(path, ?), '/') = 0 "
                "ORDER BY path LIMIT ?",
                (low, high, len(low) + 1, limit),
            )
        else:
            rows = await self._db.reader.execute_fetchall(
                "SELECT path FROM files WHERE instr(path, '/') = 0 ORDER BY path LIMIT ?", (limit,)
            )
        return [str(row[0]) for row in rows]

    async def count(self) -> int:
        ((total,),) = await self._db.reader.execute_fetchall("SELECT count(*) FROM files")
        return int(total)

    async def counts(self, *, current: str) -> tuple[dict[str, int], dict[str, int]]:
        """Files by status and by kind, counted in an index's order (14 ms at 100K files); the
        writer's counts are kept until its next commit: a status polled on an idle index, or
        sent in the middle of a burst of requests, costs nothing."""
        key = (current, self._db.generation)
        if self._db.writable and self._counted is not None and self._counted[0] == key:
            counted_status, counted_kind = self._counted[1]
            return dict(counted_status), dict(counted_kind)
        rows = await self._db.reader.execute_fetchall(COUNTS_SQL)
        by_status: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        for annotator, skip_reason, kind, count in rows:
            status = _status(annotator, skip_reason, current)
            by_status[status] = by_status.get(status, 0) + int(count)
            by_kind[str(kind)] = by_kind.get(str(kind), 0) + int(count)
        if self._db.writable:  # another process's commits would not show in the generation
            self._counted = (key, (dict(by_status), dict(by_kind)))
        return by_status, by_kind

    async def entries(self, paths: Sequence[str], *, current: str) -> dict[str, FileEntry]:
        rows = await self._db.reader.execute_fetchall(
            f"{ENTRY_SQL} WHERE f.path IN (SELECT value FROM json_each(:paths))",
            {"paths": json_list(paths), "current": current},
        )
        return {row[0]: entry_of(row) for row in rows}

    async def entries_with_symbols(
        self, paths: Sequence[str], *, current: str
    ) -> dict[str, tuple[FileEntry, list[str]]]:
        """Each file's entry and the symbols its annotation defines, for scoring candidates (on
        the questions' connection, with their searches)."""
        rows = await self._db.questions.fetchall(
            f"""
            SELECT {ENTRY_COLUMNS}, COALESCE(a.symbols, '[]')
            FROM files AS f LEFT JOIN annotations AS a ON a.hash = f.hash AND a.annotator = f.annotator
            WHERE f.path IN (SELECT value FROM json_each(:paths))
            """,
            {"paths": json_list(paths), "current": current},
        )
        return {row[0]: (entry_of(row), _decode_list(row[10])) for row in rows}

    async def tag_vocabulary(self, limit: int = 300) -> list[tuple[str, int]]:
        """The tags files show, most common first, with how many files carry each."""
        rows = await self._db.reader.execute_fetchall(
            """
            SELECT t.value, count(*) AS uses FROM files AS f, json_each(f.tags) AS t
            GROUP BY t.value ORDER BY uses DESC, t.value LIMIT ?
            """,
            (limit,),
        )
        return [(str(tag), int(count)) for tag, count in rows]

    async def with_tags(self, tags: Sequence[str], *, limit: int, current: str) -> list[FileEntry]:
        """Files carrying the most of `tags`, most first."""
        if not tags:
            return []
        rows = await self._db.reader.execute_fetchall(
            f"""
            SELECT {ENTRY_COLUMNS}, (SELECT count(*) FROM json_each(f.tags)
                                    WHERE value IN (SELECT value FROM json_each(:tags))) AS hits
            FROM files AS f WHERE hits > 0 AND f.skip_reason IS NULL
            ORDER BY hits DESC, f.path LIMIT :limit
            """,
            {"tags": json_list(tags), "limit": limit, "current": current},
        )
        return [entry_of(row) for row in rows]

    async def listing(
        self,
        where: FileFilter,
        *,
        current: str,
        order: str = "path",
        position: tuple[Any, ...] | None = None,
        first_page: int = 2000,
        page_size: int = 2000,
    ) -> AsyncIterator[list[tuple[FileEntry, tuple[Any, ...]]]]:
        """Matching files in `order`, in pages, each with its position (a cursor to resume
        after it). Path and recency orders page by keyset, so memory stays flat however large
        the workspace; frecency and rank orders page by offset."""
        if order == "rank" and where.ranked is None:
            raise ValueError("rank order needs ranked paths")
        base, params = where.sql(current)
        joins, ordering = ORDERS[order]
        by_offset = order in OFFSET_ORDERS
        limit = first_page
        while True:
            conditions = list(base)
            if order == "path" and position:
                conditions.append("f.path > :after")
                params["after"] = position[0]
            elif order == "recent" and position:
                conditions.append("(f.mtime_ns < :mtime OR (f.mtime_ns = :mtime AND f.path > :after))")
                params["mtime"], params["after"] = position
            offset = int(position[0]) if by_offset and position else 0
            params["limit"], params["offset"] = limit, offset
            where_sql = f"WHERE {' AND '.join(conditions)}" if conditions else ""
            statement = (
                f"SELECT {ENTRY_COLUMNS} FROM files AS f {joins} {where_sql} "
                f"ORDER BY {ordering} LIMIT :limit" + (" OFFSET :offset" if by_offset else "")
            )
            rows = list(await self._db.reader.execute_fetchall(statement, params))
            if not rows:
                return
            page = [
                (entry_of(row), _position(order, row, offset + index + 1)) for index, row in enumerate(rows)
            ]
            yield page
            if len(rows) < limit:
                return
            position = page[-1][1]
            limit = page_size


def _position(order: str, row: Sequence[Any], offset: int) -> tuple[Any, ...]:
    if order in OFFSET_ORDERS:
        return (offset,)
    return (row[6], row[0]) if order == "recent" else (row[0],)
