"""Connections, transactions and migrations.

An aiosqlite writer owns every transaction, and query-only readers answer requests, so a request
reads a consistent WAL snapshot while indexing writes. Questions search on a small pool of
readers sized from the machine's cores: SQLite releases the GIL while it searches, so the
statements of many questions run side by side on as many threads.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import quote

import aiosqlite
import msgspec
import xxhash

from filescout.index.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, statements

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000
# Page caches. The default 2 MB makes every question reread the full-text indexes, so the
# questions' readers share 32 MB; the writer mostly appends and the listings' reader reads rows in
# order, so they get less. Together they bound the index's share of memory at 48 MB.
WRITER_CACHE_KIB = 8_000
LISTING_CACHE_KIB = 8_000
QUESTION_CACHES_KIB = 32_000
MIN_QUESTION_CACHE_KIB = 6_000
MAX_QUESTION_READERS = 6
"""Past a handful of searching threads, a question's Python work on the event loop is what
bounds a burst of them."""
CHECKPOINT_PAGES = 16_384
"""The write-ahead log is copied into the database when it holds this many pages (64 MB; SQLite's
default is 1,000). The pages a backlog's transactions keep rewriting (the full-text indexes'
structure, the tables' inner pages) are copied, and synced, once per checkpoint instead of
sixteen times: 7% of the writer's time in a cold index (docs/BENCHMARKS.md)."""
WAL_KEPT_BYTES = 16 * 1024 * 1024
"""After a checkpoint the log file is cut back to this size, so the disk keeps no 64 MB log."""
CHECK_CACHE_KIB = 2_000
"""The quick check reads every page once: a large cache would only hold what it never reads again."""


def question_readers(cpus: int | None = None) -> int:
    """How many connections questions search on: one per core, at least two (a question's two
    searches side by side), at most MAX_QUESTION_READERS."""
    return max(2, min(cpus if cpus is not None else (os.cpu_count() or 1), MAX_QUESTION_READERS))


