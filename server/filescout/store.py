"""The SQLite index: one row per file, annotations keyed by content, full-text search.

An aiosqlite writer that owns every transaction, and two query-only readers, so requests read a
consistent WAL snapshot while indexing writes and a question's two full-text searches run side by
side. Annotations are keyed by
(content hash, annotator id): a renamed, copied or reverted file finds its annotation already
there.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
import zlib
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiosqlite
import msgspec

from filescout.scan import FileRecord, KnownFile
from filescout.text import join_words, path_words
from filescout_protocol.types import FileItem

log = logging.getLogger(__name__)

APPLICATION_ID = 0x46534354  # "FSCT": marks a SQLite file as a filescout index
SCHEMA_VERSION = 5
BUSY_TIMEOUT_MS = 5000
# Page caches. The default 2 MB makes every question reread the full-text indexes; the writer
# mostly appends, so it gets less. The three together bound the index's share of memory.
READER_CACHE_KIB = 16_000
WRITER_CACHE_KIB = 8_000

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        hash TEXT NOT NULL,
        language TEXT,
        kind TEXT NOT NULL,
        sensitive INTEGER NOT NULL DEFAULT 0,
        annotator TEXT
    );
    CREATE INDEX files_by_hash ON files(hash);
    CREATE TABLE annotations (
        hash TEXT NOT NULL,
        annotator TEXT NOT NULL,
        summary TEXT NOT NULL,
        tags TEXT NOT NULL,
        symbols TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (hash, annotator)
    ) WITHOUT ROWID;
    CREATE VIRTUAL TABLE files_fts USING fts5(
        path, symbols, summary, tags,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    """,
    2: """
    ALTER TABLE files ADD COLUMN skip_reason TEXT;
    UPDATE files SET skip_reason = CASE
        WHEN sensitive THEN 'sensitive'
        WHEN kind IN ('binary', 'generated') THEN kind
    END;
    ALTER TABLE files DROP COLUMN sensitive;
    CREATE TABLE access (
        path TEXT PRIMARY KEY,
        count INTEGER NOT NULL,
        last_access REAL NOT NULL,
        rank REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX access_by_rank ON access(rank);
    """,
    3: """
    ALTER TABLE annotations ADD COLUMN imports TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE annotations ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE annotations ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE usage (
        day TEXT NOT NULL,
        annotator TEXT NOT NULL,
        calls INTEGER NOT NULL DEFAULT 0,
        failures INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (day, annotator)
    ) WITHOUT ROWID;
    """,
    4: """
    CREATE INDEX files_unannotated ON files(path) WHERE annotator IS NULL AND skip_reason IS NULL;
    CREATE INDEX files_by_annotator ON files(annotator);
    """,
    5: """
    ALTER TABLE files ADD COLUMN summary TEXT NOT NULL DEFAULT '';
    ALTER TABLE files ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
    UPDATE files SET summary = a.summary, tags = a.tags FROM annotations AS a
        WHERE a.hash = files.hash AND a.annotator = files.annotator;
    CREATE TABLE contents (
        id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        words BLOB NOT NULL
    );
    CREATE VIRTUAL TABLE body_fts USING fts5(
        body,
        content = '',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE VIRTUAL TABLE body_terms USING fts5vocab(body_fts, 'row');
    """,
}

# Annotators computed on this machine from the file itself; a new version of one replaces the
# old one's annotations (content-addressed like the rest, so unchanged content is redone once).
MACHINE_ANNOTATORS = ("structural/", "heuristic/")

# Frecency: every access adds 1 (times its weight) to a score that halves every HALF_LIFE. The
# stored `rank` is that score in log space shifted to a fixed epoch, so ordering by rank is
# ordering by the current decayed score, without rewriting rows as time passes.
HALF_LIFE_SECONDS = 3 * 24 * 3600
DECAY = math.log(2) / HALF_LIFE_SECONDS
KIND_ORDER_SQL = """CASE f.kind WHEN 'source' THEN 0 WHEN 'test' THEN 1 WHEN 'config' THEN 2
    WHEN 'docs' THEN 3 WHEN 'other' THEN 4 ELSE 5 END"""

