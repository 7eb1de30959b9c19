"""Keeps the history index at HEAD. After each pass (so never before the index is ready for
questions) it looks at HEAD, cheaply: the files git keeps it in. When HEAD moved on from the tip
indexed, only the new commits are read; when it went anywhere else (a reset, another branch),
the history is read again. git is read in a worker thread, and rows are written in
transactions of at most `history.BATCH` commits, so neither the event loop nor other writers wait
long; a kill at any point costs only the update under way, which the next pass redoes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

from filescout.core.records import PastCommit
from filescout.engine.faults import index_damage
from filescout.index import Index
from filescout.index.history import HistoryState
from filescout.relevance.signals import Signals
from filescout.relevance.weights import META_KEY, encode, stored_fit
from filescout.vcs.commits import (
    BATCH,
    MAX_COMMITS,
    Head,
    HistoryReader,
    HistoryUnavailable,
    count_between,
    find_head,
    head_signature,
    is_ancestor,
)

log = logging.getLogger(__name__)

HISTORY_UNREADABLE = "history_unreadable_at"
"""The meta key for the HEAD whose history git could not read (a partial clone missing objects,
a damaged repository): the history index stays as it is until HEAD moves, and a check of
whether the index is current (`workspace.changed_on_disk`) counts it as up to date."""
REBUILD_BEYOND = MAX_COMMITS + MAX_COMMITS // 10
"""Extensions add to the newest end; once the rows exceed this, the history is read again (the
index's message words cannot be removed one commit at a time), which drops the oldest."""


class HistoryKeeper:
    def __init__(self, root: Path, index: Index) -> None:
        self._root = root
        self._index = index
        self._signature: str | None = None
        """HEAD as last brought up to date, from git's files; None: ask git."""
        self._lock = asyncio.Lock()

    async def update(self) -> None:
        """Bring the history index to HEAD. Fails only when the index is damaged: a workspace
        whose history cannot be read has none, as one outside git has none."""
        if not self._index.writable:
            return
        async with self._lock:
            try:
                await self._update()
                await self._fit_ranking()
            except HistoryUnavailable as exc:
                log.warning("the repository's history is not indexed: %s", exc)
            except Exception as exc:
                if index_damage(exc) is not None:  # the pass's to report: the index is rebuilt
                    raise
                log.exception("updating the repository's history failed")

    async def _update(self) -> None:
        signature = await asyncio.to_thread(head_signature, self._root)
        if signature is not None and signature == self._signature:
            return
        try:
            await self._bring_to_head()
        except HistoryUnavailable:  # a git that failed is not asked again until HEAD moves
            self._signature = signature
            raise
        self._signature = signature

    async def _fit_ranking(self) -> None:
        """Fit the ranking's weights on the history when none were, or it has grown by a margin
        since (relevance/fit.py), when fitting is asked for (an unproven signal); a fit costs
        about one question per past commit it asks."""
        if not Signals.from_environment().fit:
            return
        # Imported only to fit: the prefilter it asks with is a question's, not a start-up's.
        from filescout.engine.past_files import PastFiles
        from filescout.relevance.fit import fit_ranking, needs_fit

        state = await self._index.history.state()
        if state is None or state.tip is None or not needs_fit(await stored_fit(self._index), state.commits):
            return
        fit = await fit_ranking(self._index, state.commits, PastFiles(self._root).before_and_now)
        await self._index.meta.set(META_KEY, encode(fit))

    async def _bring_to_head(self) -> None:
        head = await asyncio.to_thread(find_head, self._root)
        state = await self._index.history.state()
        if head is None:
            if state is not None:
                await self._index.history.clear()
                log.info("no git history: the history index is cleared")
        elif not _current(state, head):
            try:
                await self._read_to(state, head)
            except HistoryUnavailable:
                await self._index.meta.set(HISTORY_UNREADABLE, head.commit)
                raise
            if await self._index.meta.get(HISTORY_UNREADABLE):
                await self._index.meta.set(HISTORY_UNREADABLE, "")

    async def _read_to(self, state: HistoryState | None, head: Head) -> None:
        started = time.perf_counter()
        count = await self._extension(state, head) if state is not None else None
        if state is not None and count is not None:
            added = await self._extend(state, head, count)
            log.info("history: %d new commits in %d ms", added, _since(started))
        else:
            read = await self._rebuild(head, started)
            log.info("history: %d commits indexed in %d ms", read, _since(started))

    async def _extension(self, state: HistoryState, head: Head) -> int | None:
        """How many commits `head` is ahead of the tip indexed, if it descends from it and few
        enough to add; None when the history must be read again."""
        if state.tip is None or state.highest != state.newest:  # interrupted: start over
            return None
        if not await asyncio.to_thread(is_ancestor, self._root, state.tip, head.commit):
            return None
        count = await asyncio.to_thread(count_between, self._root, state.tip, head.commit)
        return count if count is not None and state.commits + count <= REBUILD_BEYOND else None

    async def _extend(self, state: HistoryState, head: Head, count: int) -> int:
        """Add `git log tip..HEAD`: ids above the tip's, newest largest; older rows take the
        new names of files renamed meanwhile. A range of one batch is one transaction."""
        assert state.tip is not None
        tip_id = next_id = state.newest + count
        reader = HistoryReader(self._root, head, since=state.tip, limit=max(count, 1))
        held: list[PastCommit] = []
        async for batch in _batches(reader):
            if held:
                await self._index.history.add(held, next_id)
                next_id -= len(held)
            held = batch
        await self._index.history.complete(
            head.commit,
            tip_id,
            state.built_ms,
            commits=held,
            first_id=next_id,
            renamed=reader.renamed,
            below=state.newest + 1,
        )
        return tip_id - next_id + len(held)

    async def _rebuild(self, head: Head, started: float) -> int:
        """Read the history again from HEAD: ids 0 (HEAD) downwards."""
        await self._index.history.start_rebuild()
        reader = HistoryReader(self._root, head)
        next_id = 0
        async for batch in _batches(reader):
            await self._index.history.add(batch, next_id)
            next_id -= len(batch)
        await self._index.history.complete(head.commit, 0, _since(started))
        return -next_id


def _current(state: HistoryState | None, head: Head) -> bool:
    return state is not None and state.tip == head.commit and state.highest == state.newest


def _since(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


async def _batches(reader: HistoryReader) -> AsyncIterator[list[PastCommit]]:
    """The reader's batches, each read in a worker thread; git is stopped if the caller stops
    early (or is cancelled)."""
    iterator = reader.batches(BATCH)
    # The next batch is read while the caller stores this one.
    coming = asyncio.ensure_future(asyncio.to_thread(next, iterator, None))
    try:
        while (batch := await coming) is not None:
            coming = asyncio.ensure_future(asyncio.to_thread(next, iterator, None))
            yield batch
    finally:
        coming.cancel()
        reader.stop()
        with contextlib.suppress(ValueError):  # still running in its thread: it ends on its own
            iterator.close()
