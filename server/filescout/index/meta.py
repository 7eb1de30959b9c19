"""Small facts about the index itself (when the last scan finished, the ignore rules'
fingerprint): the `meta` table."""

from __future__ import annotations

from filescout.index.database import Database


class Meta:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, key: str) -> str | None:
        rows = list(await self._db.reader.execute_fetchall("SELECT value FROM meta WHERE key = ?", (key,)))
        return str(rows[0][0]) if rows else None

    async def set(self, key: str, value: str) -> None:
        async with self._db.transaction() as db:
            await db.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