# Status is derived, never stored: it follows from the file's kind and whose annotation it shows.
STATUS_SQL = """
    CASE
        WHEN f.skip_reason IS NOT NULL THEN 'skipped'
        WHEN f.annotator IS NULL THEN 'pending'
        WHEN f.annotator = :current THEN 'annotated'
        ELSE 'stale'
    END
"""
FILE_ITEM_COLUMNS = f"""
    f.path, f.summary, f.tags, f.language, f.kind,
    f.size, f.mtime_ns, {STATUS_SQL}, f.annotator, f.skip_reason
"""
FILE_ITEM_FROM = "FROM files AS f"
"""A file shows its summary and tags from its row: copied there whenever the annotation it
shows changes, so listings read one table."""
FILE_ITEM_SQL = f"SELECT {FILE_ITEM_COLUMNS} {FILE_ITEM_FROM}"
# An annotation of the current annotator beats any other; otherwise the newest wins.
BEST_ANNOTATOR_SQL = """
    (SELECT annotator FROM annotations
     WHERE hash = :hash
     ORDER BY annotator = :current DESC, created_at DESC LIMIT 1)
"""

_decode_tags = msgspec.json.Decoder(list[str]).decode
_encode = msgspec.json.encode


@dataclass(frozen=True, slots=True)
class Annotation:
    """What an annotator says about one content hash."""

    summary: str
    tags: list[str]
    symbols: list[str]
    imports: list[str] = field(default_factory=list)
    input_tokens: int = 0
    """What writing it cost in model tokens (0 for structural annotations)."""
    output_tokens: int = 0
    body: str | None = None
    """The content's words for full-text search (structural annotations only; stored in the
    search index, not with the annotation)."""


@dataclass(frozen=True, slots=True)
class PendingFile:
    path: str
    hash: str
    language: str | None
    kind: str
    size: int
    shown: str | None = None
    """The annotator whose annotation the file shows now, if any."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    path: str
    rank: float
    kind: str = "other"
    access_rank: float | None = None
    """The file's frecency rank, if it was ever used (see `record_access`)."""


class IndexUnusable(Exception):
    """The file exists but is not a filescout index this version can use."""


SKIPPED_SUMMARIES = {
    "sensitive": "Sensitive file (secrets or credentials); content not read.",
    "binary": "Binary file; content not read.",
    "generated": "Generated or minified file; content not annotated.",
    "oversized": "Large file; too big to annotate.",
}


def _file_item(row: Sequence) -> FileItem:
    summary = row[1] or (SKIPPED_SUMMARIES.get(row[9], "") if row[9] else "")
    return FileItem(
        path=row[0],
        summary=summary,
        tags=_decode_tags(row[2]),
        language=row[3],
        kind=row[4],
        size=row[5],
        mtime=row[6] // 1_000_000,
        status=row[7],
        annotator=row[8],
    )


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
        alternatives = []
        for index, prefix in enumerate(self.prefixes):
            low, high = prefix_range(prefix)
            params[f"exact{index}"], params[f"low{index}"], params[f"high{index}"] = prefix, low, high
            alternatives.append(
                f"(f.path = :exact{index} OR (f.path > :low{index} AND f.path < :high{index}))")
        if alternatives:
            conditions.append("(" + " OR ".join(alternatives) + ")")
        for name, values, column in (("kinds", self.kinds, "f.kind"),
                                     ("languages", self.languages, "f.language"),
                                     ("statuses", self.statuses, f"({STATUS_SQL})")):
            if values:
                params[name] = _encode(list(values)).decode()
                conditions.append(f"{column} IN (SELECT value FROM json_each(:{name}))")
        if self.changed_since_ns is not None:
            params["since"] = self.changed_since_ns
            conditions.append("f.mtime_ns >= :since")
        if self.tags:
            params["tags"] = _encode(list(self.tags)).decode()
            matched = ("(SELECT count(DISTINCT t.value) FROM json_each(f.tags) AS t "
                       "WHERE t.value IN (SELECT value FROM json_each(:tags)))")
            if self.all_tags:
                params["tag_count"] = len(set(self.tags))
                conditions.append(f"{matched} = :tag_count")
            else:
                conditions.append(f"{matched} > 0")
        if self.ranked is not None:
            params["ranked"] = _encode(list(self.ranked)).decode()
            conditions.append("f.path IN (SELECT value FROM json_each(:ranked))")
        return conditions, params


def prefix_range(prefix: str) -> tuple[str, str]:
    """Bounds of every path strictly below directory `prefix`: '/' sorts just before '0'."""
    return prefix + "/", prefix + "0"


