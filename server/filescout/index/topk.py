"""Content words in a tantivy index beside the SQLite one: the exact top k by BM25 over every term
of a question, in a millisecond or so at 100,000 contents, where FTS5 scores every row that
matches any term (the prefilter leaves common terms out for that reason).

A derived store. Everything in it is made from `contents` (each content's packed words, by
content id), so it may be deleted at any time and is made again; SQLite stays the truth. Each
document carries its content id and a stamp of its content hash, and:

- writes reach tantivy after the SQLite transaction that made them has committed (`apply`),
  one batch at a time on one thread, upserted (the batch's ids deleted, then its documents
  added) and committed;
- opening for writing compares every document's (id, stamp) with `contents` and writes only the
  difference (`reconcile`), so a kill between the two commits, or during a build, loses nothing;
- a search checks its hits' stamps against `contents`: a document tantivy has not caught up on
  (its content gone, or its id reused by another content) is never an answer. The check is SQL
  (`content_stamp(hash)`, a function on every connection of the index), so a caller checks and
  looks up what it needs of each content (its files) in one statement, one snapshot (`ranked`).

`TopKKeeper` keeps one index's store in the index's role: the writing process opens it in the
background (making and reconciling it: its searches use FTS5 until then), hands it each SQLite
commit's changes after the commit, merged into one store commit when they come faster than the
store commits, and uses it only while it holds every content SQLite has (nothing waiting to go
in); a reading process opens it for reading once the writer has built it. A build costs memory
(60 to 100 MB at 100,000 contents), so an empty index makes none, and a cold index or a flood of
changes has the store built, or reconciled, once the index is quiet (QUIET), not beside the pass.

The words are cut as the FTS5 table cuts them (identifiers joined by `_` fall apart at it), so
both index the same words. Both score BM25 with k1 1.2 and b 0.75, but tantivy's IDF is
ln(1 + (N - n + .5) / (n + .5)), where FTS5's lacks the 1 + and is floored at 1e-6: a word in
half the contents still counts a little, and the two top lists differ by a tenth (bench/topk_bench.py).
tantivy is a dependency where it has wheels (Python 3.11 and later); `available()` says whether it
is installed (and not turned off by FILESCOUT_NO_TOPK), and a caller falls back to FTS5 without it.

What describes each file (`files_fts`: path words, symbols, summary, tags) is kept the same way in
a second store (`DescriptionTopK`), by file id, stamped with its row's text. FTS5 weighs the four
columns (`DESCRIPTION_WEIGHTS`) by multiplying each column's term counts before BM25 saturates
them; the store writes each column as many times as its weight, as separate values of one field
(so a phrase never spans two), which multiplies the counts the same way. Two differences remain:
the length BM25 divides by, FTS5's the row's tokens counted once, the store's the tokens as
written; and the stemmer, tantivy's English (Snowball) where FTS5's is Porter's (`key` vs `kei`),
a question cut as the files are. On the 100,000-file benchmark tree its top 200 over every
term shares 97.5% with FTS5's over every term, where FTS5 over the terms it could afford shared
51% (bench/described_bench.py).
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import importlib
import logging
import math
import os
import re
import shutil
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from filescout.core.words import unpack_words
from filescout.index.database import Database, content_stamp, json_list
from filescout.index.described import DESCRIPTION_WEIGHTS, described_stamp

log = logging.getLogger(__name__)

MARKER = "filescout-topk"
"""Holds the store's format (its kind's FORMAT): a store without it, or with another, is made
again."""
BUILT = "filescout-topk-built"
"""Written once a store has been reconciled in full: a reading process searches it only then
(while the writing process builds it, its searches use FTS5)."""
WRITER_HEAP = 32_000_000
"""The writer's indexing budget in bytes (tantivy flushes a segment when it is reached): the
memory a writing process adds, beside the segments the system maps and may evict."""
READ_BATCH = 500
"""Contents whose words are read and unpacked at a time while reconciling."""
COMMIT_EVERY = 2_000
"""Documents between commits while reconciling: a kill during a rebuild keeps what was
committed, and readers see the store fill."""
REFETCH = 3
"""How many times a search asks again, for twice as many, when stale hits left it short."""
STOP_CHECK = 500
"""Documents a write adds between looks at whether the store is closing (it then rolls back)."""
DISABLED = "FILESCOUT_NO_TOPK"
"""Set (to anything but empty or 0), the store is never used: every content search is FTS5's."""

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S", bound="TopKStore")
Document = tuple[int, int, tuple[str, ...]]
"""What a store takes: the row's id (content id, file id), its stamp, the texts its kind writes."""
Keep = Callable[[list[tuple[int, int, float]]], Awaitable[list[R]]]
"""Given tantivy's hits, best first, as (content id, stamp, score): what each hit whose content
`contents` still has as it was answers with, in the hits' order; nothing for the others."""


class TopKUnavailable(Exception):
    """No store can be used: tantivy is not installed, or a reading process found none."""


class NothingYet(TopKUnavailable):
    """The index has no contents and no store: none is made until it has some."""


class TopKFailed(Exception):
    """tantivy failed to search the store (damaged or unreadable files): FTS5 answers instead."""


class Stopped(Exception):
    """A write given up because the store is closing; nothing of it was committed."""


def _tantivy() -> Any:
    """Imported on first use: an installation without tantivy never pays for it."""
    try:
        return importlib.import_module("tantivy")
    except ImportError:
        raise TopKUnavailable("top-k search needs tantivy: pip install tantivy") from None


