"""Questions search on a pool of readers: a burst spreads over all of them, and no connection is
lost to a question that is cancelled halfway."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from filescout.index import Index
from filescout.index.database import (
    MAX_QUESTION_READERS,
    QuestionReaders,
    question_cache_kib,
    question_readers,
)


def test_one_question_reader_per_core_within_bounds() -> None:
    assert question_readers(1) == 2  # a question's two searches still run side by side
    assert question_readers(4) == 4
    assert question_readers(64) == MAX_QUESTION_READERS
    assert question_cache_kib(2) * 2 <= 32_000 and question_cache_kib(6) >= 6_000


async def statements_run_on_every_reader_at_once(pool: QuestionReaders) -> set[int]:
    """The threads that ran one statement each, all at the same time: the barrier breaks
    (BrokenBarrierError) unless every reader is free and takes one."""
    readers = pool.connections
    threads: set[int] = set()
    everyone_in = threading.Barrier(len(readers), timeout=10)

    def wait_for_the_others() -> int:
        threads.add(threading.get_ident())
        everyone_in.wait()
        return 1

    for connection in readers:
        await connection.create_function("wait_for_the_others", 0, wait_for_the_others)
    statements = (pool.fetchall("SELECT wait_for_the_others()") for _ in readers)
    results = await asyncio.wait_for(asyncio.gather(*statements), timeout=20)
    assert results == [[(1,)]] * len(readers)
    return threads


async def test_a_burst_runs_on_every_question_reader_at_once(tmp_path: Path) -> None:
    index = await Index.open(tmp_path / "index.sqlite3")
    try:
        threads = await statements_run_on_every_reader_at_once(index.db.questions)
        assert len(threads) == len(index.db.questions.connections) >= 2
    finally:
        await index.close()


async def test_cancelled_questions_give_their_reader_back(tmp_path: Path) -> None:
    index = await Index.open(tmp_path / "index.sqlite3")
    pool = index.db.questions
    try:
        for attempt in range(40):
            tasks = [
                asyncio.ensure_future(pool.fetchall("SELECT count(*) FROM files"))
                for _ in range(attempt % 7 + 1)
            ]
            for _ in range(attempt % 3):
                await asyncio.sleep(0)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await statements_run_on_every_reader_at_once(pool)
        assert await pool.fetchall("SELECT count(*) FROM files") == [(0,)]
    finally:
        await index.close()