def question_cache_kib(readers: int) -> int:
    return max(QUESTION_CACHES_KIB // readers, MIN_QUESTION_CACHE_KIB)


_encode = msgspec.json.encode


def json_list(values: Iterable[object]) -> str:
    """A JSON array for `json_each(?)`: one bound parameter however many values, so no
    statement grows with its input."""
    return _encode(list(values)).decode()


def content_stamp(digest: str) -> int:
    """A content hash in 63 bits (SQLite's integers are signed): what the top-k store (topk.py)
    keeps of the content each of its documents was made from. Every connection has it as the
    SQL function `content_stamp(hash)`, so a statement checks the store's hits itself."""
    return xxhash.xxh3_64_intdigest(digest.encode()) >> 1


async def _add_functions(db: aiosqlite.Connection) -> None:
    await db.create_function("content_stamp", 1, content_stamp, deterministic=True)


class IndexUnusable(Exception):
    """The file exists but is not a filescout index this version can use."""


class IndexForeign(IndexUnusable):
    """The file is a database, but not a filescout index."""


class IndexTooNew(IndexUnusable):
    """A filescout index written by a later version, with a schema this one cannot read."""


class IndexDamaged(IndexUnusable):
    """A filescout index of this version that lacks part of its schema."""


@functools.cache
def schema_objects() -> frozenset[str]:
    """Every table and index an index of this version holds, FTS5's own tables included: built
    once, in memory, from the migrations, so the list cannot drift from them."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for step in sorted(MIGRATIONS):
            for statement in statements(MIGRATIONS[step]):
                connection.execute(statement)
        return frozenset(_object_names(connection.execute(_OBJECTS).fetchall()))
    finally:
        connection.close()


_OBJECTS = (
    "SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite~_%' ESCAPE '~'"
)


def _object_names(rows: Iterable[Sequence[object]]) -> set[str]:
    return {str(row[0]) for row in rows}


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


class QuestionReaders:
    """The connections questions search on. Each statement takes whichever is free, so a burst
    of questions spreads over all of them, and the listings, counts and lookups a client waits
    on (`Database.reader`) never queue behind it."""

    def __init__(self, connections: Sequence[aiosqlite.Connection]) -> None:
        self._connections: list[aiosqlite.Connection] = []
        self._free: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self.replace(connections)

    @property
    def connections(self) -> list[aiosqlite.Connection]:
        return list(self._connections)

    def replace(self, connections: Sequence[aiosqlite.Connection]) -> list[aiosqlite.Connection]:
        """Serve from `connections` from now on; returns the previous ones, for closing. A
        statement still running on one of those finishes (or fails) there and gives nothing back."""
        previous, self._connections = self._connections, list(connections)
        while not self._free.empty():
            self._free.get_nowait()
        for connection in self._connections:
            self._free.put_nowait(connection)
        return previous

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[aiosqlite.Connection]:
        connection = await self._free.get()
        try:
            yield connection
        finally:
            if connection in self._connections:
                self._free.put_nowait(connection)

    async def fetchall(
        self, sql: str, parameters: Sequence[object] | dict[str, object] = ()
    ) -> list[sqlite3.Row]:
        async with self.connection() as connection:
            return list(await connection.execute_fetchall(sql, parameters))


class Database:
    """The connections of one index file, each with its own thread: a writer, a reader for what a
    client waits on (listings, counts, lookups), and the questions' readers."""

    def __init__(
        self,
        path: Path,
        writer: aiosqlite.Connection | None,
        reader: aiosqlite.Connection,
        questions: Sequence[aiosqlite.Connection],
    ) -> None:
        self.path = path
        self._writer = writer
        self.reader = reader
        self.questions = QuestionReaders(questions)
        self._write_lock = asyncio.Lock()
        self.store_builds = asyncio.Lock()
        """Held while a top-k store beside the index is built or reconciled (topk.py): one at a
        time, so the memory each takes is not added to the other's."""
        self.generation = 0
        """Bumped by every commit of this process's writer (and by a takeover): while it is
        unchanged, and this process is the only writer, what was read is still true."""
        self._identity = _file_identity(path)
        """The file these connections opened (device, inode), to tell when another replaced it."""

    @classmethod
    async def open(cls, path: Path) -> Database:
        """Open (creating if needed) the index at `path` for writing. Raises IndexUnusable for
        a file that is not a filescout index of a version this code understands."""
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        new = path.stat().st_size == 0
        writer = await aiosqlite.connect(path, isolation_level=None)
        readers: list[aiosqlite.Connection] = []
        try:
            await writer.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if new:
                await _mark_as_ours(writer)
            await _usable_version(writer)  # before anything is written to a file not ours
            await _configure(writer, WRITER_CACHE_KIB)
            await writer.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
            await writer.execute(f"PRAGMA journal_size_limit = {WAL_KEPT_BYTES}")
            await _migrate(writer)
            await _require_schema(writer)
            for cache_kib in _reader_caches_kib():
                readers.append(await _open_reader(path, cache_kib))
        except BaseException:
            for connection in (writer, *readers):
                await connection.close()
            raise
        return cls(path, writer, readers[0], readers[1:])

    @classmethod
    async def open_readonly(cls, path: Path) -> Database:
        """Open an index another process writes. Raises IndexUnusable until that process has
        created it at this version."""
        if not path.exists():
            raise IndexUnusable("the index does not exist yet")
        readers = await _open_checked_readers(path, _open_reader)
        return cls(path, None, readers[0], readers[1:])

    @classmethod
    async def open_unwritable(cls, path: Path) -> Database:
        """Open an index on storage this process cannot write (a read-only file system or
        directory): read-only connections that create nothing beside the file, immutable when
        SQLite could not otherwise read it there (a WAL index without its shared-memory file)."""
        if not path.exists():
            raise IndexUnusable("the index does not exist")
        readers = await _open_checked_readers(path, _open_unwritable_reader)
        return cls(path, None, readers[0], readers[1:])

    @property
    def writable(self) -> bool:
        return self._writer is not None

    def replaced(self) -> bool:
        """Whether another file now stands at the path (the process that writes the index moved
        a damaged one aside and created a new one): these connections still read the old one."""
        identity = _file_identity(self.path)
        return identity is not None and identity != self._identity

    async def missing_objects(self) -> list[str]:
        """The tables and indexes of the schema the file lacks (dropped by another program)."""
        present = _object_names(await self.reader.execute_fetchall(_OBJECTS))
        return sorted(schema_objects() - present)

    async def quick_check(self) -> str | None:
        """SQLite's quick check of every page (b-trees, records, free list), on a connection of
        its own so no request waits behind it: its first finding, or None. It reads the whole
        file (a second or more for a large index), so a cancelled check interrupts it."""
        opening = asyncio.ensure_future(_open_reader(self.path, CHECK_CACHE_KIB))
        try:
            connection = await asyncio.shield(opening)
        except asyncio.CancelledError:  # the connection opens in its thread all the same: close it
            await asyncio.wait({opening})
            if not opening.cancelled() and opening.exception() is None:
                await _close_quietly(opening.result(), self.path)
            raise
        try:  # an error (damage the check cannot step over, or a busy or failing disk) is raised
            rows = await connection.execute_fetchall("PRAGMA quick_check(1)")
        finally:
            await connection.interrupt()  # a cancelled check is still running in its thread
            await _close_quietly(connection, self.path)
        finding = str(next(iter(rows))[0]) if rows else "ok"
        return None if finding == "ok" else finding

    @property
    def _connections(self) -> tuple[aiosqlite.Connection | None, ...]:
        return (*self.questions.connections, self.reader, self._writer)

    async def adopt(self, other: Database) -> None:
        """Take over `other`'s connections (a reader becoming the writer), closing ours: every
        room keeps its reference to this object and sees the new connections at once."""
        async with self._write_lock:
            previous = self._take_connections(other)
        for connection in previous:
            if connection is not None:
                await _close_quietly(connection, self.path)

    def _take_connections(self, other: Database) -> list[aiosqlite.Connection | None]:
        """Serve from `other`'s connections from now on; returns ours, for closing. Called with
        the write lock held."""
        previous: list[aiosqlite.Connection | None] = [self.reader, self._writer]
        previous += self.questions.replace(other.questions.connections)
        self._writer, self.reader = other._writer, other.reader
        self._identity = other._identity
        self.generation += 1
        return previous

    async def renew_log(self) -> bool:
        """Copy the whole write-ahead log into the database file, then reconnect. For a log
        deleted under this process: its connections keep writing to a file no other process
        can open, and that would be lost with this process. False when a reader's snapshot kept
        the copy from completing (the next look tries again)."""
        writer = self._writer
        if writer is None:
            return False
        async with self._write_lock:
            ((busy, _, _),) = await writer.execute_fetchall("PRAGMA wal_checkpoint(TRUNCATE)")
            if busy:
                return False
            previous = self._take_connections(await Database.open(self.path))
        for connection in previous:
            if connection is not None:
                await _close_quietly(connection, self.path)
        return True

    async def close(self) -> None:
        async with self._write_lock:
            for connection in self._connections:
                if connection is not None:
                    await _close_quietly(connection, self.path)

    def stop_threads(self) -> None:
        """Last-resort shutdown when no event loop is left: aiosqlite's worker threads are not
        daemons and would keep the process alive."""
        for connection in self._connections:
            # aiosqlite has no public "is running" check; `_running` is what stop() itself reads.
            if connection is not None and connection._running:
                connection.stop()

    @asynccontextmanager
    async def transaction(self, *, bump: bool = True) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction; COMMIT or ROLLBACK runs even if the caller is cancelled. With
        `bump=False` the commit leaves `generation` as it was: for writes that nothing read
        under a generation depends on (the meta table's facts, which Meta keeps itself), so a
        pass that changed no file keeps the counts it read before it."""
        writer = self._writer
        if writer is None:
            raise RuntimeError("this process serves reads only; another one writes the index")
        async with self._write_lock:
            try:
                await _to_completion(writer.execute("BEGIN IMMEDIATE"))
                yield writer
                await _to_completion(writer.execute("COMMIT"))
                if bump:
                    self.generation += 1
            except BaseException:
                if writer.in_transaction:  # the body failed, or COMMIT did (busy, I/O, full)
                    await _to_completion(writer.execute("ROLLBACK"))
                raise


async def _to_completion(statement: Awaitable[object]) -> None:
    """Run a transaction statement to its end even if the caller is cancelled meanwhile (the
    cancellation is raised afterwards): a BEGIN that runs after its caller gave up would leave
    the connection inside a transaction nobody ends.

    The cancellation raised is the first that arrived, not a new one: anyio (the MCP SDK's
    runtime) knows its cancel scope's cancellation by the exception's message, and takes a
    bare `CancelledError` for a cancellation from outside, which ends the SDK's task group and
    the server with it. A cancelled caller gets its cancellation even if the statement failed
    too (the failure is its context): a task must not swallow one."""
    task = asyncio.ensure_future(statement)
    cancellation: asyncio.CancelledError | None = None
    while not task.done():  # a cancel scope may deliver the cancellation more than once
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as exc:
            if cancellation is None:
                cancellation = exc
    if cancellation is None:
        task.result()
        return
    failure = None if task.cancelled() else task.exception()
    if failure is not None:
        cancellation.__context__ = failure
    try:
        raise cancellation
    finally:
        cancellation = failure = None  # no reference cycle through the traceback's frame


async def _close_quietly(connection: aiosqlite.Connection, path: Path) -> None:
    try:
        await connection.close()
    except Exception:  # closing twice, or a dead thread: nothing left to save
        log.debug("closing %s", path, exc_info=True)


async def _configure(db: aiosqlite.Connection, cache_kib: int) -> None:
    await _add_functions(db)
    await db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    await db.execute("PRAGMA journal_mode = WAL")
    await db.execute("PRAGMA synchronous = NORMAL")
    await db.execute("PRAGMA foreign_keys = ON")
    await db.execute("PRAGMA temp_store = MEMORY")
    await db.execute(f"PRAGMA cache_size = -{cache_kib}")


def _reader_caches_kib() -> list[int]:
    """Page cache sizes of the listings' reader, then of each question reader."""
    readers = question_readers()
    return [LISTING_CACHE_KIB, *[question_cache_kib(readers)] * readers]


async def _open_checked_readers(
    path: Path, open_one: Callable[[Path, int], Awaitable[aiosqlite.Connection]]
) -> list[aiosqlite.Connection]:
    """The readers of an index this process does not write: the first checks the schema
    version (IndexUnusable unless it is this code's), then the rest open; all close on failure."""
    readers: list[aiosqlite.Connection] = []
    try:
        for cache_kib in _reader_caches_kib():
            readers.append(await open_one(path, cache_kib))
            if len(readers) == 1 and (version := await _schema_version(readers[0])) != SCHEMA_VERSION:
                raise IndexUnusable(f"index schema {version}, this filescout reads {SCHEMA_VERSION}")
    except BaseException:
        for connection in readers:
            await connection.close()
        raise
    return readers


async def _open_reader(path: Path, cache_kib: int) -> aiosqlite.Connection:
    reader = await aiosqlite.connect(path, isolation_level=None)
    try:
        await _configure(reader, cache_kib)
        await reader.execute("PRAGMA query_only = ON")
    except BaseException:
        await reader.close()
        raise
    return reader


async def _open_unwritable_reader(path: Path, cache_kib: int) -> aiosqlite.Connection:
    location = "file:" + quote(str(path))
    failure: sqlite3.Error | None = None
    for options in ("mode=ro", "mode=ro&immutable=1"):
        reader = await aiosqlite.connect(f"{location}?{options}", uri=True, isolation_level=None)
        try:
            await _add_functions(reader)
            await reader.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await reader.execute(f"PRAGMA cache_size = -{cache_kib}")
            await reader.execute("PRAGMA temp_store = MEMORY")
            await reader.execute("PRAGMA query_only = ON")
            await reader.execute_fetchall("SELECT count(*) FROM sqlite_master")  # opens the file
        except sqlite3.Error as exc:
            await reader.close()
            failure = exc
            continue
        except BaseException:
            await reader.close()
            raise
        return reader
    assert failure is not None
    raise failure


async def _schema_version(db: aiosqlite.Connection) -> int:
    """0 for an empty file (or one filescout has only marked as its own); raises IndexForeign
    for anything that is not a filescout index."""
    ((app_id,),) = await db.execute_fetchall("PRAGMA application_id")
    tables = {
        row[0] for row in await db.execute_fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    if app_id in (0, APPLICATION_ID) and not tables:
        return 0
    if app_id != APPLICATION_ID or "schema_version" not in tables:
        raise IndexForeign("not a filescout index")
    rows = list(await db.execute_fetchall("SELECT version FROM schema_version"))
    return int(rows[0][0]) if rows else 0


async def _require_schema(db: aiosqlite.Connection) -> None:
    """IndexDamaged if a table or index of the schema is gone: every statement that needs it
    would fail until the file is rebuilt."""
    missing = sorted(schema_objects() - _object_names(await db.execute_fetchall(_OBJECTS)))
    if missing:
        raise IndexDamaged(f"the index lacks {', '.join(missing)}")


async def _usable_version(db: aiosqlite.Connection) -> int:
    version = await _schema_version(db)
    if version > SCHEMA_VERSION:
        raise IndexTooNew(f"index schema {version} is newer than this filescout ({SCHEMA_VERSION})")
    return version


async def _mark_as_ours(db: aiosqlite.Connection) -> None:
    """Write filescout's application id into a new file's own header, before the write-ahead log
    exists: a file killed at any later moment is then recognisably an index of ours by its bytes
    (in the log, the id would reach the file only at the first checkpoint)."""
    await db.execute(f"PRAGMA application_id = {APPLICATION_ID}")


async def _migrate(db: aiosqlite.Connection) -> None:
    version = await _usable_version(db)
    if version == SCHEMA_VERSION:
        return
    await db.execute("BEGIN IMMEDIATE")
    try:
        if version == 0:
            await db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            await db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            await db.execute("INSERT INTO schema_version(version) VALUES (0)")
        for step in sorted(key for key in MIGRATIONS if version < key <= SCHEMA_VERSION):
            for statement in statements(MIGRATIONS[step]):
                await db.execute(statement)
            await db.execute("UPDATE schema_version SET version = ?", (step,))
            log.info("index schema migrated to version %d", step)
    except BaseException:
        await db.execute("ROLLBACK")
        raise
    await db.execute("COMMIT")
