"""The SQLite index: one row per file, annotations keyed by content, full-text search.

Two aiosqlite connections: a writer that owns every transaction, and a query-only reader, so
requests read a consistent WAL snapshot while indexing writes. Annotations are keyed by
(content hash, annotator id): a renamed, copied or reverted file finds its annotation already
there.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiosqlite
import msgspec

from filescout.scan import FileRecord, KnownFile
from filescout.text import join_words, path_words
from filescout_protocol.types import FileItem

log = logging.getLogger(__name__)

APPLICATION_ID = 0x46534354  # "FSCT": marks a SQLite file as a filescout index
SCHEMA_VERSION = 2
BUSY_TIMEOUT_MS = 5000

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
}

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
FILE_ITEM_SQL = f"""
    SELECT f.path, COALESCE(a.summary, ''), COALESCE(a.tags, '[]'), f.language, f.kind,
           f.size, f.mtime_ns, {STATUS_SQL}, f.annotator, f.skip_reason
    FROM files AS f
    LEFT JOIN annotations AS a ON a.hash = f.hash AND a.annotator = f.annotator
"""
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


@dataclass(frozen=True, slots=True)
class PendingFile:
    path: str
    hash: str
    language: str | None
    kind: str
    size: int


@dataclass(frozen=True, slots=True)
class SearchHit:
    path: str
    rank: float


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


def prefix_range(prefix: str) -> tuple[str, str]:
    """Bounds of every path strictly below directory `prefix`: '/' sorts just before '0'."""
    return prefix + "/", prefix + "0"


class Store:
    def __init__(self, path: Path, writer: aiosqlite.Connection | None,
                 reader: aiosqlite.Connection):
        self.path = path
        self._writer = writer
        self._reader = reader
        self._write_lock = asyncio.Lock()
        self.current_annotator = ""

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    async def open(cls, path: Path) -> Store:
        """Open (creating if needed) the index at `path` for writing. Raises IndexUnusable for
        a file that is not a filescout index of a version this code understands."""
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        writer = await aiosqlite.connect(path, isolation_level=None)
        try:
            await _configure(writer)
            await _migrate(writer)
            reader = await _open_reader(path)
        except BaseException:
            await writer.close()
            raise
        return cls(path, writer, reader)

    @classmethod
    async def open_readonly(cls, path: Path) -> Store:
        """Open an index another process writes. Raises IndexUnusable until that process has
        created it at this version."""
        if not path.exists():
            raise IndexUnusable("the index does not exist yet")
        reader = await _open_reader(path)
        try:
            version = await _schema_version(reader)
        except BaseException:
            await reader.close()
            raise
        if version != SCHEMA_VERSION:
            await reader.close()
            raise IndexUnusable(f"index schema {version}, this filescout reads {SCHEMA_VERSION}")
        return cls(path, None, reader)

    @property
    def writable(self) -> bool:
        return self._writer is not None

    async def close(self) -> None:
        async with self._write_lock:
            for connection in (self._reader, self._writer):
                if connection is None:
                    continue
                try:
                    await connection.close()
                except Exception:  # closing twice, or a dead thread: nothing left to save
                    log.debug("closing %s", self.path, exc_info=True)

    def stop_threads(self) -> None:
        """Last-resort shutdown when no event loop is left: aiosqlite's worker threads are not
        daemons and would keep the process alive."""
        for connection in (self._reader, self._writer):
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
                    JOIN access ON access.path = old.path
                    JOIN files AS new ON new.hash = old.hash
                         AND new.path NOT IN (SELECT value FROM json_each(:gone))
                         AND new.path NOT IN (SELECT path FROM access)
                    WHERE old.path IN (SELECT value FROM json_each(:gone))
                    GROUP BY old.path
                    """,
                    {"gone": gone},
                )
                await db.executemany("UPDATE OR IGNORE access SET path = ? WHERE path = ?",
                                     [(new, old) for old, new in moves])
                renamed = len(moves)
                await db.execute(
                    "DELETE FROM files_fts WHERE rowid IN (SELECT id FROM files WHERE path IN "
                    "(SELECT value FROM json_each(?)))", (gone,))
                await db.execute(
                    "DELETE FROM files WHERE path IN (SELECT value FROM json_each(?))", (gone,))
        return renamed

    async def _refresh_fts(self, db: aiosqlite.Connection, paths: Iterable[str]) -> None:
        rows = await db.execute_fetchall(
            f"""
            SELECT f.id, f.path, COALESCE(a.symbols, '[]'), COALESCE(a.summary, ''),
                   COALESCE(a.tags, '[]')
            FROM files AS f
            LEFT JOIN annotations AS a ON a.hash = f.hash AND a.annotator = f.annotator
            WHERE f.path IN (SELECT value FROM json_each(?))
            """,
            (_encode(list(paths)).decode(),),
        )
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
        """Those of `paths` that still need `annotator`'s annotation, each content once."""
        rows = await self._reader.execute_fetchall(
            """
            SELECT path, hash, language, kind, size FROM files
            WHERE path IN (SELECT value FROM json_each(:paths))
              AND skip_reason IS NULL AND (annotator IS NULL OR annotator != :annotator)
            GROUP BY hash
            """,
            {"annotator": annotator, "paths": _encode(list(paths)).decode()},
        )
        order = {path: index for index, path in enumerate(paths)}
        return sorted((PendingFile(*row) for row in rows), key=lambda item: order[item.path])

    async def annotation_order(self, annotator: str) -> list[str]:
        """Every file waiting for `annotator`, in the default order: frequently and recently
        used files first, then source before tests, docs and data, then small before large."""
        rows = await self._reader.execute_fetchall(
            f"""
            SELECT f.path FROM files AS f LEFT JOIN access AS a ON a.path = f.path
            WHERE f.skip_reason IS NULL AND (f.annotator IS NULL OR f.annotator != ?)
            ORDER BY a.rank IS NULL, a.rank DESC, {KIND_ORDER_SQL}, f.size, f.path
            """,
            (annotator,),
        )
        return [row[0] for row in rows]

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

    async def access_ranks(self, paths: Sequence[str]) -> dict[str, float]:
        rows = await self._reader.execute_fetchall(
            "SELECT path, rank FROM access WHERE path IN (SELECT value FROM json_each(?))",
            (_encode(list(paths)).decode(),))
        return dict(rows)

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
                INSERT INTO annotations(hash, annotator, summary, tags, symbols, created_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(hash, annotator) DO UPDATE SET
                    summary = excluded.summary, tags = excluded.tags,
                    symbols = excluded.symbols, created_at = excluded.created_at
                """,
                [
                    (digest, annotator, item.summary, _encode(item.tags).decode(),
                     _encode(item.symbols).decode(), now)
                    for digest, item in annotations
                ],
            )
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

    async def iter_files(self, *, after: str | None = None, prefixes: Sequence[str] = (),
                         page_size: int = 2000) -> AsyncIterator[list[FileItem]]:
        """Every file in path order, in pages, by keyset so memory stays flat."""
        conditions = ["f.path > :after"]
        params: dict[str, object] = {"after": after or "", "current": self.current_annotator,
                                     "limit": page_size}
        if prefixes:
            alternatives = []
            for index, prefix in enumerate(prefixes):
                if not prefix:
                    alternatives = []
                    break
                low, high = prefix_range(prefix)
                params[f"exact{index}"], params[f"low{index}"], params[f"high{index}"] = prefix, low, high
                alternatives.append(
                    f"(f.path = :exact{index} OR (f.path > :low{index} AND f.path < :high{index}))"
                )
            if alternatives:
                conditions.append("(" + " OR ".join(alternatives) + ")")
        sql = f"{FILE_ITEM_SQL} WHERE {' AND '.join(conditions)} ORDER BY f.path LIMIT :limit"
        while True:
            rows = await self._reader.execute_fetchall(sql, params)
            if not rows:
                return
            yield [_file_item(row) for row in rows]
            if len(rows) < page_size:
                return
            params["after"] = rows[-1][0]

    async def files_by_path(self, paths: Sequence[str]) -> dict[str, FileItem]:
        rows = await self._reader.execute_fetchall(
            f"{FILE_ITEM_SQL} WHERE f.path IN (SELECT value FROM json_each(:paths))",
            {"paths": _encode(list(paths)).decode(), "current": self.current_annotator},
        )
        return {row[0]: _file_item(row) for row in rows}

    async def search(self, match: str, *, limit: int,
                     weights: tuple[float, float, float, float]) -> list[SearchHit]:
        """FTS5 BM25 over path words, symbols, summary and tags (lower rank is better in
        SQLite; returned as a positive score, higher is better)."""
        rows = await self._reader.execute_fetchall(
            f"""
            SELECT f.path, bm25(files_fts, {', '.join(str(w) for w in weights)}) AS rank
            FROM files_fts JOIN files AS f ON f.id = files_fts.rowid
            WHERE files_fts MATCH ?
            ORDER BY rank LIMIT ?
            """,
            (match, limit),
        )
        return [SearchHit(path, -rank) for path, rank in rows]


async def _configure(db: aiosqlite.Connection) -> None:
    await db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    await db.execute("PRAGMA journal_mode = WAL")
    await db.execute("PRAGMA synchronous = NORMAL")
    await db.execute("PRAGMA foreign_keys = ON")
    await db.execute("PRAGMA temp_store = MEMORY")


async def _open_reader(path: Path) -> aiosqlite.Connection:
    reader = await aiosqlite.connect(path, isolation_level=None)
    try:
        await _configure(reader)
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
