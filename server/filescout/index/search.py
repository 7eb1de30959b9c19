"""The two full-text indexes: what describes a file, and what its content says.

`files_fts` holds each file's path words, symbols, summary and tags (rebuilt when the file or
the annotation it shows changes). `body_fts` holds content words once per content hash (copies
and renames share them); it is contentless — a third of the size of an FTS5 table that keeps the
text, as fast to query — so the words also go in `contents`, compressed, because removing a row
from such an index means naming the words it was indexed with.

Every full-text write here and in `definitions.py` goes in row-id order, as plain `VALUES`: FTS5
writes what it holds as a new segment whenever a row id comes out of order or a statement opens
a savepoint (an `INSERT ... SELECT` does), and a segment per file, merged again and again, had
made these writes most of a cold index's writer time.

The content words are also kept in a tantivy store beside the index once the engine asks for it
(`ContentIndex.keep_store`, topk.py): it ranks the exact top k over every term of a question in
a few milliseconds where FTS5 scores every row that holds any of them, so a question's content
search counts every term (`search_words`). FTS5 answers whenever the store cannot: tantivy not
installed, the store still being built or reconciled, or a commit's contents not in it yet.

What describes each file is kept in a second such store (`DescriptionIndex.keep_store`): FTS5
scores every row holding any term, ten thousand rows for a question's rarer terms at 100,000
files, and the store ranks the same rows' top k over every term in a millisecond or two. The
writers here only say which files' rows they wrote (`changes`), and the store reads them back
after the commit.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import aiosqlite
import msgspec

from filescout.core.records import IndexWords, SearchHit, TextStatistics
from filescout.core.words import join_words, pack_words, path_words, unpack_words
from filescout.index.database import Database, content_stamp, json_list
from filescout.index.described import DESCRIPTION_WEIGHTS, DescriptionWeights, described_stamp

# The store's module (and tantivy) is imported once a server keeps the store: a one-shot command
# never does.
if TYPE_CHECKING:
    from filescout.index.topk import TopKKeeper

log = logging.getLogger(__name__)

_decode_list = msgspec.json.Decoder(list[str]).decode

_described: ContextVar[set[int] | None] = ContextVar("filescout_described", default=None)
"""The file ids whose `files_fts` rows the write transaction under way rewrote or dropped, for
the top-k store once it has committed (`DescriptionIndex.changes`): the writers are static and
called from several rooms' transactions, so they note the ids here rather than return them."""


def _note_described(file_ids: Iterable[int]) -> None:
    touched = _described.get()
    if touched is not None:
        touched.update(file_ids)


DESCRIBED_HITS_SQL = f"""
    SELECT hit.key, f.path, f.kind, ac.rank FROM json_each(?) AS hit
    JOIN files_fts AS d ON d.rowid = hit.value ->> 0
    JOIN files AS f ON f.id = d.rowid
    LEFT JOIN access AS ac ON ac.path = f.path
    WHERE {described_stamp("d")} = hit.value ->> 1
    ORDER BY hit.key
"""
"""The description store's hits, [file id, stamp] each in a JSON array, best first, checked
against `files_fts` and turned into files in one statement (one snapshot): a file gone, or
described otherwise since, gives no row."""


KEPT_FREQUENCIES = 10_000
"""Terms whose counts the writing process keeps between its commits, at most."""


@dataclass(slots=True)
class _Frequencies:
    """How many indexed contents contain each term, as read under one writer generation."""

    generation: int
    total: int = -1
    """Indexed contents; -1 until read."""
    contents: dict[str, int] = field(default_factory=dict)


