"""Which requests start at once and which wait their turn, so a cheap request (a status, a small
page of getFiles) is never stuck behind a burst of heavy ones.

Every request's work runs on one event loop. Fifty questions and listings started together put
fifty tasks on the loop's ready queue, and each await of a small request then waits for a full
round of their steps (each a scoring pass, a page of rows turned into items, a result encoded):
a status that costs a millisecond took hundreds. So heavy work (findRelevant, large or streamed
listings, text-query listings, overviews) is admitted a few requests at a time (`heavy_slots`),
in the order the requests came; the rest wait, parked off the ready queue.
Cheap requests are never queued. A request cancelled while it waits leaves the queue at once,
and one cancelled just as its turn came passes the turn on. Both faces go through the engine's
operations (engine/workspace.py), so the LSP and MCP servers share the policy."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from typing import TypeVar

from filescout.index.database import question_readers

T = TypeVar("T")

SMALL_PAGE = 100
"""The largest getFiles page that counts as cheap: what a file picker asks for."""


def heavy_slots(cpus: int | None = None) -> int:
    """How many heavy requests run at once: as many as the index has question readers (one per
    core, at least two, at most six), so one request's searches run in SQLite's threads while
    another's Python runs on the loop; more would only queue for the readers. On two cores an
    idle server answered a burst of 50 as fast with two places as with no limit, and a status
    within it in 8-45 ms rather than 128-485; during a cold index the burst took a sixth longer,
    the loop time the waiting requests no longer take going to the indexing (docs/RELIABILITY.md,
    Load)."""
    return question_readers(cpus)


def is_small_page(limit: int | None, *, streamed: bool, query: str | None, globs: object) -> bool:
    """A page a picker waits on: at most SMALL_PAGE items, not streamed, matched in SQLite (no
    text query to search, no globs to match path by path)."""
    return not streamed and limit is not None and limit <= SMALL_PAGE and query is None and not globs


class Admission:
    """A first-come, first-served gate with `slots` places for heavy work."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.running = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for waiter in self._waiting if not waiter.done())

    @contextlib.asynccontextmanager
    async def heavy(self) -> AsyncIterator[None]:
        """Hold one place for the body; wait for it, in turn, when all are taken."""
        await self._acquire()
        try:
            yield
        finally:
            self._release()

    async def admitted(self, stream: AsyncIterator[T], *, through_first: bool = False) -> AsyncIterator[T]:
        """`stream` within one place, taken when its first item is asked for and given back when
        it ends or is closed (the faces close what they stop reading), or, `through_first`, once
        that first item is made: what comes after it waits on something else (a model endpoint)
        and would keep the place from the requests behind without using it."""
        async with contextlib.aclosing(stream) as items:  # type: ignore[type-var]  # an async generator
            async with self.heavy():
                async for item in items:
                    yield item
                    if through_first:
                        break
                else:
                    return
            async for item in items:
                yield item

    async def _acquire(self) -> None:
        if self.running < self.slots and not self._waiting:
            self.running += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            await waiter  # `_release` hands its place over: `running` stays as it is
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # the turn came as the request was cancelled: the next one's
            else:  # still in the queue, unless a release has already stepped over it
                with contextlib.suppress(ValueError):
                    self._waiting.remove(waiter)
            raise

    def _release(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.running -= 1