class Store:
    def __init__(self, path: Path, writer: aiosqlite.Connection | None,
                 reader: aiosqlite.Connection, content_reader: aiosqlite.Connection):
        self.path = path
        self._writer = writer
        self._reader = reader
        self._content_reader = content_reader
        """A second reader, so the two full-text searches of a question run side by side."""
        self._write_lock = asyncio.Lock()
        self.current_annotator = ""

    @property
    def _connections(self) -> tuple[aiosqlite.Connection | None, ...]:
        return (self._content_reader, self._reader, self._writer)

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: Path) -> Store:
        """Open (creating if needed) the index at `path` for writing. Raises IndexUnusable for
        a file that is not a filescout index of a version this code understands."""
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        writer = await aiosqlite.connect(path, isolation_level=None)
        readers: list[aiosqlite.Connection] = []
        try:
            await _configure(writer, WRITER_CACHE_KIB)
            await _migrate(writer)
            readers.append(await _open_reader(path))
            readers.append(await _open_reader(path))
        except BaseException:
            for connection in (writer, *readers):
                await connection.close()
            raise
        return cls(path, writer, *readers)

    @classmethod
    async def open_readonly(cls, path: Path) -> Store:
        """Open an index another process writes. Raises IndexUnusable until that process has
        created it at this version."""
        if not path.exists():
            raise IndexUnusable("the index does not exist yet")
        readers = [await _open_reader(path)]
        try:
            version = await _schema_version(readers[0])
            if version != SCHEMA_VERSION:
                raise IndexUnusable(f"index schema {version}, this filescout reads {SCHEMA_VERSION}")
            readers.append(await _open_reader(path))
        except BaseException:
            for connection in readers:
                await connection.close()
            raise
        return cls(path, None, *readers)

    @property
    def writable(self) -> bool:
        return self._writer is not None

    async def close(self) -> None:
        async with self._write_lock:
            for connection in self._connections:
                if connection is None:
                    continue
                try:
                    await connection.close()
                except Exception:  # closing twice, or a dead thread: nothing left to save
                    log.debug("closing %s", self.path, exc_info=True)

    def stop_threads(self) -> None:
        """Last-resort shutdown when no event loop is left: aiosqlite's worker threads are not
        daemons and would keep the process alive."""
        for connection in self._connections:
            if connection is not None and connection._running:  # noqa: SLF001 - aiosqlite has no public check
                connection.stop()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction; COMMIT or ROLLBACK runs even if the caller is cancelled."""
        writer = self._writer
        if writer is None:
            raise RuntimeError("this process serves reads only; another one writes the index")
        async with self._write_lock:
            await writer.execute("BEGIN IMMEDIATE")
            try:
                yield writer
            except BaseException:
                await asyncio.shield(writer.execute("ROLLBACK"))
                raise
            await asyncio.shield(writer.execute("COMMIT"))

    # -- meta ------------------------------------------------------------------------------

    async def get_meta(self, key: str) -> str | None:
        rows = await self._reader.execute_fetchall("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    async def set_meta(self, key: str, value: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- scanning --------------------------------------------------------------------------

    async def known_files(self) -> dict[str, KnownFile]:
        rows = await self._reader.execute_fetchall("SELECT path, size, mtime_ns FROM files")
        return {row[0]: row for row in rows}

    async def known_files_for(self, paths: Sequence[str]) -> dict[str, KnownFile]:
        rows = await self._reader.execute_fetchall(
            "SELECT path, size, mtime_ns FROM files WHERE path IN (SELECT value FROM json_each(?))",
            (_encode(list(paths)).decode(),))
        return {row[0]: row for row in rows}

    async def apply_changes(self, changed: Sequence[FileRecord], removed: Sequence[str]) -> int:
        """Store one batch of scan findings in one transaction. Removed paths whose content
        reappears under another path (a rename or move) hand their access history over.
        Returns how many removals were renames."""
        renamed = 0
        async with self.transaction() as db:
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
                        {"path": item.path, "size": item.size, "mtime_ns": item.mtime_ns,
                         "hash": item.hash, "language": item.language, "kind": item.kind,
                         "skip_reason": item.skip_reason, "current": self.current_annotator}
                        for item in changed
                    ],
                )
                await self._refresh_fts(db, [item.path for item in changed])
            if removed:
                gone = _encode(list(removed)).decode()
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
                await db.executemany(
                    "UPDATE OR IGNORE access SET path = ? WHERE path = ? "
                    "AND NOT EXISTS (SELECT 1 FROM access WHERE path = ?)",
                    [(new, old, new) for old, new in moves])
                renamed = len(moves)
                await db.execute(
                    "DELETE FROM files_fts WHERE rowid IN (SELECT id FROM files WHERE path IN "
                    "(SELECT value FROM json_each(?)))", (gone,))
                await db.execute(
                    "DELETE FROM files WHERE path IN (SELECT value FROM json_each(?))", (gone,))
        return renamed

    async def _refresh_fts(self, db: aiosqlite.Connection, paths: Iterable[str]) -> None:
        """After `paths` changed or show another annotation: copy its summary and tags onto
        the file rows and rebuild their full-text rows."""
        selected = (_encode(list(paths)).decode(),)
        await db.execute(
            """
            UPDATE files SET summary = COALESCE(a.summary, ''), tags = COALESCE(a.tags, '[]')
            FROM files AS f LEFT JOIN annotations AS a ON a.hash = f.hash AND a.annotator = f.annotator
            WHERE files.id = f.id AND f.path IN (SELECT value FROM json_each(?))
            """, selected)
        rows = await db.execute_fetchall(
            """
            SELECT f.id, f.path, COALESCE(a.symbols, '[]'), f.summary, f.tags
            FROM files AS f
            LEFT JOIN annotations AS a ON a.hash = f.hash AND a.annotator = f.annotator
            WHERE f.path IN (SELECT value FROM json_each(?))
            """, selected)
        await db.executemany("DELETE FROM files_fts WHERE rowid = ?", [(row[0],) for row in rows])
        await db.executemany(
            "INSERT INTO files_fts(rowid, path, symbols, summary, tags) VALUES (?, ?, ?, ?, ?)",
            [
                (file_id, path_words(path), join_words(_decode_tags(symbols)), summary,
                 join_words(_decode_tags(tags)))
                for file_id, path, symbols, summary, tags in rows
            ],
        )

    # -- annotation ------------------------------------------------------------------------

    async def pending(self, annotator: str, paths: Sequence[str]) -> list[PendingFile]:
        """Those of `paths` whose content has no annotation by `annotator` yet, each content
        once."""
        rows = await self._reader.execute_fetchall(
            """
            SELECT f.path, f.hash, f.language, f.kind, f.size, f.annotator FROM files AS f
            WHERE f.path IN (SELECT value FROM json_each(:paths)) AND f.skip_reason IS NULL
              AND NOT EXISTS (SELECT 1 FROM annotations AS a
                              WHERE a.hash = f.hash AND a.annotator = :annotator)
            GROUP BY f.hash
            """,
            {"annotator": annotator, "paths": _encode(list(paths)).decode()},
        )
        order = {path: index for index, path in enumerate(paths)}
        return sorted((PendingFile(*row) for row in rows), key=lambda item: order[item.path])

    async def annotation_order(self, annotator: str, *, machine: bool) -> list[str]:
        """Files waiting for `annotator`, in the default order: frequently and recently used
        first, then source before tests, docs and data, then small before large. For the
        machine (structural) annotator: files that show no annotation, or an older machine
        annotator's; for a model: files that do not show its annotation. Both conditions are on
        the file row, so a workspace with nothing to do answers from an index at once."""
        if machine:
            shown = ("(f.annotator IS NULL OR (f.annotator != :annotator AND ("
                     + " OR ".join(f"f.annotator LIKE '{prefix}%'" for prefix in MACHINE_ANNOTATORS)
                     + ")))")
        else:
            shown = "(f.annotator IS NULL OR f.annotator != :annotator)"
        rows = await self._reader.execute_fetchall(
            f"""
            SELECT f.path FROM files AS f LEFT JOIN access AS a ON a.path = f.path
            WHERE f.skip_reason IS NULL AND {shown}
            ORDER BY a.rank IS NULL, a.rank DESC, {KIND_ORDER_SQL}, f.size, f.path
            """,
            {"annotator": annotator},
        )
        return [row[0] for row in rows]

    async def annotations(self, annotator: str, hashes: Iterable[str]) -> dict[str, Annotation]:
        """`annotator`'s annotations of these contents."""
        rows = await self._reader.execute_fetchall(
            """
            SELECT hash, summary, tags, symbols, imports, input_tokens, output_tokens
            FROM annotations WHERE annotator = ? AND hash IN (SELECT value FROM json_each(?))
            """,
            (annotator, _encode(list(hashes)).decode()))
        return {digest: Annotation(summary, _decode_tags(tags), _decode_tags(symbols),
                                   _decode_tags(imports), input_tokens, output_tokens)
                for digest, summary, tags, symbols, imports, input_tokens, output_tokens in rows}

    async def waiting_for(self, annotator: str) -> tuple[int, int]:
        """(files, bytes) of annotatable content that `annotator` has not annotated."""
        rows = await self._reader.execute_fetchall(
            """
            SELECT count(*), coalesce(sum(size), 0) FROM (
                SELECT f.hash, max(f.size) AS size FROM files AS f
                WHERE f.skip_reason IS NULL AND NOT EXISTS (
                    SELECT 1 FROM annotations AS a WHERE a.hash = f.hash AND a.annotator = ?)
                GROUP BY f.hash)
            """, (annotator,))
        return int(rows[0][0]), int(rows[0][1])

    async def token_cost(self, annotator: str) -> tuple[int, int, int]:
        """(annotations, input tokens, output tokens) spent by `annotator` so far."""
        rows = await self._reader.execute_fetchall(
            "SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0) "
            "FROM annotations WHERE annotator = ?", (annotator,))
        return int(rows[0][0]), int(rows[0][1]), int(rows[0][2])

    async def record_usage(self, annotator: str, day: str, *, calls: int = 0, failures: int = 0,
                           input_tokens: int = 0, output_tokens: int = 0) -> None:
        async with self.transaction() as db:
            await db.execute(
                """
                INSERT INTO usage(day, annotator, calls, failures, input_tokens, output_tokens)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(day, annotator) DO UPDATE SET
                    calls = calls + excluded.calls, failures = failures + excluded.failures,
                    input_tokens = input_tokens + excluded.input_tokens,
                    output_tokens = output_tokens + excluded.output_tokens
                """,
                (day, annotator, calls, failures, input_tokens, output_tokens))

    async def usage_since(self, first_day: str) -> list[tuple[str, int, int, int, int]]:
        """(day, calls, failures, input tokens, output tokens) per day from `first_day`, all
        annotators together: a budget covers every model call."""
        rows = await self._reader.execute_fetchall(
            "SELECT day, sum(calls), sum(failures), sum(input_tokens), sum(output_tokens) "
            "FROM usage WHERE day >= ? GROUP BY day ORDER BY day", (first_day,))
        return [tuple(int(v) if i else v for i, v in enumerate(row)) for row in rows]  # type: ignore[misc]

    async def record_access(self, paths: Sequence[str], *, weight: float = 1.0,
                            now: float | None = None) -> None:
        """Count an access to each of `paths` (frecency survives restarts)."""
        if not paths:
            return
        now = time.time() if now is None else now
        async with self.transaction() as db:
            rows = await db.execute_fetchall(
                "SELECT path, rank FROM access WHERE path IN (SELECT value FROM json_each(?))",
                (_encode(list(paths)).decode(),))
            previous = dict(rows)
            updates = []
            for path in dict.fromkeys(paths):
                score = weight
                if path in previous:
                    score += math.exp(previous[path] - now * DECAY)
                updates.append((path, now, math.log(score) + now * DECAY))
            await db.executemany(
                """
                INSERT INTO access(path, count, last_access, rank) VALUES (?, 1, ?, ?)
                ON CONFLICT(path) DO UPDATE SET count = count + 1,
                    last_access = excluded.last_access, rank = excluded.rank
                """,
                updates,
            )

    async def existing(self, paths: Iterable[str]) -> list[str]:
        """Which of `paths` are in the index, in the order given."""
        wanted = list(dict.fromkeys(paths))
        rows = await self._reader.execute_fetchall(
            "SELECT path FROM files WHERE path IN (SELECT value FROM json_each(?))",
            (_encode(wanted).decode(),))
        present = {row[0] for row in rows}
        return [path for path in wanted if path in present]

    async def directory_files(self, directory: str, *, limit: int) -> list[str]:
        """Files directly in `directory` ("" for the root)."""
        if directory:
            low, high = prefix_range(directory)
            rows = await self._reader.execute_fetchall(
                "SELECT path FROM files WHERE path > ? AND path < ? AND instr(substr(path, ?), '/') = 0 "
                "ORDER BY path LIMIT ?", (low, high, len(low) + 1, limit))
        else:
            rows = await self._reader.execute_fetchall(
                "SELECT path FROM files WHERE instr(path, '/') = 0 ORDER BY path LIMIT ?", (limit,))
        return [row[0] for row in rows]

    async def save_annotations(self, annotator: str, annotations: Sequence[tuple[str, Annotation]],
                               *, replace: bool = True) -> None:
        """Store annotations by content hash and show them on every file with that content.
        `replace=False` only fills files that show nothing yet (a fallback annotator)."""
        if not annotations:
            return
        now = int(time.time())
        async with self.transaction() as db:
            await db.executemany(
                """
                INSERT INTO annotations(hash, annotator, summary, tags, symbols, imports,
                                        input_tokens, output_tokens, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(hash, annotator) DO UPDATE SET
                    summary = excluded.summary, tags = excluded.tags,
                    symbols = excluded.symbols, imports = excluded.imports,
                    input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
                    created_at = excluded.created_at
                """,
                [
                    (digest, annotator, item.summary, _encode(item.tags).decode(),
                     _encode(item.symbols).decode(), _encode(item.imports).decode(),
                     item.input_tokens, item.output_tokens, now)
                    for digest, item in annotations
                ],
            )
            bodies = [(digest, item.body) for digest, item in annotations if item.body is not None]
            if bodies:
                await self._store_bodies(db, bodies)
            hashes = _encode([digest for digest, _ in annotations]).decode()
            condition = "" if replace else "AND annotator IS NULL"
            rows = await db.execute_fetchall(
                f"""
                UPDATE files SET annotator = ?
                WHERE hash IN (SELECT value FROM json_each(?)) {condition}
                RETURNING path
                """,
                (annotator, hashes),
            )
            await self._refresh_fts(db, [row[0] for row in rows])

    async def _store_bodies(self, db: aiosqlite.Connection, bodies: Sequence[tuple[str, str]]) -> None:
        """Index content words once per content hash (copies and renames share them).

        The content index holds each distinct word once per file and is contentless (a third
        of the size of an FTS5 table that keeps the text, as fast to query); the words go in
        `contents`, compressed, because removing a row from such an index means naming the
        words it was indexed with."""
        rows = await db.execute_fetchall(
            "SELECT hash FROM contents WHERE hash IN (SELECT value FROM json_each(?))",
            (_encode([digest for digest, _ in bodies]).decode(),))
        present = {row[0] for row in rows}
        fresh = {digest: body for digest, body in bodies if digest not in present}
        if not fresh:
            return
        # Two statements for the whole batch; the generator is consumed, and the words
        # compressed, on the connection's thread rather than the event loop's.
        await db.executemany("INSERT INTO contents(hash, words) VALUES (?, ?)",
                             ((digest, zlib.compress(body.encode(), 6)) for digest, body in fresh.items()))
        await db.executemany("INSERT INTO body_fts(rowid, body) SELECT id, ? FROM contents WHERE hash = ?",
                             [(body, digest) for digest, body in fresh.items()])

    async def drop_orphan_contents(self) -> int:
        """Forget the words of contents no file has any more (after deletions and edits)."""
        async with self.transaction() as db:
            rows = await db.execute_fetchall(
                "SELECT id, words FROM contents WHERE hash NOT IN (SELECT hash FROM files)")
            if rows:
                await db.executemany(
                    "INSERT INTO body_fts(body_fts, rowid, body) VALUES ('delete', ?, ?)",
                    [(content_id, zlib.decompress(words).decode()) for content_id, words in rows])
                await db.executemany("DELETE FROM contents WHERE id = ?",
                                     [(content_id,) for content_id, _ in rows])
        return len(rows)

    async def content_frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(indexed contents, how many contain each term): to drop terms too common to tell
        files apart before they cost a scan of most of the index."""
        (count,), = await self._reader.execute_fetchall("SELECT count(*) FROM contents")
        rows = await self._reader.execute_fetchall(
            "SELECT term, doc FROM body_terms WHERE term IN (SELECT value FROM json_each(?))",
            (_encode(list(terms)).decode(),))
        return int(count), {term: int(documents) for term, documents in rows}

    # -- queries ---------------------------------------------------------------------------

    async def file_count(self) -> int:
        rows = await self._reader.execute_fetchall("SELECT count(*) FROM files")
        return int(rows[0][0])

    async def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Files by status and by kind."""
        by_status = await self._reader.execute_fetchall(
            f"SELECT {STATUS_SQL} AS status, count(*) FROM files AS f GROUP BY status",
            {"current": self.current_annotator},
        )
        by_kind = await self._reader.execute_fetchall(
            "SELECT kind, count(*) FROM files GROUP BY kind"
        )
        return dict(by_status), dict(by_kind)

    async def list_files(self, where: FileFilter, *, order: str = "path",
                         position: tuple | None = None, first_page: int = 2000,
                         page_size: int = 2000) -> AsyncIterator[list[tuple[FileItem, tuple]]]:
        """Matching files in `order`, in pages, each item with its position (a cursor to resume
        after it). Path and recency orders page by keyset, so memory stays flat however large
        the workspace; frecency and rank orders page by offset."""
        base, params = where.sql(self.current_annotator)
        params["limit"] = first_page
        joins, ordering = {
            "path": ("", "f.path"),
            "recent": ("", "f.mtime_ns DESC, f.path"),
            "frecency": ("LEFT JOIN access AS ac ON ac.path = f.path", "ac.rank IS NULL, ac.rank DESC, f.path"),
            "rank": ("JOIN json_each(:ranked) AS r ON r.value = f.path", "r.key"),
        }[order]
        if order == "rank" and where.ranked is None:
            raise ValueError("rank order needs ranked paths")
        by_offset = order in ("frecency", "rank")

        def statement(position: tuple | None) -> str:
            conditions = list(base)
            if order == "path" and position:
                conditions.append("f.path > :after")
                params["after"] = position[0]
            elif order == "recent" and position:
                conditions.append("(f.mtime_ns < :mtime OR (f.mtime_ns = :mtime AND f.path > :after))")
                params["mtime"], params["after"] = position
            elif by_offset:
                params["offset"] = position[0] if position else 0
            where_sql = f"WHERE {' AND '.join(conditions)}" if conditions else ""
            return (f"SELECT {FILE_ITEM_COLUMNS} {FILE_ITEM_FROM} {joins} {where_sql} "
                    f"ORDER BY {ordering} LIMIT :limit" + (" OFFSET :offset" if by_offset else ""))

        def key(row: Sequence, index: int) -> tuple:
            if by_offset:
                return (int(params["offset"]) + index + 1,)  # type: ignore[call-overload]
            return (row[6], row[0]) if order == "recent" else (row[0],)

        while True:
            rows = await self._reader.execute_fetchall(statement(position), params)
            if not rows:
                return
            page = [(_file_item(row), key(row, index)) for index, row in enumerate(rows)]
            yield page
            if len(rows) < int(params["limit"]):  # type: ignore[call-overload]
                return
            position = page[-1][1]
            params["limit"] = page_size

    async def files_by_path(self, paths: Sequence[str]) -> dict[str, FileItem]:
        rows = await self._reader.execute_fetchall(
            f"{FILE_ITEM_SQL} WHERE f.path IN (SELECT value FROM json_each(:paths))",
            {"paths": _encode(list(paths)).decode(), "current": self.current_annotator},
        )
        return {row[0]: _file_item(row) for row in rows}

    async def search(self, match: str, *, limit: int,
                     weights: tuple[float, float, float, float]) -> list[SearchHit]:
        """FTS5 BM25 over path words, symbols, summary and tags (SQLite ranks lower-is-better;
        returned as a positive score, higher is better)."""
        rows = await self._reader.execute_fetchall(
            f"""
            SELECT f.path, hit.score, f.kind, ac.rank FROM (
                SELECT rowid, bm25(files_fts, {', '.join(str(w) for w in weights)}) AS score
                FROM files_fts WHERE files_fts MATCH ? ORDER BY score LIMIT ?
            ) AS hit JOIN files AS f ON f.id = hit.rowid
            LEFT JOIN access AS ac ON ac.path = f.path
            """,
            (match, limit),
        )
        return [SearchHit(path, -score, kind, rank) for path, score, kind, rank in rows]

    async def search_bodies(self, match: str, *, limit: int) -> list[SearchHit]:
        """FTS5 BM25 over file contents; every path with a matching content is a hit."""
        rows = await self._content_reader.execute_fetchall(
            """
            SELECT f.path, hit.score, f.kind, ac.rank FROM (
                SELECT rowid, bm25(body_fts) AS score
                FROM body_fts WHERE body_fts MATCH ? ORDER BY score LIMIT ?
            ) AS hit
            JOIN contents AS c ON c.id = hit.rowid
            JOIN files AS f ON f.hash = c.hash
            LEFT JOIN access AS ac ON ac.path = f.path
            """,
            (match, limit),
        )
        return [SearchHit(path, -score, kind, rank) for path, score, kind, rank in rows]

    async def tag_vocabulary(self, limit: int = 300) -> list[tuple[str, int]]:
        """The tags files show, most common first, with how many files carry each."""
        rows = await self._reader.execute_fetchall(
            """
            SELECT t.value, count(*) AS uses FROM files AS f, json_each(f.tags) AS t
            GROUP BY t.value ORDER BY uses DESC, t.value LIMIT ?
            """, (limit,))
        return [(tag, int(count)) for tag, count in rows]

    async def files_with_tags(self, tags: Sequence[str], *, limit: int) -> list[FileItem]:
        """Files carrying the most of `tags`, most first."""
        if not tags:
            return []
        rows = await self._reader.execute_fetchall(
            f"""
            SELECT {FILE_ITEM_COLUMNS}, (SELECT count(*) FROM json_each(f.tags)
                                        WHERE value IN (SELECT value FROM json_each(:tags))) AS hits
            {FILE_ITEM_FROM} WHERE hits > 0 AND f.skip_reason IS NULL
            ORDER BY hits DESC, f.path LIMIT :limit
            """,
            {"tags": _encode(list(tags)).decode(), "limit": limit, "current": self.current_annotator})
        return [_file_item(row) for row in rows]

    async def relevance_facts(self, paths: Sequence[str]) -> dict[str, tuple[FileItem, list[str]]]:
        """Each file's item and defined symbols, for scoring candidates."""
        rows = await self._reader.execute_fetchall(
            f"""
            SELECT {FILE_ITEM_COLUMNS}, COALESCE(a.symbols, '[]')
            {FILE_ITEM_FROM} LEFT JOIN annotations AS a ON a.hash = f.hash AND a.annotator = f.annotator
            WHERE f.path IN (SELECT value FROM json_each(:paths))
            """,
            {"paths": _encode(list(paths)).decode(), "current": self.current_annotator},
        )
        return {row[0]: (_file_item(row), _decode_tags(row[10])) for row in rows}


