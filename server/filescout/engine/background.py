"""Background tasks that must not fail silently nor outlive the workspace."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Any

log = logging.getLogger(__name__)


class Background:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Future[Any]] = set()
        self._closed = False

    def spawn(self, coroutine: Awaitable[Any]) -> asyncio.Future[Any]:
        """Run `coroutine` in the background; once `cancel_all` has run it never starts (a
        request still in flight when the workspace closes would otherwise start work on an
        index that is closed by then)."""
        task = asyncio.ensure_future(coroutine)
        if self._closed:
            task.cancel()
            return task
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background work failed", exc_info=task.exception())

    async def cancel_all(self, *others: asyncio.Future[Any] | None) -> None:
        """Cancel every spawned task and `others`, and wait until they are gone; spawn nothing
        from now on."""
        self._closed = True
        tasks = [task for task in (*others, *self._tasks) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
