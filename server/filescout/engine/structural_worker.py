"""The structural worker: annotates queued files from their own structure, best first, in
batches, until its queue is empty."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filescout.annotate.jobs import (
    AnnotationJob,
    annotate_batch,
    annotate_batch_packed,
    read_text,
    unpack_batch,
)
from filescout.annotate.structural import StructuralAnnotator
from filescout.core.beneath import RootDir
from filescout.core.records import Annotation, FileToAnnotate, PendingFile
from filescout.engine.annotation_pool import AnnotationPool
from filescout.engine.board import StatusBoard
from filescout.engine.progress import NullProgress, ProgressReporter
from filescout.engine.queue import TOUCHED, AnnotationQueue
from filescout.index import Index

log = logging.getLogger(__name__)

ANNOTATION_BATCH = 32
IN_PROCESS_LIMIT = ANNOTATION_BATCH
"""Work no larger than one batch, while no worker process runs, is done in a thread here."""
WRITES_WAITING = 8 * ANNOTATION_BATCH
"""Annotations waiting for the writer before batches wait for it (memory)."""
GATHER = 4 * ANNOTATION_BATCH
GATHER_SECONDS = 0.2
"""While more batches are under way, the writer waits up to this long for GATHER annotations:
each transaction has a fixed cost (commit, a new full-text segment per table) that one batch
alone would pay for every 32 files. Short, because a saved file's new annotation may wait for
it while a backlog drains."""
BACKLOG_WORTH_ANNOUNCING = 100
SCAN_SHARE = 20  # percent of a pass's progress bar given to scanning

Rescan = Callable[[list[str]], Any]
"""Have paths whose content changed since the scan that queued them re-examined (in the
background)."""


@dataclass
class PassProgress:
    """The progress of the pass under way (a null one between passes), which annotation
    reports to and whose cancel button stops the backlog."""

    reporter: ProgressReporter = field(default_factory=NullProgress)
    annotated: int = 0


async def read_current(root: Path, pending: Sequence[PendingFile], rescan: Rescan) -> list[FileToAnnotate]:
    """The texts of `pending` that still match the index; the others are rescanned."""
    texts = await asyncio.to_thread(_read_texts, root, pending)
    changed = [item.path for item, text in zip(pending, texts, strict=True) if text is None]
    if changed:
        rescan(changed)
    return [text for text in texts if text is not None]


def _read_texts(root: Path, pending: Sequence[PendingFile]) -> list[FileToAnnotate | None]:
    """`read_text` of each, the root opened once for them all."""
    try:
        beneath = RootDir(root)
    except OSError:  # the folder is gone: none of them has the content the index knows
        return [None for _ in pending]
    with beneath:
        return [read_text(beneath, item) for item in pending]


class Saves:
    """Annotated batches waiting for the writer: stored in the background, what arrived
    meanwhile in one transaction, so the workers never wait for SQLite."""

    def __init__(
        self,
        save: Callable[[list[tuple[str, Annotation]]], Awaitable[None]],
        more_coming: Callable[[], bool] = lambda: False,
        gather_seconds: float = GATHER_SECONDS,
    ) -> None:
        self._save = save
        self._more_coming = more_coming
        self._gather_seconds = gather_seconds
        self._waiting: list[tuple[str, Annotation]] = []
        self._urgent = False
        """What waits includes what the user touched: stored without gathering more."""
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.error: BaseException | None = None

    def put(self, annotations: list[tuple[str, Annotation]], *, urgent: bool = False) -> None:
        self._waiting += annotations
        self._urgent = self._urgent or urgent
        self._arrived.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._store(), name="filescout-annotation-writes")

    @property
    def backlog(self) -> int:
        return len(self._waiting)

    async def _store(self) -> None:
        while self._waiting and self.error is None:
            await self._gather()
            taken, self._waiting, self._urgent = self._waiting, [], False
            try:
                await self._save(taken)
            except Exception as exc:  # the drain raises it
                self.error = exc

    async def _gather(self) -> None:
        """Wait (briefly) for GATHER annotations while batches that will bring more are under way."""
        deadline = asyncio.get_running_loop().time() + self._gather_seconds
        while len(self._waiting) < GATHER and self._more_coming() and not self._urgent:
            self._arrived.clear()
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return
            try:
                await asyncio.wait_for(self._arrived.wait(), left)
            except TimeoutError:
                return

    async def flush(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
        self.raise_error()

    def raise_error(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()


class StructuralWorker:
    def __init__(
        self,
        root: Path,
        index: Index,
        board: StatusBoard,
        rescan: Rescan,
        shows_structural: Callable[[], bool],
        cancel_backlog: Callable[[], None],
        pool: AnnotationPool,
    ) -> None:
        self.annotator = StructuralAnnotator()
        self.pool = pool
        self.queue = AnnotationQueue()
        self.progress = PassProgress()
        self.task: asyncio.Task[None] | None = None
        self._root = root
        self._index = index
        self._board = board
        self._rescan = rescan
        self._shows_structural = shows_structural
        """True when files should show structural annotations (no model on)."""
        self._cancel_backlog = cancel_backlog

    @property
    def id(self) -> str:
        return self.annotator.id

    def ensure_draining(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._drain(), name="filescout-annotate")

    async def backlog(self) -> list[str]:
        return await self._index.annotations.backlog(self.id, machine=True)

    async def _drain(self) -> None:
        """Annotate queued files until the queue is empty. Outside a pass, a backlog
        announces itself as a phase; the few files a question or an opened file queues do not
        (each phase change costs every listener a status query)."""
        board = self._board
        announced = board.phase == "idle" and len(self.queue) >= BACKLOG_WORTH_ANNOUNCING
        if announced:
            board.set_phase("annotating")
        try:
            await self._annotate_queue()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if board.storage_fault(exc) is None:
                log.exception("annotation failed")
                board.last_error = f"{type(exc).__name__}: {exc}"
        finally:
            if announced and board.phase == "annotating" and not board.in_pass:
                board.set_phase("idle")

    async def _annotate_queue(self) -> None:
        """Batches go to the worker processes, one per worker and one waiting, best first each
        time a worker frees up; their annotations are written in the background. Files touched
        meanwhile, and tiny work while no worker runs (a save, an opened file), are done in a
        thread here: waiting for a worker, or starting one, would take longer."""
        in_flight: set[asyncio.Task[int]] = set()
        saves = Saves(self._save, more_coming=lambda: any(not task.done() for task in in_flight))
        touched: asyncio.Task[int] | None = None
        try:
            while True:
                if (touched is None or touched.done()) and self.queue.head_tier() == TOUCHED:
                    touched = asyncio.create_task(self._annotate_touched(saves))
                    in_flight.add(touched)
                while len(in_flight) < self._parallel() and (batch := self._next_batch()):
                    in_workers = self.pool.running or len(self.queue) + len(batch) > IN_PROCESS_LIMIT
                    in_flight.add(asyncio.create_task(self._annotate_batch(batch, saves, in_workers)))
                if not in_flight:
                    await saves.flush()
                    if not self.queue:  # nothing was queued while the last writes were made
                        break
                    continue
                done, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    self._report(task.result())
                saves.raise_error()
                while saves.backlog > WRITES_WAITING:  # the writer is behind: let it catch up
                    await saves.flush()
        finally:
            for task in in_flight:
                task.cancel()
            if in_flight:
                await asyncio.gather(*in_flight, return_exceptions=True)
            saves.cancel()

    def _parallel(self) -> int:
        """Batches under way at once: one per worker plus one waiting for the first free one,
        or one in a thread here for tiny work while no worker runs."""
        if self.pool.running or len(self.queue) > IN_PROCESS_LIMIT:
            return self.pool.workers + 1
        return 1

    def _next_batch(self) -> list[str]:
        if self.progress.reporter.is_cancelled():  # the user stopped the backlog, not the touched
            self._cancel_backlog()
        return self.queue.pop(ANNOTATION_BATCH)

    def _report(self, annotated: int) -> None:
        self.progress.annotated += annotated
        done = self.progress.annotated
        total = done + len(self.queue)
        self.progress.reporter.report(
            f"annotating {done}/{total} files", SCAN_SHARE + (100 - SCAN_SHARE) * done // max(total, 1)
        )

    async def _annotate_touched(self, saves: Saves) -> int:
        """What the user touched (saved, opened, asked about) skips the batches under way: a
        few files, annotated in a thread here and stored without waiting for more."""
        batch = self.queue.pop(ANNOTATION_BATCH, tier_at_most=TOUCHED)
        return await self._annotate_batch(batch, saves, in_workers=False, urgent=True)

    async def _annotate_batch(
        self, batch: Sequence[str], saves: Saves, in_workers: bool, *, urgent: bool = False
    ) -> int:
        """One batch: what still waits is annotated, from the words the scan left unfound only
        what the index lacks; changed files are rescanned. A failure other than the index's own
        costs this batch only (its files stay pending). Returns how many files it covered."""
        pending = await self._index.annotations.pending(self.id, batch)
        if not pending:
            return 0
        try:
            lacking = await self._index.contents.missing(item.hash for item in pending)
            job = AnnotationJob(str(self._root), pending, lacking)
            if in_workers:
                done = unpack_batch(await self.pool.run(annotate_batch_packed, job))
            else:
                done = await asyncio.to_thread(annotate_batch, job)
        except sqlite3.Error:  # the index itself fails: stop
            raise
        except Exception as exc:
            log.error(
                "annotating %s and %d more failed: %s", pending[0].path, len(pending) - 1, exc, exc_info=True
            )
            self._board.last_error = f"annotation failed: {type(exc).__name__}: {exc}"
            return len(pending)
        if done.changed:
            self._rescan(done.changed)
        saves.put(done.annotations, urgent=urgent)
        return len(pending)

    async def _save(self, annotations: list[tuple[str, Annotation]]) -> None:
        """A failure other than the index's own costs these annotations only (their files
        stay pending)."""
        try:
            await self._index.annotations.save(self.id, annotations, replace=self._shows_structural())
        except sqlite3.Error:
            raise
        except Exception as exc:
            log.exception("storing %d annotations failed", len(annotations))
            self._board.last_error = f"annotation failed: {type(exc).__name__}: {exc}"