class _KeptStore:
    """A full-text table's top-k store (topk.py), kept once a server asks for it: its searches
    ask the store whenever it can answer."""

    STORE: str
    """The store's class in topk.py (imported only once a store is kept)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._keeper: TopKKeeper | None = None

    def keep_store(self, directory: Path) -> None:
        """Keep the top-k store in `directory` from now on (opened in the background) and
        search it whenever it can answer."""
        from filescout.index import topk

        if self._keeper is None:
            self._keeper = topk.TopKKeeper(directory, self._db, getattr(topk, self.STORE))
        self._keeper.start()

    @property
    def exact(self) -> bool:
        """Whether the search now counts every term: the store can answer."""
        return self._keeper is not None and self._keeper.usable() is not None

    async def store_settled(self) -> bool:
        """Wait until the store is open and has every change it was told of; whether it can
        answer. For benchmarks and tests: a search never waits for the store."""
        return self._keeper is not None and await self._keeper.settled()

    async def close_store(self) -> None:
        if self._keeper is not None:
            await self._keeper.close()

    def stop_store_threads(self) -> None:
        if self._keeper is not None:
            self._keeper.stop_threads()


class DescriptionIndex(_KeptStore):
    """`files_fts`: BM25 over what describes each file; and the top-k store of the same rows,
    when kept."""

    STORE = "DescriptionTopK"

    @asynccontextmanager
    async def changes(self) -> AsyncIterator[None]:
        """Around a write transaction that may rewrite descriptions (entered before it, left
        after its commit): the top-k store reads back the rows it touched, once it has
        committed or failed."""
        touched: set[int] = set()
        token = _described.set(touched)
        try:
            yield
        finally:
            _described.reset(token)
            if self._keeper is not None and touched:
                self._keeper.reread(touched)

    @staticmethod
    async def refresh(db: aiosqlite.Connection, paths: Iterable[str]) -> None:
        """Inside a transaction: rebuild the rows of `paths` from the files' rows and the
        annotations they show."""
        rows = await db.execute_fetchall(
            """
            SELECT f.id, f.path, COALESCE(a.symbols, '[]'), f.tags, f.summary
            FROM files AS f
            LEFT JOIN annotations AS a ON a.hash = f.hash AND a.annotator = f.annotator
            WHERE f.path IN (SELECT value FROM json_each(?))
            ORDER BY f.id
            """,
            (json_list(paths),),
        )
        await DescriptionIndex._replace(
            db,
            [
                (file_id, path, join_words(_decode_list(symbols)), join_words(_decode_list(tags)), summary)
                for file_id, path, symbols, tags, summary in rows
            ],
        )

    @staticmethod
    async def rewrite(
        db: aiosqlite.Connection,
        rows: Sequence[tuple[int, str, str, IndexWords | None, Sequence[str], Sequence[str]]],
    ) -> None:
        """Inside a transaction: replace the rows of these files, in row-id order, from what
        they now show — (file id, path, summary, words found where the annotation was made or
        None, symbols, tags) — with nothing read back."""
        await DescriptionIndex._replace(
            db,
            [
                (
                    file_id,
                    path,
                    *((words.symbols, words.tags) if words else (join_words(symbols), join_words(tags))),
                    summary,
                )
                for file_id, path, summary, words, symbols, tags in rows
            ],
        )

    @staticmethod
    async def _replace(db: aiosqlite.Connection, rows: Sequence[tuple[int, str, str, str, str]]) -> None:
        """(file id, path, symbols' words, tags' words, summary), in row-id order."""
        if not rows:
            return
        _note_described(row[0] for row in rows)
        await db.executemany("DELETE FROM files_fts WHERE rowid = ?", [(row[0],) for row in rows])
        await db.executemany(
            "INSERT INTO files_fts(rowid, path, symbols, tags, summary) VALUES (?, ?, ?, ?, ?)",
            [
                (file_id, path_words(path), symbols, tags, summary)
                for file_id, path, symbols, tags, summary in rows
            ],
        )

    @staticmethod
    async def forget(db: aiosqlite.Connection, gone: str) -> None:
        """Inside a transaction, before the files' rows go: drop the rows of the paths in the
        JSON array `gone`."""
        rows = await db.execute_fetchall(
            "SELECT id FROM files WHERE path IN (SELECT value FROM json_each(?))", (gone,)
        )
        file_ids = [int(row[0]) for row in rows]
        _note_described(file_ids)
        await db.execute(
            "DELETE FROM files_fts WHERE rowid IN (SELECT value FROM json_each(?))", (json_list(file_ids),)
        )

    async def search(self, match: str, *, limit: int, weights: DescriptionWeights) -> list[SearchHit]:
        """BM25 with column weights (SQLite ranks lower-is-better; returned as a positive
        score, higher is better)."""
        rows = await self._db.questions.fetchall(
            f"""
            SELECT f.path, hit.score, f.kind, ac.rank FROM (
                SELECT rowid, bm25(files_fts, {", ".join(str(float(w)) for w in weights)}) AS score
                FROM files_fts WHERE files_fts MATCH ? ORDER BY score LIMIT ?
            ) AS hit JOIN files AS f ON f.id = hit.rowid
            LEFT JOIN access AS ac ON ac.path = f.path
            """,
            (match, limit),
        )
        return [SearchHit(path, -score, kind, rank) for path, score, kind, rank in rows]

    async def search_terms(
        self, terms: Sequence[str], *, limit: int, weights: DescriptionWeights, fallback: str | None
    ) -> list[SearchHit]:
        """The best `limit` files for `terms`: from the top-k store, every term counted, when it
        can answer now (and ranks with `weights`); else FTS5's for the expression `fallback`
        (the terms a scan of FTS5 can afford), or none without one. A store tantivy fails to
        read is closed and opened again later; SQLite's errors are raised."""
        keeper = self._keeper if weights == DESCRIPTION_WEIGHTS else None
        store = keeper.usable() if keeper is not None else None
        if store is not None:
            from filescout.index.topk import TopKFailed

            try:
                return await store.ranked(terms, limit=limit, keep=self._files_of)
            except TopKFailed as exc:
                log.warning("the description search's top-k store failed (%s): FTS5 answers", exc)
                assert keeper is not None
                keeper.failed()
        return await self.search(fallback, limit=limit, weights=weights) if fallback else []

    async def _files_of(self, hits: list[tuple[int, int, float]]) -> list[SearchHit]:
        """The file of each hit whose description `files_fts` still has as it was, in the hits'
        order; nothing for the others."""
        if not hits:
            return []
        rows = await self._db.questions.fetchall(
            DESCRIBED_HITS_SQL, (json_list((file_id, made_from) for file_id, made_from, _ in hits),)
        )
        return [SearchHit(path, hits[key][2], kind, rank) for key, path, kind, rank in rows]

    async def statistics(self, phrases: Sequence[str]) -> TextStatistics:
        """The rows, their average length and how many hold each phrase (`"url_for"`, as the
        search would be asked it)."""
        async with self._db.questions.connection() as reader:
            rows, tokens = await _averages(reader, "files_fts")
            holding: dict[str, int] = {}
            for phrase in dict.fromkeys(phrases):
                ((count,),) = await reader.execute_fetchall(
                    "SELECT count(*) FROM files_fts WHERE files_fts MATCH ?", (phrase,)
                )
                holding[phrase] = int(count)
        return TextStatistics(rows, tokens / rows if rows else 0.0, holding)


