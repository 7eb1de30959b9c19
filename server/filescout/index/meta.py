"""Small facts about the index itself (when the last scan finished, the ignore rules'
fingerprint): the `meta` table."""

from __future__ import annotations

from filescout.index.database import Database


class Meta:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._known: dict[str, str | None] = {}
        self._generation = -1

    async def get(self, key: str) -> str | None:
        """A status reads these on every call; the writer's values are kept until its next
        commit, so a status sent behind a burst of listings need not wait for the reader."""
        if self._db.writable and self._generation == self._db.generation and key in self._known:
            return self._known[key]
        generation = self._db.generation
        rows = list(await self._db.reader.execute_fetchall("SELECT value FROM meta WHERE key = ?", (key,)))
        value = str(rows[0][0]) if rows else None
        if self._db.writable:  # another process's commits would not show in the generation
            if generation != self._generation:
                self._known, self._generation = {}, generation
            self._known[key] = value
        return value

    async def set(self, key: str, value: str) -> None:
        # Nothing else is read from the meta table, so the commit need not make the other rooms
        # read again (bump=False); what this room keeps is updated here instead.
        async with self._db.transaction(bump=False) as db:
            await db.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
        if self._generation == self._db.generation:
            self._known[key] = value