def available() -> bool:
    if os.environ.get(DISABLED, "") not in ("", "0"):
        return False
    try:
        _tantivy()
    except TopKUnavailable:
        return False
    return True


def directory_for(db_path: Path, kind: type[TopKStore] | None = None) -> Path:
    """Where the store (of content words, unless `kind` says) of the index at `db_path` lives:
    beside it, named as SQLite names the files it keeps beside a database (`index.sqlite3-wal`),
    so no one takes it for a copy of the index set aside (`index.sqlite3.damaged`)."""
    return db_path.with_name(db_path.name + (kind or ContentTopK).SUFFIX)


def stamp(digest: str) -> int:
    """A content hash in 63 bits, for a fast field: which content a document was made from. SQL
    computes the same of `contents.hash` as `content_stamp(hash)`."""
    return content_stamp(digest)


def tokens(body: str) -> str:
    """A content's words as FTS5's unicode61 tokenizer cuts them: at `_` as at spaces (the words
    are lower-case ASCII letters, digits and underscores already)."""
    return body.replace("_", " ")


def query_tokens(terms: Iterable[str]) -> list[str]:
    """The distinct tokens of a question's terms, cut as the words were."""
    return list(dict.fromkeys(part for term in terms for part in tokens(term).split()))


def fts5_idf_boost(documents: int, holding: int) -> float:
    """What turns tantivy's IDF of a term into FTS5's, so the store ranks as FTS5 over every
    term would (the fused scores and their weights were set on FTS5's): tantivy's is
    ln(1 + (N - n + 0.5) / (n + 0.5)), FTS5's ln((N - n + 0.5) / (n + 0.5)), at least 1e-6. They
    agree on rare terms; a term in half the documents or more tells next to nothing in FTS5 and
    still weighs ln 2 in tantivy, so in a long question (a bug report) the common words would
    outweigh the telling ones."""
    if holding <= 0 or _odds(documents, holding) <= 0:
        return 1.0
    return fts5_idf(documents, holding) / tantivy_idf(documents, holding)


def _odds(documents: int, holding: int) -> float:
    return (documents - holding + 0.5) / (holding + 0.5)


def fts5_idf(documents: int, holding: int) -> float:
    """FTS5's IDF, at least 1e-6 (also for a count past the documents: tantivy's counts hold
    deleted documents until their segments merge)."""
    odds = _odds(documents, holding)
    return max(math.log(odds), 1e-6) if holding > 0 and odds > 0 else 1e-6


def tantivy_idf(documents: int, holding: int) -> float:
    return math.log1p(_odds(documents, holding))


def weighed_query(searcher: Any, schema: Any, terms: Sequence[str]) -> Any:
    """Documents holding any of `terms`, each term weighed by FTS5's IDF (`fts5_idf_boost`)."""
    tantivy = _tantivy()
    documents = searcher.num_docs
    return tantivy.Query.boolean_query(
        [
            (
                tantivy.Occur.Should,
                tantivy.Query.boost_query(
                    tantivy.Query.term_query(schema, "body", term),
                    fts5_idf_boost(documents, searcher.doc_freq("body", term)),
                ),
            )
            for term in terms
        ]
    )


@dataclass(frozen=True)
class Reconciled:
    """What opening changed: documents removed (stale, duplicated) and added (missing)."""

    removed: int
    added: int


def _schema(kind: type[TopKStore]) -> Any:
    builder = _tantivy().SchemaBuilder()
    builder.add_text_field(kind.FIELD, tokenizer_name=kind.TOKENIZER, index_option=kind.INDEX_OPTION)
    builder.add_unsigned_field("id", indexed=True, fast=True)
    builder.add_unsigned_field("stamp", fast=True)
    return builder.build()


def _with_tokenizer(kind: type[TopKStore], index: Any) -> Any:
    index.register_tokenizer(kind.TOKENIZER, kind.analyzer())
    return index


def _marked(kind: type[TopKStore], directory: Path) -> bool:
    try:
        return (directory / MARKER).read_text() == kind.FORMAT
    except OSError:
        return False


def _open_existing(kind: type[TopKStore], directory: Path) -> Any | None:
    """The store in `directory`, or None when there is none this code can read."""
    tantivy = _tantivy()
    if not _marked(kind, directory):
        return None
    try:
        return _with_tokenizer(kind, tantivy.Index.open(str(directory)))
    except (ValueError, OSError):  # tantivy reports a damaged or foreign index as ValueError
        return None


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has none)
        return None