async def _averages(reader: aiosqlite.Connection, table: str) -> tuple[int, int]:
    """(rows, tokens in all columns) from FTS5's averages record, which its BM25 reads: the
    varints at row 1 of the table's data, rows first, then each column's tokens."""
    found = list(await reader.execute_fetchall(f"SELECT block FROM {table}_data WHERE id = 1"))
    numbers = _varints(bytes(found[0][0])) if found else []
    return (numbers[0], sum(numbers[1:])) if numbers else (0, 0)


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints: seven bits a byte, high bit set on all but the last; a ninth byte
    gives all eight."""
    numbers, at = [], 0
    while at < len(blob):
        value = 0
        for position in range(9):
            byte = blob[at]
            at += 1
            if position == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        numbers.append(value)
    return numbers


@dataclass
class ContentChanges:
    """What one transaction did to `contents`, for the top-k store once it has committed."""

    added: list[tuple[int, str, str]] = field(default_factory=list)
    """(content id, hash, words) of the contents it added."""
    removed: list[int] = field(default_factory=list)
    """Content ids it deleted."""


CONTENT_HITS_SQL = """
    SELECT hit.key, f.path, f.kind, ac.rank FROM json_each(?) AS hit
    JOIN contents AS c ON c.id = hit.value ->> 0 AND content_stamp(c.hash) = hit.value ->> 1
    LEFT JOIN files AS f ON f.hash = c.hash
    LEFT JOIN access AS ac ON ac.path = f.path
    ORDER BY hit.key
