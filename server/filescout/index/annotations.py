"""Annotations keyed by (content hash, annotator id): the `annotations` table. A renamed, copied
or reverted file finds its annotation already there, and a new annotator fills in beside the
old one, which keeps showing until the new one arrives."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Sequence

import msgspec

from filescout.core.packing import prepare
from filescout.core.records import Annotation, PendingFile, PreparedDefinitions
from filescout.index.catalogue import Catalogue
from filescout.index.database import Database, json_list
from filescout.index.definitions import DefinitionIndex
from filescout.index.search import ContentIndex, DescriptionIndex

_decode_list = msgspec.json.Decoder(list[str]).decode
_encode = msgspec.json.encode

# Annotators computed on this machine from the file itself; a new version of one replaces the
# old one's annotations (content-addressed like the rest, so unchanged content is redone once).
MACHINE_ANNOTATORS = ("structural/", "heuristic/")
KIND_ORDER_SQL = """CASE f.kind WHEN 'source' THEN 0 WHEN 'test' THEN 1 WHEN 'config' THEN 2
    WHEN 'docs' THEN 3 WHEN 'other' THEN 4 ELSE 5 END"""


def _prepared_definitions(item: Annotation) -> PreparedDefinitions | None:
    """What the annotation defines, as the index keeps it: prepared by the worker that made it,
    or here."""
    if item.words is not None and item.words.definitions is not None:
        return item.words.definitions
    return prepare(item.definitions) if item.definitions is not None else None


class Annotations:
    def __init__(
        self, db: Database, contents: ContentIndex | None = None, descriptions: DescriptionIndex | None = None
    ) -> None:
        self._db = db
        self._contents = contents if contents is not None else ContentIndex(db)
        """Told of the contents a transaction adds or forgets, for the top-k store."""
        self._descriptions = descriptions if descriptions is not None else DescriptionIndex(db)
        """Told of the descriptions a transaction rewrites, for their top-k store."""

    async def save(
        self, annotator: str, annotations: Sequence[tuple[str, Annotation]], *, replace: bool = True
    ) -> None:
        """Store annotations by content hash and show them on every file with that content,
        in one transaction (the content words go to the content index too). `replace=False`
        only fills files that show nothing yet (a fallback annotator)."""
        if not annotations:
            return
        now = int(time.time())
        async with (
            self._contents.changes() as stored,
            self._descriptions.changes(),
            self._db.transaction() as db,
        ):
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
                    (
                        digest,
                        annotator,
                        item.summary,
                        _encode(item.tags).decode(),
                        _encode(item.symbols).decode(),
                        _encode(item.imports).decode(),
                        item.input_tokens,
                        item.output_tokens,
                        now,
                    )
                    for digest, item in annotations
                ],
            )
            bodies = [(digest, item.body) for digest, item in annotations if item.body is not None]
            if bodies:
                stored.added += await ContentIndex.store(db, bodies)
            described = [
                (digest, prepared)
                for digest, item in annotations
                if (prepared := _prepared_definitions(item)) is not None
            ]
            if described:
                await DefinitionIndex.store(db, described)
            await Catalogue.show(db, annotator, annotations, replace=replace)

    async def drop_orphans(self) -> int:
        """Forget the content words and definitions of contents no file has any more, and the
        machine annotations made from them, in one transaction: content that comes back (a deleted
        file restored, a revert) is then annotated again, which indexes its words again,
        instead of showing an annotation whose words are gone. Model annotations stay (they
        cost money, and a revert finds them). Returns how many contents were forgotten."""
        machine = " OR ".join(f"annotator LIKE '{prefix}%'" for prefix in MACHINE_ANNOTATORS)
        async with self._contents.changes() as forgotten, self._db.transaction() as db:
            await DefinitionIndex.drop_orphans(db)
            dropped = await ContentIndex.drop_orphans(db)
            forgotten.removed += [content_id for content_id, _ in dropped]
            hashes = [digest for _, digest in dropped]
            if hashes:
                await db.execute(
                    f"DELETE FROM annotations WHERE hash IN (SELECT value FROM json_each(?)) AND ({machine})",
                    (json_list(hashes),),
                )
        return len(hashes)

    async def of(self, annotator: str, hashes: Iterable[str]) -> dict[str, Annotation]:
        """`annotator`'s annotations of these contents."""
        rows = await self._db.reader.execute_fetchall(
            """
            SELECT hash, summary, tags, symbols, imports, input_tokens, output_tokens
            FROM annotations WHERE annotator = ? AND hash IN (SELECT value FROM json_each(?))
            """,
            (annotator, json_list(hashes)),
        )
        return {
            digest: Annotation(
                summary,
                _decode_list(tags),
                _decode_list(symbols),
                _decode_list(imports),
                input_tokens,
                output_tokens,
            )
            for digest, summary, tags, symbols, imports, input_tokens, output_tokens in rows
        }

    async def pending(self, annotator: str, paths: Sequence[str]) -> list[PendingFile]:
        """Those of `paths` whose content has no annotation by `annotator` yet, each content
        once, in the order given."""
        rows = await self._db.reader.execute_fetchall(
            """
            SELECT f.path, f.hash, f.language, f.kind, f.size, f.annotator FROM files AS f
            WHERE f.path IN (SELECT value FROM json_each(:paths)) AND f.skip_reason IS NULL
              AND NOT EXISTS (SELECT 1 FROM annotations AS a
                              WHERE a.hash = f.hash AND a.annotator = :annotator)
            GROUP BY f.hash
            """,
            {"annotator": annotator, "paths": json_list(paths)},
        )
        order = {path: index for index, path in enumerate(paths)}
        return sorted((PendingFile(*row) for row in rows), key=lambda item: order[item.path])

    async def backlog(self, annotator: str, *, machine: bool) -> list[str]:
        """Files waiting for `annotator`, in the default order: frequently and recently used
        first, then source before tests, docs and data, then small before large. For a
        machine annotator: files that show no annotation, or an older machine annotator's, or a
        model's while their content has none of this annotator's; for a model: files that do
        not show its annotation. Without a model the conditions are on the file row only, so a
        workspace with nothing to do answers from an index at once."""
        if machine:
            by_machine = " OR ".join(f"f.annotator LIKE '{prefix}%'" for prefix in MACHINE_ANNOTATORS)
            # A file showing a model's annotation still needs this one's when its content has
            # none: a content that came back after its words were forgotten, say.
            shown = (
                f"(f.annotator IS NULL OR (f.annotator != :annotator AND ({by_machine}))"
                f" OR (NOT ({by_machine}) AND NOT EXISTS (SELECT 1 FROM annotations AS own"
                " WHERE own.hash = f.hash AND own.annotator = :annotator)))"
            )
        else:
            shown = "(f.annotator IS NULL OR f.annotator != :annotator)"
        rows = await self._db.reader.execute_fetchall(
            f"""
            SELECT f.path FROM files AS f LEFT JOIN access AS a ON a.path = f.path
            WHERE f.skip_reason IS NULL AND {shown}
            ORDER BY a.rank IS NULL, a.rank DESC, {KIND_ORDER_SQL}, f.size, f.path
            """,
            {"annotator": annotator},
        )
        return [str(row[0]) for row in rows]

    async def waiting_for(self, annotator: str) -> tuple[int, int]:
        """(files, bytes) of annotatable content that `annotator` has not annotated."""
        ((files, size),) = await self._db.reader.execute_fetchall(
            """
            SELECT count(*), coalesce(sum(size), 0) FROM (
                SELECT f.hash, max(f.size) AS size FROM files AS f
                WHERE f.skip_reason IS NULL AND NOT EXISTS (
                    SELECT 1 FROM annotations AS a WHERE a.hash = f.hash AND a.annotator = ?)
                GROUP BY f.hash)
            """,
            (annotator,),
        )
        return int(files), int(size)

    async def cost(self, annotator: str) -> tuple[int, int, int]:
        """(annotations, input tokens, output tokens) spent by `annotator` so far."""
        ((count, tokens_in, tokens_out),) = await self._db.reader.execute_fetchall(
            "SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0) "
            "FROM annotations WHERE annotator = ?",
            (annotator,),
        )
        return int(count), int(tokens_in), int(tokens_out)

    async def by_models(self, *, batch: int = 500) -> AsyncIterator[list[tuple[str, str, Annotation]]]:
        """(content hash, annotator, annotation) of every model annotation of a file in the
        index, in batches: what this machine can share with a team."""
        last: tuple[str, str] = ("", "")
        while True:
            rows = list(
                await self._db.reader.execute_fetchall(
                    """
                    SELECT a.hash, a.annotator, a.summary, a.tags, a.symbols, a.imports,
                           a.input_tokens, a.output_tokens
                    FROM annotations AS a
                    WHERE a.annotator LIKE 'model:%' AND (a.hash, a.annotator) > (?, ?)
                      AND EXISTS (SELECT 1 FROM files AS f WHERE f.hash = a.hash)
                    ORDER BY a.hash, a.annotator LIMIT ?
                    """,
                    (*last, batch),
                )
            )
            if not rows:
                return
            yield [
                (
                    digest,
                    annotator,
                    Annotation(
                        summary,
                        _decode_list(tags),
                        _decode_list(symbols),
                        _decode_list(imports),
                        tokens_in,
                        tokens_out,
                    ),
                )
                for digest, annotator, summary, tags, symbols, imports, tokens_in, tokens_out in rows
            ]
            last = (rows[-1][0], rows[-1][1])