def _release_memory() -> None:
    """Give the C heap's free pages back to the system: a build's many allocations and frees
    (each document's words, tantivy's segments and merges) otherwise leave the process some tens
    of MB larger for good (glibc keeps what was freed in its arenas)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _unmark(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _mark(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all."""
    fresh = path.with_name(path.name + ".new")
    with open(fresh, "w", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(fresh, path)


TANTIVY_FILES = re.compile(r"meta\.json|\.managed\.json|\.tantivy-[a-z]+\.lock|[0-9a-f]{32}(\.\d+)?\.[a-z]+")
"""What tantivy writes in a store's directory: its lists, locks and segments' files."""


def _ours(directory: Path) -> bool:
    """Whether `directory` is a store of filescout's (of any format, damaged or half made), which
    may be replaced: marked as one, or holding nothing but what tantivy and this module write."""
    try:
        if (directory / MARKER).read_text(errors="replace").startswith("filescout-topk"):
            return True
    except OSError:
        pass
    ours = {MARKER, BUILT, MARKER + ".new", BUILT + ".new"}
    try:
        return all(
            entry.is_file(follow_symlinks=False)
            and (entry.name in ours or TANTIVY_FILES.fullmatch(entry.name) is not None)
            for entry in os.scandir(directory)
        )
    except FileNotFoundError:
        return True


def _create(kind: type[TopKStore], directory: Path) -> Any:
    """An empty store in `directory`, replacing a store that was there; anything else there is
    left as it is (TopKUnavailable). The marker is written last: a kill before it leaves a
    directory the next open replaces again."""
    if os.path.lexists(directory) and (directory.is_symlink() or not _ours(directory)):
        raise TopKUnavailable(f"{directory} is not a top-k store of filescout's: it is left as it is")
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True, mode=0o700)
    index = _with_tokenizer(kind, _tantivy().Index(_schema(kind), path=str(directory)))
    _mark(directory / MARKER, kind.FORMAT)
    return index


