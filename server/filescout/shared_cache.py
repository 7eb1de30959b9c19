"""The team's shared annotation cache: what a model wrote about a content, kept in PostgreSQL
under (content hash, annotator id), so whoever has the same content pays for it once.

What is shared: the content hash, the annotator id, the summary, tags and symbols, when it was
written and what writing it cost. Never file contents, paths or anyone's settings. Structural
annotations are not shared: they are cheap to make locally.

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
from filescout.records import Annotation
from filescout_protocol.types import SharedCacheSettings, SharedCacheStatus

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
MAX_SYMBOLS = 300
MAX_SYMBOL_CHARS = 200
MAX_ENTRY_BYTES = 64 * 1024
BACKOFF_FIRST = 5.0
BACKOFF_MAX = 300.0
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
HASH = re.compile(r"[0-9a-f]{32}")

WRITE_REFUSALS = frozenset({"25006", "42501"})  # read-only transaction; insufficient privilege
State = Literal["ready", "connecting", "unavailable", "refused", "incompatible"]


class CacheProblem(Exception):
    """The cache cannot be used now; the message is safe to show (no URL, no password)."""


def _psycopg() -> Any:
    """Imported on first use: a workspace without a shared cache never pays for it."""
    import psycopg

    return psycopg


def location_of(url: str) -> str:
    """host:port/database, for messages; never the user or the password."""
    try:
        parts = _psycopg().conninfo.conninfo_to_dict(url)
    except Exception:
        return "(an unreadable connection URL)"
    host = parts.get("host") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"{host}{port}/{parts.get('dbname') or parts.get('user') or 'postgres'}"


def _clean_text(value: str) -> str:
    return " ".join(CONTROL.sub(" ", value).split())


def vet(row: Sequence[Any]) -> Annotation | None:
    """A shared entry as a local annotation, or None when it is unusable. Like a model's
    answer, it is clipped, cleaned of control and bidirectional characters, and bounded."""
    summary, tags, symbols, input_tokens, output_tokens = row
    if not isinstance(summary, str) or not isinstance(tags, list) or not isinstance(symbols, list):
        return None
    if len(summary) > MAX_ENTRY_BYTES:
        return None
    text = clip(_clean_text(summary), SUMMARY_LIMIT)
    clean_tags = [_clean_text(str(tag)).lower()[:40] for tag in tags if isinstance(tag, str)]
    names = [
        _clean_text(symbol)[:MAX_SYMBOL_CHARS] for symbol in symbols[:MAX_SYMBOLS] if isinstance(symbol, str)
    ]
    if not text:
        return None
    return Annotation(
        summary=text,
        tags=[tag for tag in dict.fromkeys(clean_tags) if tag][:TAG_LIMIT],
        symbols=[name for name in names if name],
        input_tokens=max(int(input_tokens or 0), 0),
        output_tokens=max(int(output_tokens or 0), 0),
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
        self._connection: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()
        self._retry_at = 0.0
        self._backoff = BACKOFF_FIRST
        self.write_refused: str | None = None
        """Why sharing stopped (a read-only replica, no INSERT privilege): lookups go on."""

    @property
    def writes(self) -> bool:
        return self.settings.mode == "read_write"

    def status(self) -> SharedCacheStatus:
        return SharedCacheStatus(
            state=self.state,
            mode=self.settings.mode,
            location=self.location,
            hits=self.hits,
            misses=self.misses,
            stored=self.stored,
            rejected=self.rejected,
            tokens_saved=self.tokens_saved,
            last_error=self.last_error,
        )

    async def lookup(self, annotator: str, hashes: Sequence[str]) -> dict[str, Annotation]:
        """The shared annotations of these contents, in one round trip; nothing (at once)
        while the cache is paused or failing."""
        wanted = [digest for digest in dict.fromkeys(hashes) if HASH.fullmatch(digest)]
        if not wanted:
            return {}
        rows = await self._run(
            f"SELECT content_hash, summary, tags, symbols, input_tokens, output_tokens FROM {TABLE} "
            "WHERE annotator = %s AND content_hash = ANY(%s)",
            (annotator, wanted),
            fetch=True,
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
        self.hits += len(found)
        self.misses += len(wanted) - len(found)
        self.tokens_saved += sum(item.input_tokens + item.output_tokens for item in found.values())
        return found

    async def store(self, annotator: str, annotations: Sequence[tuple[str, Annotation]]) -> None:
        """Share what this machine's model wrote (first writer wins); read-only mode shares
        nothing."""
        if not self.writes or not annotations:
            return
        encode = msgspec.json.encode
        rows = [
            (
                digest,
                annotator,
                item.summary,
                encode(item.tags).decode(),
                encode(item.symbols).decode(),
                item.input_tokens,
                item.output_tokens,
            )
            for digest, item in annotations
            if HASH.fullmatch(digest)
        ]
        if not rows or self.write_refused:
            return
        done = await self._run(
            f"INSERT INTO {TABLE} (content_hash, annotator, summary, tags, symbols, input_tokens, "
            "output_tokens) SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::jsonb[], "
            "%s::jsonb[], %s::int[], %s::int[]) ON CONFLICT DO NOTHING",
            tuple(list(column) for column in zip(*rows, strict=True)),
            fetch=False,
            writing=True,
        )
        if done is not None:
            self.stored += len(rows)

    async def entries(self) -> int | None:
        """How many entries the cache holds (for `filescout cache status`)."""
        rows = await self._run(f"SELECT count(*) FROM {TABLE}", (), fetch=True)
        return int(rows[0][0]) if rows else None

    async def close(self) -> None:
        async with self._lock:
            if self._connection is not None:
                await self._connection.close()
                self._connection = None

    async def _run(
        self, sql: str, params: Sequence[Any], *, fetch: bool, writing: bool = False
    ) -> list[Any] | None:
        """One statement; None when the cache is paused or the statement failed (the failure
        is recorded and pauses the cache; a refused write only stops sharing)."""
        if self.state in ("refused", "incompatible") or time.monotonic() < self._retry_at:
            return None
        async with self._lock:
            try:
                connection = await self._connect()
                async with connection.cursor() as cursor:
                    await asyncio.wait_for(cursor.execute(sql, params), self.settings.timeout * 2)
                    rows = await cursor.fetchall() if fetch else []
            except CacheProblem as problem:
                await self._failed(str(problem), refused=self.state == "refused")
                return None
            except Exception as exc:  # driver, network, server: never the caller's problem
                if writing and self._sqlstate(exc) in WRITE_REFUSALS:
                    self.write_refused = self.last_error = f"sharing stopped: {self._describe(exc)}"
                    log.warning("shared cache at %s: %s", self.location, self.write_refused)
                    return None
                await self._failed(self._describe(exc), refused=self._is_refusal(exc))
                return None
        self.state, self.last_error, self._backoff = "ready", None, BACKOFF_FIRST
        return rows

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        if self._connection is not None and not self._connection.closed:
            return self._connection
        psycopg = _psycopg()
        try:
            psycopg.conninfo.conninfo_to_dict(self.settings.url)
        except Exception:
            self.state = "refused"
            raise CacheProblem("sharedCache.url is not a PostgreSQL connection URL") from None
        timeout = self.settings.timeout
        connection = await asyncio.wait_for(
            psycopg.AsyncConnection.connect(
                self.settings.url,
                autocommit=True,
                connect_timeout=max(1, round(timeout)),
                options=f"-c statement_timeout={int(timeout * 1000)}",
                application_name="filescout",
            ),
            timeout * 2,
        )
        try:
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
        if self._connection is not None:
            connection, self._connection = self._connection, None
            try:
                await connection.close()
            except Exception:  # already broken
                pass
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
            sqlstate.startswith("28")
            or sqlstate == "42501"
            or any(sign in str(error) for sign in ("authentication failed", "no pg_hba.conf entry"))
        )

    def _password(self) -> str | None:
        try:
            return _psycopg().conninfo.conninfo_to_dict(self.settings.url).get("password")
        except Exception:
            return None
