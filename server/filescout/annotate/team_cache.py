"""The team's shared annotation cache: what a model wrote about a content, kept in PostgreSQL
under (content hash, annotator id), so whoever has the same content pays for it once.

What is shared: the content hash, the annotator id, the summary, tags and symbols, when it was
written and what writing it cost. Never file contents, paths or anyone's settings. Structural
annotations are not shared: they are cheap to make locally. Directory summaries (the overview's,
`annotate/directories.py`) are shared the same way, kind "directory": keyed by the directory's key
(a hash of what it holds) under the directory annotator's own id, so they never meet a file's
entry, and counted apart.

The cache is never in the way. Every connection and statement is bounded by `timeout`; a
failure pauses the cache with a doubling backoff while model annotation goes on without it;
authentication and privilege errors pause it until the settings change. Entries are someone
else's writing, so each is checked like a model's answer before it is stored locally. The
password never appears in a message: errors are reported without the URL, and the location
shown is host, port and database only.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from filescout.annotate.base import SUMMARY_LIMIT, TAG_LIMIT, clip
from filescout.core.records import Annotation
from filescout_protocol.types import SharedCacheSettings

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
TABLE = "filescout_annotations"
CREATE_STATEMENTS = (
    f"""CREATE TABLE IF NOT EXISTS {TABLE} (
        content_hash  text        NOT NULL,
        annotator     text        NOT NULL,
        summary       text        NOT NULL,
        tags          jsonb       NOT NULL,
        symbols       jsonb       NOT NULL,
        input_tokens  integer     NOT NULL DEFAULT 0,
        output_tokens integer     NOT NULL DEFAULT 0,
        written_at    timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (content_hash, annotator)
    )""",
    "CREATE TABLE IF NOT EXISTS filescout_meta (key text PRIMARY KEY, value text NOT NULL)",
    "INSERT INTO filescout_meta (key, value) VALUES ('schema_version', %s) ON CONFLICT (key) DO NOTHING",
)
"""The tables, for a read-write client to create when absent (docs/TEAMS.md has them for a
DBA who prefers to create them)."""
MAX_ENTRY_BYTES = 64 * 1024
"""An entry larger than this (summary, tags and symbols together) is refused unread."""
MAX_TOKENS = 1_000_000  # a claimed cost above this is not believed
BACKOFF_FIRST = 5.0
BACKOFF_MAX = 300.0
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
HASH = re.compile(r"[0-9a-f]{32}")

WRITE_REFUSALS = frozenset({"25006", "42501"})  # read-only transaction; insufficient privilege
REFUSALS = ("authentication failed", "no pg_hba.conf entry", "does not exist", "permission denied")
"""Connection errors carry no SQLSTATE: these say that retrying will not help."""
State = Literal["ready", "connecting", "unavailable", "refused", "incompatible"]
Kind = Literal["file", "directory"]


class CacheProblem(Exception):
    """The cache cannot be used now; the message is safe to show (no URL, no password)."""


def _psycopg() -> Any:
    """Imported on first use: a workspace without a shared cache never pays for it."""
    import psycopg

    return psycopg


def driver_missing() -> str | None:
    """Why the cache cannot be used on this installation, or None."""
    try:
        _psycopg()
    except ImportError:
        return "the shared cache needs its driver: pip install 'filescout[team]'"
    return None


def connection_parts(url: str) -> dict[str, str] | None:
    """The URL's parts, or None when it is malformed: libpq reads an unencoded `@`, `:` or `/`
    in a password as part of the host or port, which would put the password in messages."""
    try:
        parts = _psycopg().conninfo.conninfo_to_dict(url)
    except Exception:
        return None
    host, port, database = (str(parts.get(key) or "") for key in ("host", "port", "dbname"))
    if (
        any(mark in host for mark in "@/")
        or (port and not port.replace(",", "").isdigit())
        or "@" in database
    ):
        return None
    return {key: str(value) for key, value in parts.items() if value is not None}


def location_of(url: str) -> str:
    """host:port/database, for messages; never the user or the password."""
    parts = connection_parts(url)
    if parts is None:
        return "(a malformed connection URL)"
    port = f":{parts['port']}" if parts.get("port") else ""
    return (
        f"{parts.get('host') or 'localhost'}{port}/{parts.get('dbname') or parts.get('user') or 'postgres'}"
    )


def _clean_text(value: str) -> str:
    return " ".join(CONTROL.sub(" ", value).split())


def vet(row: Sequence[Any]) -> Annotation | None:
    """A shared entry as a local annotation, or None when it is unusable. Like a model's
    answer, it is clipped, cleaned of control and bidirectional characters, and bounded; the
    query already left out entries over MAX_ENTRY_BYTES."""
    summary, tags, symbols, input_tokens, output_tokens = row
    if not isinstance(summary, str) or not isinstance(tags, list) or not isinstance(symbols, list):
        return None
    text = clip(_clean_text(summary), SUMMARY_LIMIT)
    if not text:
        return None
    clean_tags = [_clean_text(tag).lower()[:40] for tag in tags[: TAG_LIMIT * 4] if isinstance(tag, str)]
    return Annotation(
        summary=text,
        tags=[tag for tag in dict.fromkeys(clean_tags) if tag][:TAG_LIMIT],
        symbols=[_clean_text(symbol) for symbol in symbols if isinstance(symbol, str)],
        input_tokens=min(max(int(input_tokens or 0), 0), MAX_TOKENS),
        output_tokens=min(max(int(output_tokens or 0), 0), MAX_TOKENS),
    )


def outgoing(annotation: Annotation) -> tuple[str, str, str]:
    """(summary, tags, symbols) as they are shared: what PostgreSQL text cannot hold (NUL) or a
    reader should not see (control characters) is left out."""
    encode = msgspec.json.encode
    return (
        _clean_text(annotation.summary),
        encode([_clean_text(tag) for tag in annotation.tags]).decode(),
        encode([_clean_text(symbol) for symbol in annotation.symbols]).decode(),
    )


class SharedCache:
    def __init__(self, settings: SharedCacheSettings) -> None:
        if not settings.url:
            raise ValueError("no shared cache configured")
        self.settings = settings
        self.location = location_of(settings.url)
        self.state: State = "connecting"
        self.last_error: str | None = None
        self.hits = self.misses = self.stored = self.rejected = self.tokens_saved = 0
        self.directory_hits = self.directories_stored = 0
        """Directory summaries found and shared (apart from the files' counts)."""
        self._connection: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()
        self._retry_at = 0.0
        self._backoff = BACKOFF_FIRST
        self.write_refused: str | None = None
        """Why sharing stopped (a read-only replica, no INSERT privilege): lookups go on."""

    @property
    def writes(self) -> bool:
        return self.settings.mode == "read_write"

    async def lookup(
        self, annotator: str, hashes: Sequence[str], *, kind: Kind = "file"
    ) -> dict[str, Annotation]:
        """The shared annotations of these contents (or directory keys), in one round trip;
        nothing (at once) while the cache is paused or failing."""
        wanted = [digest for digest in dict.fromkeys(hashes) if HASH.fullmatch(digest)]
        if not wanted:
            return {}
        rows = await self._run(
            "SELECT content_hash, CASE WHEN oversized THEN NULL ELSE summary END, tags, symbols, "
            "input_tokens, output_tokens FROM ("
            "  SELECT content_hash, summary, input_tokens, output_tokens,"
            "         octet_length(summary) + pg_column_size(tags) + pg_column_size(symbols) > %s"
            "         AS oversized,"
            "         CASE WHEN jsonb_typeof(tags) = 'array' THEN tags ELSE '[]' END AS tags,"
            "         CASE WHEN jsonb_typeof(symbols) = 'array' THEN symbols ELSE '[]' END AS symbols"
            f"  FROM {TABLE} WHERE annotator = %s AND content_hash = ANY(%s)) AS entry",
            (MAX_ENTRY_BYTES, annotator, wanted),
        )
        if rows is None:
            return {}
        found: dict[str, Annotation] = {}
        for digest, *entry in rows:
            annotation = vet(entry)
            if annotation is None:
                self.rejected += 1
                continue
            found[digest] = annotation
        if kind == "directory":
            self.directory_hits += len(found)
            return found
        self.hits += len(found)
        self.misses += len(wanted) - len(found)
        self.tokens_saved += sum(item.input_tokens + item.output_tokens for item in found.values())
        return found

    async def store(
        self, annotator: str, annotations: Sequence[tuple[str, Annotation]], *, kind: Kind = "file"
    ) -> None:
        """Share what this machine's model wrote (first writer wins); read-only mode shares
        nothing."""
        if not self.writes or self.write_refused:
            return
        rows = [
            (
                digest,
                annotator,
                *outgoing(item),
                min(item.input_tokens, MAX_TOKENS),
                min(item.output_tokens, MAX_TOKENS),
            )
            for digest, item in annotations
            if HASH.fullmatch(digest)
        ]
        if not rows:
            return
        written = await self._run(
            f"INSERT INTO {TABLE} (content_hash, annotator, summary, tags, symbols, input_tokens, "
            "output_tokens) SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::jsonb[], "
            "%s::jsonb[], %s::int[], %s::int[]) ON CONFLICT DO NOTHING",
            tuple(list(column) for column in zip(*rows, strict=True)),
            writing=True,
        )
        if written and kind == "directory":
            self.directories_stored += written[0][0]
        elif written:
            self.stored += written[0][0]

    async def entries(self) -> int | None:
        """How many entries the cache holds (for `filescout cache status`); None when it cannot
        say in time, which does not pause the cache."""
        rows = await self._run(f"SELECT count(*) FROM {TABLE}", (), pause_on_failure=False)
        return int(rows[0][0]) if rows else None

    async def close(self) -> None:
        async with self._lock:
            if self._connection is not None:
                await self._connection.close()
                self._connection = None

    async def _run(
        self, sql: str, params: Sequence[Any], *, writing: bool = False, pause_on_failure: bool = True
    ) -> list[Any] | None:
        """One statement: its rows (for a write, [(rows written,)]), or None when the cache is
        paused or the statement failed. A failure pauses the cache; a refused write only stops
        sharing; data the server rejects costs only that batch. A connection that died while
        idle is replaced once before the statement counts as failed."""
        if self.state in ("refused", "incompatible") or time.monotonic() < self._retry_at:
            return None
        async with self._lock:
            for attempt in (1, 2):
                reused = self._connection is not None and not self._connection.closed
                try:
                    rows = await self._execute(sql, params, writing=writing)
                    break
                except CacheProblem as problem:
                    await self._failed(str(problem), refused=self.state == "refused")
                    return None
                except Exception as exc:  # driver, network, server: never the caller's problem
                    if reused and attempt == 1 and self._connection_lost(exc):
                        await self._drop_connection()
                        continue
                    await self._failure(exc, writing=writing, pause=pause_on_failure)
                    return None
            else:  # pragma: no cover - the loop always breaks or returns
                return None
        self.state, self.last_error, self._backoff = "ready", None, BACKOFF_FIRST
        return rows

    async def _execute(self, sql: str, params: Sequence[Any], *, writing: bool) -> list[Any]:
        connection = await self._connect()
        async with connection.cursor() as cursor:
            await asyncio.wait_for(cursor.execute(sql, params), self.settings.timeout * 2)
            if writing:
                return [(max(cursor.rowcount, 0),)]
            return list(await cursor.fetchall())

    async def _failure(self, error: Exception, *, writing: bool, pause: bool) -> None:
        sqlstate = self._sqlstate(error)
        if writing and sqlstate in WRITE_REFUSALS:
            self.write_refused = f"sharing stopped: {self._describe(error)}"
            log.warning("shared cache at %s: %s", self.location, self.write_refused)
        elif writing and (sqlstate.startswith("22") or isinstance(error, UnicodeError)):
            log.warning(
                "shared cache at %s: a batch was not shared: %s", self.location, self._describe(error)
            )
        elif pause:
            await self._failed(self._describe(error), refused=self._is_refusal(error))
        else:
            self.last_error = self._describe(error)

    def _connection_lost(self, error: Exception) -> bool:
        """The server or the network ended the session (idle timeout, restart, failover)."""
        sqlstate = self._sqlstate(error)
        lost = not sqlstate or sqlstate.startswith("08") or sqlstate in ("57P01", "57P02", "57P03")
        return isinstance(error, _psycopg().OperationalError) and lost

    async def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                await connection.close()
            except Exception:  # already broken
                pass

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        if self._connection is not None and not self._connection.closed:
            return self._connection
        psycopg = _psycopg()
        if connection_parts(self.settings.url or "") is None:
            self.state = "refused"
            raise CacheProblem(
                "sharedCache.url is not a usable PostgreSQL connection URL (percent-encode `@`, `:` "
                "and `/` in the user name and password, or keep the password in PGPASSWORD)"
            )
        timeout = self.settings.timeout
        connection = await asyncio.wait_for(
            psycopg.AsyncConnection.connect(
                self.settings.url,
                autocommit=True,
                connect_timeout=max(1, round(timeout)),
                application_name="filescout",
            ),
            timeout * 2,
        )
        try:
            # A session setting rather than a startup option, which connection poolers refuse.
            await connection.execute(f"SET statement_timeout = {int(timeout * 1000)}")
            await self._check_schema(connection)
        except BaseException:
            await connection.close()
            raise
        self._connection = connection
        return connection

    async def _check_schema(self, connection: psycopg.AsyncConnection[Any]) -> None:
        """Create the tables when absent (read-write) and refuse tables of a newer filescout."""
        async with connection.cursor() as cursor:
            await cursor.execute("SELECT to_regclass('filescout_meta') IS NOT NULL")
            (present,) = await cursor.fetchone() or (False,)
            if not present:
                if not self.writes:
                    raise CacheProblem(
                        "the shared cache has no filescout tables yet; a read-write client "
                        "creates them (or a DBA, see docs/TEAMS.md)"
                    )
                for statement in CREATE_STATEMENTS:
                    await cursor.execute(statement, (str(SCHEMA_VERSION),) if "%s" in statement else ())
            await cursor.execute("SELECT value FROM filescout_meta WHERE key = 'schema_version'")
            row = await cursor.fetchone()
            version = int(row[0]) if row and str(row[0]).isdigit() else 0
        if version > SCHEMA_VERSION:
            self.state = "incompatible"
            raise CacheProblem(
                f"the shared cache was set up by a newer filescout (schema {version}, this one "
                f"knows {SCHEMA_VERSION}); it is not used"
            )

    async def _failed(self, message: str, *, refused: bool) -> None:
        await self._drop_connection()
        if self.state != "incompatible":
            self.state = "refused" if refused else "unavailable"
        if message != self.last_error:
            log.warning("shared cache at %s: %s", self.location, message)
        self.last_error = message
        self._retry_at = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, BACKOFF_MAX)

    def _describe(self, error: BaseException) -> str:
        if isinstance(error, (TimeoutError, asyncio.TimeoutError)):
            return f"no answer within {self.settings.timeout * 2:g} s"
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        password = self._password()
        if password:
            text = text.replace(password, "***")
        return f"{type(error).__name__}: {text}"

    @staticmethod
    def _sqlstate(error: BaseException) -> str:
        return getattr(getattr(error, "diag", None), "sqlstate", None) or ""

    def _is_refusal(self, error: BaseException) -> bool:
        """Authentication and privilege errors: retrying will not help until settings change."""
        sqlstate = self._sqlstate(error)
        return (
            sqlstate.startswith("28") or sqlstate == "42501" or any(sign in str(error) for sign in REFUSALS)
        )

    def _password(self) -> str | None:
        try:
            return _psycopg().conninfo.conninfo_to_dict(self.settings.url).get("password")
        except Exception:
            return None