class TopKStore:
    """One workspace's store of one kind (a subclass says which rows, how they are written and
    asked for). Writing (`apply`, `reconcile`) is for the process that writes the SQLite index;
    searching is for any process."""

    WHAT: ClassVar[str]
    """What the store serves, for the log."""
    SUFFIX: ClassVar[str]
    """Added to the index file's name to name the store's directory."""
    FORMAT: ClassVar[str]
    """Written to MARKER when a store is made: its schema and how its words are cut."""
    FIELD: ClassVar[str]
    TOKENIZER: ClassVar[str]
    INDEX_OPTION: ClassVar[str]
    STAMPS_SQL: ClassVar[str]
    """Every row's id and stamp, as SQLite has them."""
    ROWS_SQL: ClassVar[str]
    """(id, stamp, stored text...) of the ids in a JSON array, by id."""
    ANY_SQL: ClassVar[str]
    """A row when there is any."""

    @staticmethod
    def analyzer() -> Any:
        """How the store's text is cut into words (and a question's, when the kind cuts them)."""
        raise NotImplementedError

    @staticmethod
    def texts(stored: tuple[Any, ...]) -> tuple[str, ...]:
        """The texts a row read with ROWS_SQL writes, from what SQLite stores."""
        raise NotImplementedError

    def fill(self, document: Any, texts: tuple[str, ...]) -> None:
        """Write a row's texts into its document."""
        raise NotImplementedError

    def asked(self, terms: Sequence[str]) -> list[Any]:
        """A question's terms as the store's query takes them (none: nothing to ask)."""
        raise NotImplementedError

    def query(self, searcher: Any, asked: list[Any]) -> Any:
        raise NotImplementedError

    def __init__(self, directory: Path, index: Any, db: Database) -> None:
        self.directory = directory
        self._index = index
        self._db = db
        self._writer: Any | None = None
        self._writes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="filescout-topk")
        """Every write on one thread, in order: tantivy allows one writer per store."""
        self._lock = asyncio.Lock()
        self._complete = False
        self._stopping = False
        """Set by `close`: a write under way gives up at its next look (STOP_CHECK)."""

    @property
    def complete(self) -> bool:
        """Whether the store has every content: the writing process has reconciled it since
        opening, or, for a reading process, the writer has marked it so (BUILT, which the writer
        takes away while a reconciliation changes it). Until then a caller searches FTS5."""
        if not self._db.writable:
            return (self.directory / BUILT).exists()
        return self._complete

    @classmethod
    async def open(cls: type[S], directory: Path, db: Database) -> S:
        """The store in `directory` for the index `db`. A writing process makes it when missing,
        damaged or of another format, and reconciles it with SQLite; a reading process raises
        TopKUnavailable when there is none yet (its searches then use FTS5)."""
        _tantivy()
        index = await asyncio.to_thread(_open_existing, cls, directory)
        if index is None and not db.writable:
            raise TopKUnavailable("no top-k store yet")
        empty = index is None and not os.path.lexists(directory)
        if empty and not await db.reader.execute_fetchall(cls.ANY_SQL):
            raise NothingYet("nothing to keep yet")
        if index is None:
            index = await asyncio.to_thread(_create, cls, directory)
        store = cls(directory, index, db)
        if db.writable:
            try:
                await store.reconcile()
            except ValueError:  # tantivy cannot read what the store holds: it is made anew
                log.warning("the top-k store at %s is unreadable; it is made again", directory, exc_info=True)
                await store.close()
                store = cls(directory, await asyncio.to_thread(_create, cls, directory), db)
                try:
                    await store.reconcile()
                except BaseException:
                    await store.close()
                    raise
            except BaseException:
                await store.close()
                raise
        return store

    async def close(self) -> None:
        """Let the writer finish its merges and release the store's lock. A write under way
        (a reconciliation's batch) gives up, rolled back: the next opening reconciles again."""
        self._stopping = True
        async with self._lock:
            await self._write(self._finish_writer)
            self._writes.shutdown(wait=True)

    def stop_threads(self) -> None:
        """Last-resort shutdown when no event loop is left: the writing thread ends after the
        write under way, which gives up at its next look."""
        self._stopping = True
        self._writes.shutdown(wait=False, cancel_futures=True)

    # -- writing ------------------------------------------------------------------------------

    async def _write(self, action: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._writes, action)

    def _writer_now(self) -> Any:
        if self._writer is None:
            self._writer = self._index.writer(heap_size=WRITER_HEAP, num_threads=1)
        return self._writer

    def _finish_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.wait_merging_threads()
            _release_memory()

    async def rest(self) -> None:
        """Let go of the writer until the next write: it keeps its indexing memory (up to
        WRITER_HEAP) and threads while it lives, and making one again costs a millisecond."""
        async with self._lock:
            if self._writer is not None:
                await self._write(self._finish_writer)

    def _upsert(self, documents: Sequence[Document], removed: Iterable[int], *, commit: bool = True) -> None:
        """On the writing thread: delete every document of these ids, add these, commit (unless
        `commit` is false: a later call does), and let this process's searches see it. A
        failure rolls back everything not committed."""
        tantivy = _tantivy()
        writer = self._writer_now()
        ids = sorted({*removed, *(row_id for row_id, _, _ in documents)})
        try:
            if ids:
                writer.delete_documents_by_query(tantivy.Query.term_set_query(self._index.schema, "id", ids))
            for number, (row_id, made_from, texts) in enumerate(documents):
                if number % STOP_CHECK == 0 and self._stopping:
                    raise Stopped("the store is closing")
                document = tantivy.Document()
                document.add_unsigned("id", row_id)
                document.add_unsigned("stamp", made_from)
                self.fill(document, texts)
                writer.add_document(document)
            if commit:
                writer.commit()
        except BaseException:
            writer.rollback()
            raise
        if commit:
            self._index.reload()
            _release_memory()

    def _rollback(self) -> None:
        if self._writer is not None:
            self._writer.rollback()

    async def apply(self, added: Sequence[Document], removed: Iterable[int] = ()) -> None:
        """After the SQLite transaction that made them has committed: these rows in, and the
        documents of `removed` ids out."""
        removed = list(removed)
        if not (added or removed):
            return
        async with self._lock:
            await self._write(functools.partial(self._upsert, added, removed))

    def _listing(self) -> list[tuple[int, int]]:
        """(id, stamp) of every live document."""
        searcher = self._index.searcher()
        if not searcher.num_docs:
            return []
        found = searcher.search(_tantivy().Query.all_query(), limit=searcher.num_docs, count=False).hits
        addresses = [address for _, address in found]
        ids = searcher.fast_field_values("id", addresses)
        stamps = searcher.fast_field_values("stamp", addresses)
        return [(int(content_id), int(made_from)) for content_id, made_from in zip(ids, stamps, strict=True)]

    async def reconcile(self) -> Reconciled:
        """Make the store hold exactly what SQLite has: documents whose row is gone, whose id now
        names another row (another content, a file described anew), or that are there twice go;
        rows it lacks come in, read and added a batch at a time (only a batch's text is in
        memory), committed every COMMIT_EVERY documents. What changes in SQLite meanwhile comes
        by `apply`, which waits for this."""
        async with self._lock:
            self._index.reload()
            wanted = await self._stamps()
            held = await self._write(self._listing)
            seen: dict[int, int] = {}
            stale: set[int] = set()
            for content_id, made_from in held:
                if content_id in seen or wanted.get(content_id) != made_from:
                    stale.add(content_id)
                seen[content_id] = made_from
            missing = sorted(
                content_id
                for content_id, made_from in wanted.items()
                if content_id in stale or seen.get(content_id) != made_from
            )
            removed = sum(1 for content_id, _ in held if content_id in stale)
            if (missing or stale) and (self.directory / BUILT).exists():
                # Reading processes search FTS5 while the store lacks or misleads.
                await self._write(functools.partial(_unmark, self.directory / BUILT))
            gone, uncommitted, added = stale, 0, 0
            try:
                for start in range(0, len(missing), READ_BATCH):
                    if self._stopping:
                        raise Stopped("the store is closing")
                    batch = await self.read(missing[start : start + READ_BATCH])
                    uncommitted += len(batch)
                    last = start + READ_BATCH >= len(missing)
                    commit = uncommitted >= COMMIT_EVERY or last
                    await self._write(functools.partial(self._upsert, batch, gone, commit=commit))
                    added += len(batch)
                    gone, uncommitted = set(), 0 if commit else uncommitted
            except BaseException:
                if uncommitted:
                    await self._write(self._rollback)
                raise
            if gone:
                await self._write(functools.partial(self._upsert, [], gone))
            if not (self.directory / BUILT).exists():
                await self._write(functools.partial(_mark, self.directory / BUILT, self.FORMAT))
            self._complete = True
            return Reconciled(removed=removed, added=added)

    async def _stamps(self) -> dict[int, int]:
        """Every row's id and stamp, read a part at a time (no list of 100,000 rows)."""
        wanted: dict[int, int] = {}
        async with self._db.reader.execute(self.STAMPS_SQL) as cursor:
            while rows := await cursor.fetchmany(READ_BATCH * 10):
                wanted.update((int(row_id), int(made_from)) for row_id, made_from in rows)
        return wanted

    async def read(self, ids: Sequence[int]) -> list[Document]:
        """These rows as SQLite has them now (those it has), as the store takes them."""
        rows = await self._db.reader.execute_fetchall(self.ROWS_SQL, (json_list(ids),))
        return [
            (int(row_id), int(made_from), self.texts(tuple(stored))) for row_id, made_from, *stored in rows
        ]

    # -- searching ----------------------------------------------------------------------------

    async def fall_behind(self) -> None:
        """The store lacks rows it was not told of (the writing process dropped them to bound
        its memory): reading processes search FTS5 until the next reconciliation."""
        async with self._lock:
            await self._write(functools.partial(_unmark, self.directory / BUILT))

    def _top(self, asked: list[Any], limit: int) -> list[tuple[int, int, float]]:
        """(id, stamp, score) of the best `limit` documents, best first."""
        searcher = self._index.searcher()
        query = self.query(searcher, asked)
        hits = searcher.search(query, limit=limit, count=False).hits
        addresses = [address for _, address in hits]
        ids = searcher.fast_field_values("id", addresses)
        stamps = searcher.fast_field_values("stamp", addresses)
        return [
            (int(content_id), int(made_from), float(score))
            for (score, _), content_id, made_from in zip(hits, ids, stamps, strict=True)
        ]

    async def ranked(self, terms: Sequence[str], *, limit: int, keep: Keep[R]) -> list[R]:
        """What `keep` makes of the best `limit` rows holding any of `terms`, best first, every
        term counted: `keep` checks the hits' stamps against SQLite and looks up what it needs
        of each in one statement, so no commit slips in between. When stale hits leave fewer
        than asked, more are asked for. TopKFailed when tantivy fails."""
        wanted = self.asked(terms)
        if not wanted or limit <= 0:
            return []
        asked, kept = limit, []
        for _ in range(REFETCH):
            try:
                hits = await asyncio.to_thread(self._top, wanted, asked)
            except (ValueError, OSError, RuntimeError) as exc:  # what tantivy raises for its files
                raise TopKFailed(str(exc)) from exc
            kept = await keep(hits)
            if len(kept) >= limit or len(hits) < asked:
                break
            asked *= 2
        return kept[:limit]

    async def search(self, terms: Sequence[str], *, limit: int) -> list[tuple[int, float]]:
        """(id, BM25 score) of the best `limit` rows holding any of `terms`, best first, every
        term counted. Hits whose row SQLite no longer has as it was are left out; when that
        leaves fewer than asked, more are asked for."""
        return await self.ranked(terms, limit=limit, keep=self._live)

    async def _live(self, hits: list[tuple[int, int, float]]) -> list[tuple[int, float]]:
        current = {row_id: made_from for row_id, made_from, _ in await self.read([hit[0] for hit in hits])}
        return [(found, score) for found, made_from, score in hits if current.get(found) == made_from]

    async def documents(self) -> int:
        """Live documents, as this process sees the store."""
        return int(await asyncio.to_thread(lambda: self._index.searcher().num_docs))