async def _configure(db: aiosqlite.Connection, cache_kib: int) -> None:
    await db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    await db.execute("PRAGMA journal_mode = WAL")
    await db.execute("PRAGMA synchronous = NORMAL")
    await db.execute("PRAGMA foreign_keys = ON")
    await db.execute("PRAGMA temp_store = MEMORY")
    await db.execute(f"PRAGMA cache_size = -{cache_kib}")


async def _open_reader(path: Path) -> aiosqlite.Connection:
    reader = await aiosqlite.connect(path, isolation_level=None)
    try:
        await _configure(reader, READER_CACHE_KIB)
        await reader.execute("PRAGMA query_only = ON")
    except BaseException:
        await reader.close()
        raise
    return reader


async def _schema_version(db: aiosqlite.Connection) -> int:
    """0 for an empty file; raises IndexUnusable for anything that is not a filescout index."""
    (app_id,), = await db.execute_fetchall("PRAGMA application_id")
    tables = {row[0] for row in await db.execute_fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    if app_id == 0 and not tables:
        return 0
    if app_id != APPLICATION_ID or "schema_version" not in tables:
        raise IndexUnusable("not a filescout index")
    rows = await db.execute_fetchall("SELECT version FROM schema_version")
    return int(rows[0][0]) if rows else 0


async def _migrate(db: aiosqlite.Connection) -> None:
    version = await _schema_version(db)
    if version > SCHEMA_VERSION:
        raise IndexUnusable(f"index schema {version} is newer than this filescout ({SCHEMA_VERSION})")
    if version == SCHEMA_VERSION:
        return
    await db.execute("BEGIN IMMEDIATE")
    try:
        if version == 0:
            await db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            await db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            await db.execute("INSERT INTO schema_version(version) VALUES (0)")
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for statement in _statements(MIGRATIONS[step]):
                await db.execute(statement)
            await db.execute("UPDATE schema_version SET version = ?", (step,))
            log.info("index schema migrated to version %d", step)
    except BaseException:
        await db.execute("ROLLBACK")
        raise
    await db.execute("COMMIT")


def _statements(script: str) -> list[str]:
    return [statement.strip() for statement in script.split(";") if statement.strip()]
