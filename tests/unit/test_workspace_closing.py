"""The engine in-process, closing while requests are still under way: an editor that shuts the
server down right after a burst of opened files. What those requests would start next must not
start once the workspace is closing: it would run on an index that is closed by then, fail
there, and log an error at such a shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from filescout.engine import Workspace
from harness.support import SAMPLE_FILES, make_workspace

TOUCHES = 50


def our_code(task: asyncio.Task[Any]) -> bool:
    code = getattr(task.get_coro(), "cr_code", None)
    return code is not None and "/filescout/" in code.co_filename


async def test_touches_in_flight_when_the_workspace_closes_start_nothing_after(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")})
    engine.start_indexing("index")
    await engine.wait_idle()
    sources = [path for path in SAMPLE_FILES if path.endswith(".py")]
    touches = [asyncio.ensure_future(engine.touch([sources[n % len(sources)]])) for n in range(TOUCHES)]
    await touches[0]  # the others are under way, queued for the index
    started: list[asyncio.Task[Any]] = []

    def recording(
        loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, Any], **options: Any
    ) -> asyncio.Task[Any]:
        task = asyncio.Task(coroutine, loop=loop, **options)
        started.append(task)
        return task

    loop = asyncio.get_running_loop()
    loop.set_task_factory(recording)
    try:
        with caplog.at_level(logging.ERROR):
            await engine.close()
            await asyncio.gather(*touches, return_exceptions=True)
            await asyncio.gather(*started, return_exceptions=True)
    finally:
        loop.set_task_factory(None)
    ran = [task.get_coro() for task in started if our_code(task) and not task.cancelled()]
    assert ran == []
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == []
