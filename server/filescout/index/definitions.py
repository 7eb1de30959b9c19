"""What each content defines, described: `definitions` and `definitions_fts`.

Kept per content like the content index (one `definitions` row per `contents` row, so copies and
renames share them, and they go when the content goes). The full-text table holds one row per
definition — its name, container, signature and doc comment as identifier-aware words — so a
question can match one function of a large file, which the file-level searches weigh against all
of the file's other words.

Compact on purpose (there are some thirty definitions to a file): a content's definitions are one
row of two packed blobs, the records (MessagePack, each definition packed on its own so a search
unpacks only those it found; not compressed: decompressing the contents a search hits doubled its
time, for 21 MB on 20,000 files) and their words (compressed: read only to remove them). Each
definition's full-text row id is its content's row id and its ordinal (`content id <<
ORDINAL_BITS | ordinal`), so a hit finds its content and definition with no per-definition row
and no index on a hash. The full-text table is contentless (its words are kept once, packed:
removing a row from it names its words again), with positions: on a `detail = column` table
SQLite's BM25 counts a word's occurrences by reading the row's text again, which a contentless
table has not (every score would be 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from filescout.core.packing import ORDINAL_BITS, ORDINALS, unpack, unpack_each, unpack_one, unpack_words
from filescout.core.records import Definition, DefinitionHit, PreparedDefinitions
from filescout.index.database import Database, json_list

DefinitionWeights = tuple[float, float, float, float]
"""BM25 column weights: name, container, signature, doc."""


class DefinitionIndex:
    def __init__(self, db: Database) -> None:
        self._db = db

    @staticmethod
    async def store(db: aiosqlite.Connection, found: Sequence[tuple[str, PreparedDefinitions]]) -> None:
        """Inside a transaction: these contents define these (replacing what they defined
        before: a newer annotator may describe them differently). A content the index has no
        row of (forgotten meanwhile: no file has it) is left out."""
        by_hash = dict(found)
        if not by_hash:
            return
        rows = await db.execute_fetchall(
            "SELECT id, hash FROM contents WHERE hash IN (SELECT value FROM json_each(?))",
            (json_list(by_hash),),
        )
        by_id = {int(content_id): by_hash[digest] for content_id, digest in sorted(rows)}
        if not by_id:
            return
        await DefinitionIndex.drop(db, list(by_id))
        await db.executemany(
            "INSERT INTO definitions(content_id, described, words) VALUES (?, ?, ?)",
            [
                (content_id, item.described, item.words)
                for content_id, item in by_id.items()
                if item.searchable
            ],
        )
        await db.executemany(
            "INSERT INTO definitions_fts(rowid, name, container, signature, doc) VALUES (?, ?, ?, ?, ?)",
            [
                ((content_id << ORDINAL_BITS) | ordinal, *words)
                for content_id, item in by_id.items()
                for ordinal, words in enumerate(item.searchable)
            ],
        )

    @staticmethod
    async def drop(db: aiosqlite.Connection, content_ids: Sequence[int]) -> None:
        """Inside a transaction: forget what these contents define."""
        rows = await db.execute_fetchall(
            "SELECT content_id, words FROM definitions WHERE content_id IN (SELECT value FROM json_each(?)) "
            "ORDER BY content_id",
            (json_list(content_ids),),
        )
        await DefinitionIndex._remove(db, [(int(content_id), words) for content_id, words in rows])

    @staticmethod
    async def drop_orphans(db: aiosqlite.Connection) -> None:
        """Inside a transaction, before the contents no file has any more are forgotten: forget
        what they define."""
        rows = await db.execute_fetchall(
            """
            SELECT d.content_id, d.words FROM definitions AS d
            LEFT JOIN contents AS c ON c.id = d.content_id
            WHERE c.id IS NULL OR NOT EXISTS (SELECT 1 FROM files AS f WHERE f.hash = c.hash)
            ORDER BY d.content_id
            """
        )
        await DefinitionIndex._remove(db, [(int(content_id), words) for content_id, words in rows])

    @staticmethod
    async def _remove(db: aiosqlite.Connection, rows: Sequence[tuple[int, bytes]]) -> None:
        if not rows:
            return
        await db.executemany(
            "INSERT INTO definitions_fts(definitions_fts, rowid, name, container, signature, doc) "
            "VALUES ('delete', ?, ?, ?, ?, ?)",
            [
                ((content_id << ORDINAL_BITS) | ordinal, *words)
                for content_id, packed in rows
                for ordinal, words in enumerate(unpack_words(packed))
            ],
        )
        await db.executemany(
            "DELETE FROM definitions WHERE content_id = ?", [(content_id,) for content_id, _ in rows]
        )

    async def of(self, digest: str) -> list[Definition]:
        """What one content defines, in the order it defines them."""
        rows = list(
            await self._db.reader.execute_fetchall(
                "SELECT d.described FROM definitions AS d JOIN contents AS c ON c.id = d.content_id "
                "WHERE c.hash = ?",
                (digest,),
            )
        )
        return unpack(rows[0][0]) if rows else []

    async def search(self, match: str, *, limit: int, weights: DefinitionWeights) -> list[DefinitionHit]:
        """The best `limit` definitions for an FTS5 expression, each in every file with its
        content (BM25 with column weights, as a positive score)."""
        weighted = ", ".join(str(float(w)) for w in weights)
        async with self._db.questions.connection() as reader:
            rows = list(
                await reader.execute_fetchall(
                    f"""
                    SELECT hit.rowid, hit.score, f.path, f.kind, ac.rank FROM (
                        SELECT rowid, bm25(definitions_fts, {weighted}) AS score
                        FROM definitions_fts WHERE definitions_fts MATCH ? ORDER BY score LIMIT ?
                    ) AS hit
                    JOIN contents AS c ON c.id = hit.rowid >> {ORDINAL_BITS}
                    JOIN files AS f ON f.hash = c.hash
                    LEFT JOIN access AS ac ON ac.path = f.path
                    """,
                    (match, limit),
                )
            )
            # Each content's definitions read and unpacked once (a content has many hits, and
            # many files), and only the hits' made records: making all cost more than the search.
            described = await reader.execute_fetchall(
                "SELECT content_id, described FROM definitions "
                "WHERE content_id IN (SELECT value FROM json_each(?))",
                (json_list({rowid >> ORDINAL_BITS for rowid, *_ in rows}),),
            )
        unpacked = {content_id: unpack_each(packed) for content_id, packed in described}
        hits = []
        for rowid, score, path, file_kind, rank in rows:
            definitions = unpacked.get(rowid >> ORDINAL_BITS)
            if definitions is not None:
                found = unpack_one(definitions[rowid & (ORDINALS - 1)])
                hits.append(DefinitionHit(path, -score, found, file_kind, rank))
        return hits
