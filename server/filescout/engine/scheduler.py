"""What gets annotated next, for both workers: files the user touches first, then their
neighbours and imports, then the backlog in the index's default order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from filescout.core.beneath import RootDir, read_regular
from filescout.core.import_keys import import_candidates
from filescout.core.records import FileEntry
from filescout.core.words import content_text
from filescout.engine.annotation_pool import AnnotationPool
from filescout.engine.background import Background
from filescout.engine.board import StatusBoard
from filescout.engine.hooks import Hooks
from filescout.engine.model_worker import ModelWorker
from filescout.engine.queue import BACKGROUND, NEIGHBOUR, TOUCHED
from filescout.engine.roles import Roles
from filescout.engine.structural_worker import Rescan, StructuralWorker
from filescout.index import Index

NEIGHBOURS_PER_TOUCH = 24
HEAD_BYTES = 64 * 1024


class Scheduler:
    def __init__(
        self,
        root: Path,
        roles: Roles,
        board: StatusBoard,
        background: Background,
        hooks: Hooks,
        rescan: Rescan,
        pool: AnnotationPool,
    ) -> None:
        self._root = root
        self._index: Index = roles.index
        self._roles = roles
        self._board = board
        self._background = background
        self.structural = StructuralWorker(
            root,
            self._index,
            board,
            rescan,
            shows_structural=lambda: self.model.annotator is None,
            cancel_backlog=self._cancel_backlog,
            pool=pool,
        )
        self.model = ModelWorker(
            root, self._index, self.structural.annotator, hooks, rescan, storage_fault=board.storage_fault
        )
        self._touched_unindexed: dict[str, None] = {}
        """Files touched before the first scan stored them."""

    @property
    def current(self) -> str:
        """The annotator whose annotations files should show: the model's when one is on."""
        model = self.model.annotator
        return model.id if model is not None else self.structural.id

    def queue(self, paths: Iterable[str], tier: int) -> None:
        """Queue for the structural worker and, when one is on, the model."""
        paths = list(paths)
        self.structural.queue.extend(paths, tier)
        if self.model.annotator is not None:
            self.model.queue.extend(paths, tier)

    def ensure_draining(self) -> None:
        if self._board.closed or not self._index.writable:
            return
        self.structural.ensure_draining()
        self.model.ensure_draining()

    def _cancel_backlog(self) -> None:
        self.structural.queue.clear_background()
        self.model.queue.clear_background()

    @property
    def tasks(self) -> tuple[asyncio.Task[None] | None, ...]:
        return (self.structural.task, self.model.task, self.model.directory_task)

    def files_changed(self) -> None:
        """What directories hold may have changed: their summaries are looked at again once
        file annotation is idle."""
        self.model.directories_stale = True

    async def after_scan(self) -> None:
        """Queue the backlog a scan leaves (replacing the previous one) and what was touched
        before the scan stored it, and start draining."""
        self.structural.queue.clear_background()
        self.structural.queue.extend(await self.structural.backlog(), BACKGROUND)
        if self.model.annotator is not None:
            self.model.queue.clear_background()
            self.model.queue.extend(await self.model.backlog(), BACKGROUND)
        self.files_changed()
        if self._touched_unindexed:
            found = await self._index.files.existing(self._touched_unindexed)
            self._touched_unindexed.clear()
            self.queue(reversed(found), TOUCHED)
        self.ensure_draining()

    async def touch(self, paths: Sequence[str], *, weight: float, record: bool) -> None:
        """A client used these files: annotate them (and, a little later, their neighbours
        and imports) before anything else, and remember the access."""
        existing = await self._index.files.existing(paths)
        # A file opened while the first scan runs is not in the index yet: keep it in mind.
        self._touched_unindexed.update(dict.fromkeys(set(paths) - set(existing)))
        self.queue(reversed(existing), TOUCHED)
        if record:
            await self._record_access(existing, weight=weight)
        self.ensure_draining()
        self._background.spawn(self._queue_neighbours(existing))

    def returned(self, paths: Sequence[str]) -> None:
        """What a question turned up is likely to be read next: annotate it soon. It is not the
        user's use, and is never counted as one: a file an answer merely named would otherwise
        rank higher the next time, explained as "you used it recently", and feed on itself."""
        self.queue(paths, NEIGHBOUR)
        self.ensure_draining()

    async def _record_access(self, paths: Sequence[str], *, weight: float) -> None:
        """Count a use; on a full disk the count is lost, never the request that made it."""
        try:
            await self._roles.record_access(paths, weight=weight)
        except Exception as exc:
            if self._board.storage_fault(exc) is None:
                raise

    async def wait_annotated(
        self, paths: Sequence[str], *, timeout: float, poll: float = 0.05
    ) -> dict[str, FileEntry]:
        """Poll until `paths` show the current annotator's annotation, the model cannot
        deliver it, or `timeout` runs out; the entries as they are then."""
        deadline = time.monotonic() + timeout
        while True:
            found = await self._index.files.entries(paths, current=self.current)  # some may vanish
            waiting = [entry for entry in found.values() if entry.status in ("pending", "stale")]
            model = self.model.annotator
            model_stopped = model is None or model.client.unavailable_reason() is not None
            if (
                not waiting
                or time.monotonic() > deadline
                or (model_stopped and all(entry.status != "pending" for entry in waiting))
            ):
                return found
            await asyncio.sleep(poll)

    async def _queue_neighbours(self, paths: Sequence[str]) -> None:
        files = self._index.files
        for path in paths[:4]:
            siblings = await files.in_directory(path.rpartition("/")[0], limit=NEIGHBOURS_PER_TOUCH)
            imported = await self._imports_of(path)
            self.queue([*imported[:NEIGHBOURS_PER_TOUCH], *siblings], NEIGHBOUR)
        self.ensure_draining()

    async def _imports_of(self, path: str) -> list[str]:
        """Indexed files (and a few files of indexed directories) that `path` imports."""
        files = self._index.files
        entries = await files.entries([path], current=self.current)
        if path not in entries:
            return []
        text = await asyncio.to_thread(self._head_text, path)
        candidates = import_candidates(path, entries[path].language, text)
        imported = await files.existing([c for c in candidates if not c.endswith("/")])
        for directory in [c.rstrip("/") for c in candidates if c.endswith("/")][:8]:
            imported += await files.in_directory(directory, limit=8)
        return imported

    def _head_text(self, path: str) -> str:
        """The head of a file, to find its imports (never through a link that leads out)."""
        try:
            with RootDir(self._root) as beneath:
                found = read_regular(beneath, path, HEAD_BYTES)
        except OSError:
            return ""
        return content_text(found[0]) if found is not None else ""