class ContentTopK(TopKStore):
    """Content words, one document per content (`contents`), by content id."""

    WHAT = "content search"
    SUFFIX = "-topk"
    FORMAT = "filescout-topk 2"
    FIELD = "body"
    TOKENIZER = "filescout_words"
    INDEX_OPTION = "freq"
    STAMPS_SQL = "SELECT id, content_stamp(hash) FROM contents"
    ROWS_SQL = (
        "SELECT id, content_stamp(hash), words FROM contents "
        "WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id"
    )
    ANY_SQL = "SELECT 1 FROM contents LIMIT 1"

    @staticmethod
    def analyzer() -> Any:
        """The words are cut already (`tokens`)."""
        tantivy = _tantivy()
        return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()

    @staticmethod
    def texts(stored: tuple[Any, ...]) -> tuple[str, ...]:
        return (unpack_words(stored[0]),)

    @staticmethod
    def document(content_id: int, digest: str, words: str) -> Document:
        """A content as the store takes it, from its id, hash and unpacked words."""
        return (content_id, stamp(digest), (words,))

    def fill(self, document: Any, texts: tuple[str, ...]) -> None:
        document.add_text(self.FIELD, tokens(texts[0]))

    def frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(contents, how many hold each term) as `ContentIndex.frequencies` counts them from
        FTS5, in microseconds: a term the words split (`url_for`) is held by none, as there."""
        searcher = self._index.searcher()
        counts = {
            term: searcher.doc_freq(self.FIELD, term) for term in dict.fromkeys(terms) if "_" not in term
        }
        return int(searcher.num_docs), {term: int(count) for term, count in counts.items() if count}

    def asked(self, terms: Sequence[str]) -> list[Any]:
        return query_tokens(terms)

    def query(self, searcher: Any, asked: list[Any]) -> Any:
        return weighed_query(searcher, self._index.schema, asked)


class DescriptionTopK(TopKStore):
    """What describes each file (`files_fts`), one document per file, by file id, stamped with
    its row's text: each column written DESCRIPTION_WEIGHTS times over, so BM25 counts its terms
    as FTS5's column weights do."""

    WHAT = "description search"
    SUFFIX = "-described"
    FORMAT = "filescout-topk described 1"
    FIELD = "described"
    TOKENIZER = "filescout_described"
    INDEX_OPTION = "position"
    STAMPS_SQL = f"SELECT rowid, {described_stamp('files_fts')} FROM files_fts"
    ROWS_SQL = (
        f"SELECT rowid, {described_stamp('files_fts')}, path, symbols, summary, tags FROM files_fts "
        "WHERE rowid IN (SELECT value FROM json_each(?)) ORDER BY rowid"
    )
    ANY_SQL = "SELECT 1 FROM files_fts LIMIT 1"

    @staticmethod
    def analyzer() -> Any:
        """Cut as FTS5's `porter unicode61 remove_diacritics 2` cuts: at what is not a letter or
        digit (`_` too), lower-cased, accents folded, stemmed (Snowball's English stemmer, the
        nearest tantivy has to Porter's)."""
        tantivy = _tantivy()
        return (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.lowercase())
            .filter(tantivy.Filter.ascii_fold())
            .filter(tantivy.Filter.stemmer("english"))
            .build()
        )

    @staticmethod
    def texts(stored: tuple[Any, ...]) -> tuple[str, ...]:
        return tuple(str(text or "") for text in stored)

    def __init__(self, directory: Path, index: Any, db: Database) -> None:
        super().__init__(directory, index, db)
        self._cut = self.analyzer()

    def fill(self, document: Any, texts: tuple[str, ...]) -> None:
        for text, weight in zip(texts, _WRITTEN, strict=True):
            if text:
                for _ in range(weight):
                    document.add_text(self.FIELD, text)

    def asked(self, terms: Sequence[str]) -> list[Any]:
        """Each term's words, cut as the files' were: a term the cut splits (`url_for`) is a
        phrase, as FTS5 asks for it."""
        phrases = {tuple(self._cut.analyze(term)) for term in terms}
        return sorted(phrase for phrase in phrases if phrase)

    def query(self, searcher: Any, asked: list[Any]) -> Any:
        """Any of the phrases, each weighed by FTS5's IDF: a word's by `fts5_idf_boost`; a
        phrase's, which tantivy takes as the sum of its words' IDFs, by the share FTS5's IDF
        of the phrase (from how many documents hold it) is of that sum."""
        tantivy = _tantivy()
        schema, documents = self._index.schema, searcher.num_docs
        clauses = []
        for phrase in asked:
            if len(phrase) == 1:
                query = tantivy.Query.term_query(schema, self.FIELD, phrase[0])
                boost = fts5_idf_boost(documents, searcher.doc_freq(self.FIELD, phrase[0]))
            else:
                query = tantivy.Query.phrase_query(schema, self.FIELD, list(phrase))
                holding = searcher.search(query, limit=1, count=True).count
                summed = sum(tantivy_idf(documents, searcher.doc_freq(self.FIELD, word)) for word in phrase)
                boost = fts5_idf(documents, holding) / summed if summed > 0 else 1.0
            clauses.append((tantivy.Occur.Should, tantivy.Query.boost_query(query, boost)))
        return tantivy.Query.boolean_query(clauses)