"""
"""The store's hits, [content id, stamp] each in a JSON array, best first, checked against
`contents` and turned into files in one statement (one snapshot): a content that is gone, or
whose id another content now has, gives no row; one no file shows, a row without a path."""


class ContentIndex(_KeptStore):
    """`contents` and `body_fts`: BM25 over content words, once per content hash; and the
    top-k store of the same words, when kept."""

    STORE = "ContentTopK"

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._counted = _Frequencies(generation=-1)

    @asynccontextmanager
    async def changes(self) -> AsyncIterator[ContentChanges]:
        """Around a write transaction that adds or deletes contents (entered before it, left
        after its commit): the top-k store is told what it did once it has committed, never
        inside it. When it fails, the store reads back the contents it touched, since the
        commit may have been done."""
        changes = ContentChanges()
        try:
            yield changes
        except BaseException:
            if self._keeper is not None and (changes.added or changes.removed):
                self._keeper.reread([row[0] for row in changes.added] + changes.removed)
            raise
        if self._keeper is not None and (changes.added or changes.removed):
            self._keeper.changed(
                [(row_id, content_stamp(digest), (words,)) for row_id, digest, words in changes.added],
                changes.removed,
            )

    # -- writing -----------------------------------------------------------------------------

    @staticmethod
    async def store(
        db: aiosqlite.Connection, bodies: Sequence[tuple[str, str]]
    ) -> list[tuple[int, str, str]]:
        """Inside a transaction: index the words of contents not indexed yet. Returns (content
        id, hash, words) of those it added."""
        return await ContentIndex.store_packed(
            db, [(digest, body, pack_words(body)) for digest, body in bodies]
        )

    @staticmethod
    async def store_packed(
        db: aiosqlite.Connection, bodies: Sequence[tuple[str, str, bytes]]
    ) -> list[tuple[int, str, str]]:
        """Inside a transaction: index the words of contents not indexed yet, given with their
        packed form (`text.pack_words`, made where they were found: a worker process). Returns
        (content id, hash, words) of those it added."""
        if not bodies:
            return []
        rows = await db.execute_fetchall(
            "SELECT hash FROM contents WHERE hash IN (SELECT value FROM json_each(?))",
            (json_list(digest for digest, _, _ in bodies),),
        )
        present = {row[0] for row in rows}
        fresh = {digest: (body, packed) for digest, body, packed in bodies if digest not in present}
        if not fresh:
            return []
        await db.executemany(
            "INSERT INTO contents(hash, words) VALUES (?, ?)",
            [(digest, packed) for digest, (_, packed) in fresh.items()],
        )
        rows = await db.execute_fetchall(
            "SELECT id, hash FROM contents WHERE hash IN (SELECT value FROM json_each(?)) ORDER BY id",
            (json_list(fresh),),
        )
        await db.executemany(
            "INSERT INTO body_fts(rowid, body) VALUES (?, ?)",
            [(content_id, fresh[digest][0]) for content_id, digest in rows],
        )
        return [(int(content_id), str(digest), fresh[digest][0]) for content_id, digest in rows]

    async def missing(self, hashes: Iterable[str]) -> set[str]:
        """Which of these contents have no words in the index (indexed by an older version,
        or forgotten since)."""
        wanted = set(hashes)
        rows = await self._db.reader.execute_fetchall(
            "SELECT hash FROM contents WHERE hash IN (SELECT value FROM json_each(?))",
            (json_list(wanted),),
        )
        return wanted - {row[0] for row in rows}

    @staticmethod
    async def drop_orphans(db: aiosqlite.Connection) -> list[tuple[int, str]]:
        """Inside a transaction: forget the words of contents no file has any more (after
        deletions and edits). Returns those contents' ids and hashes."""
        rows = list(
            await db.execute_fetchall(
                "SELECT id, hash, words FROM contents WHERE hash NOT IN (SELECT hash FROM files) ORDER BY id"
            )
        )
        if rows:
            await db.executemany(
                "INSERT INTO body_fts(body_fts, rowid, body) VALUES ('delete', ?, ?)",
                [(content_id, unpack_words(words)) for content_id, _, words in rows],
            )
            await db.executemany(
                "DELETE FROM contents WHERE id = ?", [(content_id,) for content_id, _, _ in rows]
            )
        return [(int(content_id), str(digest)) for content_id, digest, _ in rows]

    async def frequencies(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(indexed contents, how many contain each term): to drop terms too common to tell
        files apart before they cost a scan of most of the index. Counting a common term's
        contents walks its whole list (milliseconds at 100K files, before every search of a
        question), so the writing process keeps the counts until its next commit: questions
        share most of their words. While the top-k store can answer, its own counts answer at once
        (they count a content deleted since the store last merged its segments: a few, for a
        choice of which terms to search)."""
        store = self._keeper.usable() if self._keeper is not None else None
        if store is not None:
            from filescout.index.topk import ContentTopK

            assert isinstance(store, ContentTopK)
            try:
                return store.frequencies(terms)
            except (ValueError, OSError, RuntimeError):  # what tantivy raises for its files
                log.debug("the top-k store could not count terms; FTS5 counts them", exc_info=True)
        generation = self._db.generation
        counted = self._counted
        if counted.generation != generation or len(counted.contents) > KEPT_FREQUENCIES:
            counted = _Frequencies(generation)
        wanted = [term for term in dict.fromkeys(terms) if term not in counted.contents]
        if wanted or counted.total < 0:
            total, found = await self._count(wanted)
            if generation != self._db.generation:  # a commit meanwhile: nothing kept is current
                return await self._count(terms)
            counted.total = total
            counted.contents.update(dict.fromkeys(wanted, 0))
            counted.contents.update(found)
        if self._db.writable:  # another process's commits would not show in the generation
            self._counted = counted
        return counted.total, {term: counted.contents[term] for term in terms if counted.contents[term]}

    async def _count(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        async with self._db.questions.connection() as reader:
            ((total,),) = await reader.execute_fetchall("SELECT count(*) FROM contents")
            rows = await reader.execute_fetchall(
                "SELECT term, doc FROM body_terms WHERE term IN (SELECT value FROM json_each(?))",
                (json_list(terms),),
            )
        return int(total), {str(term): int(documents) for term, documents in rows}

    async def statistics(self, terms: Sequence[str]) -> TextStatistics:
        """The contents, their average length in words and how many hold each term."""
        async with self._db.questions.connection() as reader:
            rows, tokens = await _averages(reader, "body_fts")
        _, holding = await self._count(terms)  # FTS5's own counts: its BM25 is recomputed from them
        return TextStatistics(rows, tokens / rows if rows else 0.0, holding)

    async def search(self, match: str, *, limit: int) -> list[SearchHit]:
        """BM25 over content words; every path with a matching content is a hit. Takes its own
        question reader, so it overlaps with the description search."""
        rows = await self._db.questions.fetchall(
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

    async def search_words(
        self, terms: Sequence[str], *, limit: int, fallback: str | None
    ) -> list[SearchHit]:
        """The files of the best `limit` contents for `terms`: from the top-k store, every term
        counted, when it can answer now; else FTS5's for the expression `fallback` (the terms a
        scan of FTS5 can afford: the caller drops common ones), or none without one. A store
        tantivy fails to read is closed and opened again later; SQLite's errors are raised."""
        store = self._keeper.usable() if self._keeper is not None else None
        if store is not None:
            from filescout.index.topk import TopKFailed

            try:
                found = await store.ranked(terms, limit=limit, keep=self._files_of)
            except TopKFailed as exc:
                log.warning("the content search's top-k store failed (%s): the full-text index answers", exc)
                assert self._keeper is not None
                self._keeper.failed()
            else:
                return [hit for hits in found for hit in hits]
        return await self.search(fallback, limit=limit) if fallback else []

    async def _files_of(self, hits: list[tuple[int, int, float]]) -> list[list[SearchHit]]:
        """The files of each hit whose content `contents` still has as it was, in the hits'
        order ([] for such a content no file shows); nothing for the others."""
        if not hits:
            return []
        rows = await self._db.questions.fetchall(
            CONTENT_HITS_SQL, (json_list((content_id, made_from) for content_id, made_from, _ in hits),)
        )
        found: dict[int, list[SearchHit]] = {}
        for key, path, kind, rank in rows:
            files = found.setdefault(int(key), [])
            if path is not None:
                files.append(SearchHit(path, hits[key][2], kind, rank))
        return list(found.values())
