"""The structural worker: annotates queued files from their own structure, best first, in
batches, until its queue is empty."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filescout.annotate.structural import StructuralAnnotator
from filescout.engine.board import StatusBoard
from filescout.index import Index
from filescout.progress import NullProgress, ProgressReporter
from filescout.records import FileToAnnotate, PendingFile
from filescout.scan import content_hash, read_regular
from filescout.schedule import AnnotationQueue

log = logging.getLogger(__name__)

ANNOTATION_BATCH = 32
BACKLOG_WORTH_ANNOUNCING = 100
MAX_ANNOTATION_CHARS = 256 * 1024
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


def read_text(root: Path, pending: PendingFile) -> FileToAnnotate | None:
    """The file's text if it still has the content the index knows; None if it changed,
    vanished or is no regular file any more (a FIFO there is never waited on)."""
    try:
        found = read_regular(str(root / pending.path))
    except OSError:
        return None
    if found is None or content_hash(found[0]) != pending.hash:
        return None
    data = found[0]
    text = data[:MAX_ANNOTATION_CHARS].decode("utf-8", errors="replace")
    return FileToAnnotate(
        path=pending.path, hash=pending.hash, language=pending.language, kind=pending.kind, text=text
    )


async def read_current(root: Path, pending: Sequence[PendingFile], rescan: Rescan) -> list[FileToAnnotate]:
    """The texts of `pending` that still match the index; the others are rescanned."""
    texts = await asyncio.to_thread(lambda: [read_text(root, item) for item in pending])
    changed = [item.path for item, text in zip(pending, texts, strict=True) if text is None]
    if changed:
        rescan(changed)
    return [text for text in texts if text is not None]


class StructuralWorker:
    def __init__(
        self,
        root: Path,
        index: Index,
        board: StatusBoard,
        rescan: Rescan,
        shows_structural: Callable[[], bool],
        cancel_backlog: Callable[[], None],
    ) -> None:
        self.annotator = StructuralAnnotator()
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
            while batch := self._next_batch():
                pending = await self._index.annotations.pending(self.id, batch)
                if pending:
                    await self._annotate_batch(pending)
                self._report(len(pending))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if board.storage_fault(exc) is None:
                log.exception("annotation failed")
                board.last_error = f"{type(exc).__name__}: {exc}"
        finally:
            if announced and board.phase == "annotating" and not board.in_pass:
                board.set_phase("idle")

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

    async def _annotate_batch(self, pending: Sequence[PendingFile]) -> None:
        """One batch; a failure other than the index's own costs this batch only."""
        try:
            readable = await read_current(self._root, pending, self._rescan)
            await self.save(readable)
        except sqlite3.Error:  # the index itself fails: stop
            raise
        except Exception as exc:
            log.exception("annotating %s and %d more failed", pending[0].path, len(pending) - 1)
            self._board.last_error = f"annotation failed: {type(exc).__name__}: {exc}"

    async def save(self, readable: Sequence[FileToAnnotate]) -> None:
        results = await self.annotator.annotate(readable)
        annotations = [
            (item.hash, annotation)
            for item, annotation in zip(readable, results, strict=True)
            if annotation is not None
        ]
        await self._index.annotations.save(self.id, annotations, replace=self._shows_structural())
