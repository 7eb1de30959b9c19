"""A write transaction always ends, however often its caller is cancelled."""

from __future__ import annotations

import asyncio
from pathlib import Path

from filescout.index import Index


async def test_repeated_cancellation_never_leaves_a_transaction_open(tmp_path: Path) -> None:
    index = await Index.open(tmp_path / "index.sqlite3")
    try:
        for attempt in range(30):
            task = asyncio.ensure_future(index.access.record([f"file{attempt}.py"], weight=1.0))
            for _ in range(attempt % 4):  # let it get as far as BEGIN, or further
                await asyncio.sleep(0)
            for _ in range(3):  # as a cancel scope does: again and again
                task.cancel()
                await asyncio.sleep(0)
            await asyncio.gather(task, return_exceptions=True)
            await index.access.record(["after.py"])  # fails if a transaction was left open
    finally:
        await index.close()