_WRITTEN = tuple(int(weight) for weight in DESCRIPTION_WEIGHTS)
"""How many times the store writes each column: FTS5's weights, whole numbers."""
assert _WRITTEN == DESCRIPTION_WEIGHTS, "the description store needs whole-number column weights"


# -- keeping a store beside an index ------------------------------------------------------------

MERGE_DELAY = 0.05
"""Seconds the writing process lets changes gather before it writes them to the store: the
commits of a burst (a scan's batches, a save of many files) become one store commit (each costs
20-300 ms at 100,000 contents), and the changes that come while it is written go in the next."""
PENDING_BYTES = 4_000_000
"""Words held for the store at most, between the SQLite commits that brought them and the store
commit that takes them: past it (a checkout of many files) the store falls behind: it stops
taking changes and is reconciled once the index is quiet (QUIET), reading the words back from
`contents` a batch at a time, rather than in a commit per batch beside the pass."""
QUIET = 40.0
"""Seconds without a commit to the index before a store that fell behind, or that is to be
built (a cold index, a first start on an index made without one), is reconciled: after the
scan and its annotation, once the annotation workers have stopped (they stop after 30 s idle),
not beside them, where the memory a build takes (60 to 100 MB at 100,000 contents: tantivy's
segments and merges) would add to theirs. FTS5 answers meanwhile."""
LONGEST_BEHIND = 600.0
"""Seconds after which such a store is reconciled however busy the index is (a long backlog of
a model's annotations, each a commit)."""
RETRY_AFTER = 30.0
"""Seconds before a store that failed to open or to take a change is tried again."""
START_DELAY = 1.0
"""Seconds after the index opens before the store is: a command that answers one question and
exits (the CLI) is done by then, without reconciling a store it would not use, and a server's
start-up has the event loop to itself."""

PENDING_ROWS = 20_000
"""Rows to read back for the store at most (the description store is told only which files'
descriptions changed): past it (a model annotating a cold workspace's files in a burst, a
checkout) the store falls behind, as past PENDING_BYTES."""


