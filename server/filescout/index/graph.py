"""The import graph: `import_keys`, what each file imports as keys (filescout.core.import_keys).

A file's keys are rebuilt whenever it shows another annotation (its content changed, or an
annotator described it) and dropped when it goes. The file an import names is found by key at
question time (`provided_keys` of its path), so an edge exists as soon as both files are in the
index, in whichever order they arrived, and no edge outlives either end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import aiosqlite
import msgspec

from filescout.core.import_keys import import_keys
from filescout.index.database import Database, json_list

_decode_list = msgspec.json.Decoder(list[str]).decode


class ImportGraph:
    def __init__(self, db: Database) -> None:
        self._db = db

    @staticmethod
    async def refresh(db: aiosqlite.Connection, paths: Iterable[str]) -> None:
        """Inside a transaction: rebuild the keys of `paths` from the annotations they show."""
        rows = await db.execute_fetchall(
            """
            SELECT f.id, f.path, f.language, COALESCE(a.imports, '[]')
            FROM files AS f
            LEFT JOIN annotations AS a ON a.hash = f.hash AND a.annotator = f.annotator
            WHERE f.path IN (SELECT value FROM json_each(?))
            """,
            (json_list(paths),),
        )
        await db.execute(
            "DELETE FROM import_keys WHERE file_id IN (SELECT value FROM json_each(?))",
            (json_list(row[0] for row in rows),),
        )
        await db.executemany(
            "INSERT OR IGNORE INTO import_keys(key, file_id) VALUES (?, ?)",
            [
                (key, file_id)
                for file_id, path, language, imports in rows
                if imports != "[]"
                for key in import_keys(path, language, _decode_list(imports))
            ],
        )

    @staticmethod
    async def rewrite(
        db: aiosqlite.Connection,
        file_ids: Sequence[int],
        imports: Iterable[tuple[int, str, str | None, Sequence[str]]],
    ) -> None:
        """Inside a transaction: replace the keys of `file_ids` with those of what they now
        import — (file id, path, language, imports) — with nothing read back."""
        if not file_ids:
            return
        await db.execute(
            "DELETE FROM import_keys WHERE file_id IN (SELECT value FROM json_each(?))",
            (json_list(file_ids),),
        )
        await db.executemany(
            "INSERT OR IGNORE INTO import_keys(key, file_id) VALUES (?, ?)",
            [
                (key, file_id)
                for file_id, path, language, found in imports
                if found
                for key in import_keys(path, language, list(found))
            ],
        )

    @staticmethod
    async def forget(db: aiosqlite.Connection, gone: str) -> None:
        """Inside a transaction, before the files' rows go: drop the keys of the paths in the
        JSON array `gone`."""
        await db.execute(
            "DELETE FROM import_keys WHERE file_id IN (SELECT id FROM files WHERE path IN "
            "(SELECT value FROM json_each(?)))",
            (gone,),
        )

    async def links(self, importers: Sequence[str], keys: Sequence[str]) -> list[tuple[str, str]]:
        """(importer, key) for what `importers` import and for whatever imports one of `keys`,
        on a question reader."""
        rows = await self._db.questions.fetchall(
            """
            SELECT f.path, k.key FROM files AS f JOIN import_keys AS k ON k.file_id = f.id
            WHERE f.path IN (SELECT value FROM json_each(:importers))
            UNION
            SELECT f.path, k.key FROM import_keys AS k JOIN files AS f ON f.id = k.file_id
            WHERE k.key IN (SELECT value FROM json_each(:keys))
            """,
            {"importers": json_list(importers), "keys": json_list(keys)},
        )
        return [(str(path), str(key)) for path, key in rows]

    async def keys_of(self, path: str) -> list[str]:
        """What one file imports, as keys."""
        rows = await self._db.reader.execute_fetchall(
            "SELECT k.key FROM import_keys AS k JOIN files AS f ON f.id = k.file_id WHERE f.path = ? "
            "ORDER BY k.key",
            (path,),
        )
        return [str(row[0]) for row in rows]
