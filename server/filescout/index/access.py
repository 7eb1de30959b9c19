"""Frecency: which files the user works with, in the `access` table.

Every access adds its weight to a score that halves every HALF_LIFE. The stored `rank` is that
score in log space shifted to a fixed epoch (`rank = ln(score) + t·ln2/halflife`), so ordering by
rank is ordering by the current decayed score, without rewriting rows as time passes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import aiosqlite

from filescout.index.database import Database, json_list

HALF_LIFE_SECONDS = 3 * 24 * 3600
DECAY = math.log(2) / HALF_LIFE_SECONDS


def current_score(rank: float, now: float) -> float:
    """The decayed score a stored rank stands for at time `now`."""
    return math.exp(rank - now * DECAY)


def ranked(score: float, now: float) -> float:
    """The rank to store for `score` at time `now`."""
    return math.log(score) + now * DECAY


class AccessLog:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, paths: Sequence[str], *, weight: float = 1.0, now: float | None = None) -> None:
        """Count an access to each of `paths`."""
        if not paths:
            return
        now = time.time() if now is None else now
        async with self._db.transaction() as db:
            rows = await db.execute_fetchall(
                "SELECT path, rank FROM access WHERE path IN (SELECT value FROM json_each(?))",
                (json_list(paths),),
            )
            previous = {str(path): float(rank) for path, rank in rows}
            updates = []
            for path in dict.fromkeys(paths):
                score = weight
                if path in previous:
                    score += current_score(previous[path], now)
                updates.append((path, now, ranked(score, now)))
            await db.executemany(
                """
                INSERT INTO access(path, count, last_access, rank) VALUES (?, 1, ?, ?)
                ON CONFLICT(path) DO UPDATE SET count = count + 1,
                    last_access = excluded.last_access, rank = excluded.rank
                """,
                updates,
            )

    @staticmethod
    async def hand_over(db: aiosqlite.Connection, moves: Sequence[tuple[str, str]]) -> None:
        """Inside a catalogue transaction: renamed files (old path, new path) keep their
        history, unless the new path has one of its own."""
        await db.executemany(
            "UPDATE OR IGNORE access SET path = ? WHERE path = ? "
            "AND NOT EXISTS (SELECT 1 FROM access WHERE path = ?)",
            [(new, old, new) for old, new in moves],
        )