class TopKKeeper:
    """One index's store, kept in the index's role. The writing process opens it in the
    background (made and reconciled); a reading process opens it for reading, once there is
    one. Opened again when the index's connections change (a reader that took over writing, a
    damaged index replaced by a new one). The writer is told each SQLite commit's changes after
    the commit (`changed`) and writes them on the store's thread, merged. `usable` says whether
    the store can answer now: open, complete, and nothing committed to SQLite waiting to go in
    (removals waiting do not count: the search's stamp check leaves their documents out)."""

    def __init__(self, directory: Path, db: Database, kind: type[TopKStore] = ContentTopK) -> None:
        self.directory = directory
        self._db = db
        self._kind = kind
        self._store: TopKStore | None = None
        self._bound: object | None = None
        """The index's listing reader when the store was opened: another one means the index's
        connections were replaced, and the store is opened again for them."""
        self._opening: asyncio.Task[None] | None = None
        self._feeding: asyncio.Task[None] | None = None
        self._added: dict[int, Document] = {}
        self._removed: set[int] = set()
        self._unsure: set[int] = set()
        """Rows to read back from SQLite as it is: a transaction that touched them failed, so
        whether it committed is not known, or (descriptions) the writer tells only which rows
        changed."""
        self._held = 0
        """Bytes of words in `_added`."""
        self._behind = False
        """Changes were dropped (or failed to go in): the store is reconciled before it answers."""
        self._writing = False
        """A write that adds documents (or a reconciliation) is under way."""
        self._reconciling = False
        self._retry_at = 0.0
        self._behind_since = 0.0
        self._closed = False
        self._never = False
        """tantivy is not there (or is turned off): nothing is ever opened."""
        self._nothing_yet = False
        """The writer found no contents and no store: the first contents open it."""
        self._waiting = False
        """Opening waits for the index to be quiet (a cold index): changes meanwhile are left to
        the reconciliation that opening does."""
        self._started = False
        self._failures = 0
        """Failures to open or write the store: the first is a warning, the rest debug."""

    def start(self) -> None:
        """Open the store in the background, START_DELAY from now; searches use FTS5 until it
        can answer."""
        if not self._started and not self._closed:
            self._started = True
            self._opening = asyncio.create_task(self._open(START_DELAY), name="filescout-topk-open")

    def usable(self) -> TopKStore | None:
        """The store, when it can answer for every row SQLite has committed now."""
        self._look()
        store = self._store
        if store is None or self._added or self._unsure or self._behind or self._writing:
            return None
        return store if store.complete else None

    def changed(self, added: Sequence[Document], removed: Iterable[int] = ()) -> None:
        """After an SQLite commit: these rows came in, those went. Written to the store soon,
        with whatever else comes meanwhile."""
        if self._nothing_yet and added and not self._closed:  # a cold index: built once it is quiet
            self._nothing_yet = False
            self._opening = asyncio.create_task(self._open(quiet=True), name="filescout-topk-open")
            return
        if self._closed or self._never or not (self._store is not None or self._opening is not None):
            return
        if self._waiting:
            return
        if self._behind:  # a reconciliation will find these
            self._look()
            return
        for content_id in removed:
            self._forget(content_id)
            self._removed.add(content_id)
        for row in added:
            self._forget(row[0])
            self._added[row[0]] = row
            self._held += _size(row)
        self._fall_behind_past_bounds()
        self._look()

    def reread(self, ids: Iterable[int]) -> None:
        """These rows are to be read back from SQLite: a transaction that touched them failed,
        perhaps after its commit, or (descriptions) one changed them. For a store waiting to be
        built, or behind, the reconciliation finds them."""
        ids = list(ids)
        if self._nothing_yet and ids and not self._closed:  # a cold index: built once it is quiet
            self._nothing_yet = False
            self._opening = asyncio.create_task(self._open(quiet=True), name="filescout-topk-open")
            return
        if self._closed or self._never or self._waiting:
            return
        if not (self._store is not None or self._opening is not None):
            return
        if not self._behind:
            self._unsure.update(ids)
            self._fall_behind_past_bounds()
        self._look()

    def _fall_behind_past_bounds(self) -> None:
        """Past PENDING_BYTES of words, or PENDING_ROWS to read back, drop what waits: the store
        is reconciled once the index is quiet."""
        if self._held > PENDING_BYTES or len(self._unsure) > PENDING_ROWS:
            self._added.clear()
            self._removed.clear()
            self._unsure.clear()
            self._held = 0
            self._behind, self._behind_since = True, time.monotonic()

    def _forget(self, row_id: int) -> None:
        row = self._added.pop(row_id, None)
        if row is not None:
            self._held -= _size(row)

    def _look(self) -> None:
        """Open the store when it should be and is not (or was opened for other connections),
        and write what waits for it."""
        if self._closed or self._never or self._nothing_yet or not self._started:
            return
        if self._opening is not None:
            return
        if self._store is not None and self._db.reader is not self._bound:
            self._opening = asyncio.create_task(self._open(), name="filescout-topk-open")
            return
        if self._store is None:
            if time.monotonic() >= self._retry_at:
                self._opening = asyncio.create_task(self._open(), name="filescout-topk-open")
            return
        waiting = self._added or self._removed or self._unsure or self._behind
        if waiting and self._feeding is None and self._db.writable and time.monotonic() >= self._retry_at:
            self._feeding = asyncio.create_task(self._feed(), name="filescout-topk-feed")

    def failed(self) -> None:
        """tantivy failed to search the store: it is closed, and opened again after RETRY_AFTER
        (a writer makes it anew if it is damaged)."""
        if self._store is not None and self._opening is None and not self._closed:
            self._opening = asyncio.create_task(self._open(RETRY_AFTER), name="filescout-topk-open")

    def _failed(self, what: str) -> None:
        """The store failed to open or to write (logged from inside the handler, with the
        exception): the first failure is a warning, the rest debug; tried again after
        RETRY_AFTER."""
        log.log(
            logging.DEBUG if self._failures else logging.WARNING,
            "the %s's top-k store at %s %s in %.0f s",
            self._kind.WHAT,
            self.directory,
            what,
            RETRY_AFTER,
            exc_info=True,
        )
        self._failures += 1
        self._retry_at = time.monotonic() + RETRY_AFTER

    async def _quiet(self, since: float) -> bool:
        """Wait QUIET seconds; whether the index had no commit meanwhile (or has been busy since
        `since` for LONGEST_BEHIND)."""
        busy = self._db.generation
        await asyncio.sleep(QUIET)
        return self._db.generation == busy or time.monotonic() >= since + LONGEST_BEHIND

    async def _open(self, delay: float = 0.0, *, quiet: bool = False) -> None:
        try:
            previous, self._store = self._store, None
            if previous is not None:
                await self._stop_feeding(previous)
                try:
                    await previous.close()
                except Exception:  # a failing store: its files are opened again below
                    log.debug("closing the top-k store at %s", self.directory, exc_info=True)
            if delay:
                await asyncio.sleep(delay)
            if not await asyncio.to_thread(available):
                self._never = True
                return
            if self._db.writable and not await asyncio.to_thread(_marked, self._kind, self.directory):
                quiet = True  # a store to build: once the index is quiet
            if quiet:
                self._waiting, since = True, time.monotonic()
                try:
                    while not await self._quiet(since):
                        pass
                finally:
                    self._waiting = False
            bound = self._db.reader
            try:
                async with self._db.store_builds:
                    store = await self._kind.open(self.directory, self._db)
            except NothingYet:
                self._nothing_yet = True
                return
            except TopKUnavailable as exc:
                if self._db.writable:  # something not the store's where it would be: said once
                    log.warning("the %s's top-k store is not used: %s", self._kind.WHAT, exc)
                    self._never = True
                self._retry_at = time.monotonic() + RETRY_AFTER  # a reader: the writer makes one
                return
            except Stopped:
                return
            except Exception:
                self._failed("cannot be opened; the full-text index answers, and it is tried again")
                return
            if self._closed:
                await store.close()
                return
            await store.rest()
            self._store, self._bound = store, bound
        finally:
            self._opening = None
        self._look()

    def _take(self) -> tuple[bool, dict[int, Document], set[int], set[int]]:
        taken = (self._behind, self._added, self._removed, self._unsure)
        self._behind, self._added, self._removed, self._unsure, self._held = False, {}, set(), set(), 0
        return taken

    async def _feed(self) -> None:
        """Write what waits, a merged batch at a time, until nothing does."""
        try:
            await asyncio.sleep(MERGE_DELAY)
            while (store := self._store) is not None and not self._closed:
                if self._behind:
                    await store.fall_behind()
                    if not await self._quiet(self._behind_since):
                        continue
                elif not (self._added or self._removed or self._unsure):
                    await store.rest()
                    if not (self._added or self._removed or self._unsure or self._behind):
                        break
                    continue
                await self._write_once(store)
                if time.monotonic() < self._retry_at:  # it failed: tried again later
                    break
        finally:
            self._feeding = None

    async def _write_once(self, store: TopKStore) -> None:
        behind, added, removed, unsure = self._take()
        self._writing = behind or bool(added) or bool(unsure)
        self._reconciling = behind
        try:
            if behind:
                async with self._db.store_builds:
                    await store.reconcile()
                return
            if unsure:  # what SQLite has now is newer than anything told
                wanted = sorted(unsure)
                read = {
                    row[0]: row
                    for start in range(0, len(wanted), READ_BATCH * 10)
                    for row in await store.read(wanted[start : start + READ_BATCH * 10])
                }
                for row_id in unsure:
                    if row_id in read:
                        added[row_id] = read[row_id]
                    else:
                        added.pop(row_id, None)
                        removed.add(row_id)
            await store.apply(list(added.values()), removed)
        except asyncio.CancelledError:
            self._behind = self._behind or self._writing  # the store lacks what it was taking
            raise
        except Stopped:  # closing: the next opening reconciles
            self._behind = True
        except Exception:
            self._failed(
                "could not take a change; the full-text index answers until it is reconciled, tried again"
            )
            self._behind = True
        finally:
            self._writing = self._reconciling = False

    async def _stop_feeding(self, store: TopKStore) -> None:
        """Let a store commit under way finish; a reconciliation is given up, rolled back (the
        next one does it again)."""
        feeding = self._feeding
        if feeding is None:
            return
        if self._reconciling:
            store._stopping = True
            feeding.cancel()
        await asyncio.wait({feeding})

    async def settled(self) -> bool:
        """Wait until the store is open and has taken every change it was told of; whether it
        answers now. For benchmarks and tests: a search never waits for the store."""
        while tasks := [
            task for task in (self._opening, self._feeding) if task is not None and not task.done()
        ]:
            await asyncio.wait(tasks)
        return self.usable() is not None

    async def close(self) -> None:
        """Stop opening or reconciling (the next opening resumes), write what waits in one last
        commit, and close the store."""
        self._closed = True
        opening = self._opening
        if opening is not None:
            opening.cancel()
            await asyncio.wait({opening})
        store, self._store = self._store, None
        if store is None:
            return
        try:
            await self._stop_feeding(store)
            behind, added, removed, unsure = self._take()
            if self._db.writable and (behind or unsure):
                await store.fall_behind()
            elif self._db.writable and (added or removed):
                await store.apply(list(added.values()), removed)
        except Exception:
            log.warning("the %s's top-k store at %s missed its last changes", self._kind.WHAT, self.directory)
        finally:
            await store.close()

    def stop_threads(self) -> None:
        self._closed = True
        if self._store is not None:
            self._store.stop_threads()


def _size(row: Document) -> int:
    return sum(len(text) for text in row[2])
