"""The engine's face: one workspace and every operation on it. The LSP handlers, the CLI and
the MCP tools each make one call here; this is where plain records become protocol Structs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from filescout.core.errors import InvalidParams, WorkspaceUnavailable
from filescout.core.paths import to_relative, unsafe_root_reason
from filescout.core.records import ScanTotals
from filescout.engine import handoff, sharing
from filescout.engine.annotation_pool import AnnotationPool, worker_count
from filescout.engine.background import Background
from filescout.engine.board import StatusBoard
from filescout.engine.history_keeper import HistoryKeeper
from filescout.engine.hooks import Hooks
from filescout.engine.listing import FileListing, file_item
from filescout.engine.passes import Indexer
from filescout.engine.queue import BACKGROUND
from filescout.engine.repair import IndexRepair
from filescout.engine.roles import Role, Roles
from filescout.engine.scheduler import Scheduler
from filescout.engine.settings import db_path_for, default_db_path, load_settings
from filescout.engine.shown import shown
from filescout.engine.status import workspace_status
from filescout.index import Index
from filescout.index.lock import WriterLock
from filescout_protocol.types import (
    FileItem,
    FindRelevantParams,
    FindRelevantResult,
    GetFilesPage,
    GetFilesParams,
    GetOverviewParams,
    IndexPhase,
    OverviewEntry,
    OverviewResult,
    ReindexResult,
    Settings,
    StatusResult,
)

if TYPE_CHECKING:
    from filescout.engine.answers import FindUpdate
    from filescout.engine.overview import Overviews

log = logging.getLogger(__name__)

T = TypeVar("T")


class Workspace:
    """The engine for one workspace root."""

    def __init__(
        self, root: Path, settings: Settings, roles: Roles, warnings: list[str], hooks: Hooks
    ) -> None:
        self.root = root
        self.settings = settings
        self.warnings = warnings
        self.env: Mapping[str, str] = os.environ
        """What the settings were read from (the background indexer reads them from it too)."""
        self._roles = roles
        self._index: Index = roles.index
        self._background = Background()
        self._pool = AnnotationPool(worker_count(settings.index.workers))
        self._board = StatusBoard(
            self._index,
            hooks.on_status,
            self._background,
            lambda: self._scheduler.current,
            damaged=lambda exc: self._repair.damaged(exc),
        )
        self._scheduler = Scheduler(
            root,
            roles,
            self._board,
            self._background,
            hooks,
            rescan=lambda paths: self._background.spawn(self._indexer.refresh(paths, reread=True)),
            pool=self._pool,
        )
        self._indexer = Indexer(
            root, settings, self._index, self._scheduler, self._board, hooks, self._background, self._pool
        )
        self._listing = FileListing(root, self._index)
        self._overviews: Overviews | None = None
        self._repair = IndexRepair(roles, self._background, self._rebuild, hooks.on_warning)

    @classmethod
    async def open(
        cls,
        root: Path,
        editor_settings: Mapping[str, Any] | None = None,
        env: Mapping[str, str] = os.environ,
        hooks: Hooks | None = None,
        writer_lock: WriterLock | None = None,
    ) -> Workspace:
        """Open the workspace at `root`: as the index's writer if its lock is free (or is
        `writer_lock`, which the caller waited for), else as a reader."""
        hooks = hooks or Hooks()
        if "\0" in str(root):
            raise WorkspaceUnavailable(f"workspace root {str(root)!r} contains a NUL character")
        root = root.expanduser().resolve()
        if not root.is_dir():
            raise WorkspaceUnavailable(f"workspace root {root} is not a directory")
        if (refused := unsafe_root_reason(root, env)) is not None:
            raise WorkspaceUnavailable(refused)
        loaded = load_settings(root, editor_settings, env)
        for warning in loaded.warnings:  # each face shows `warnings` to its user: recorded only
            log.info("%s", warning)
        roles = await Roles.acquire(
            db_path_for(root, loaded.settings, env),
            loaded.warnings,
            default=default_db_path(root, env),
            held=writer_lock,
        )
        workspace = cls(root, loaded.settings, roles, loaded.warnings, hooks)
        workspace.env = env
        if roles.role == "writer":
            model = workspace._scheduler.model
            await workspace._guarded(
                lambda: model.configure(workspace.settings, workspace.warnings), wait=False
            )
        workspace._background.spawn(
            roles.keep_role(
                workspace._became_writer,
                closed=lambda: workspace._board.closed,
                warn=hooks.on_warning,
            )
        )
        return workspace

    async def _became_writer(self) -> None:
        try:
            await self._scheduler.model.configure(self.settings, self.warnings)
        except Exception:  # index without the model rather than no index at all
            log.exception("model annotation could not be set up")
        self.start_indexing("index")

    @property
    def role(self) -> Role:
        return self._roles.role

    @property
    def writer_pid(self) -> int | None:
        return self._roles.writer_pid()

    @property
    def unwritable(self) -> str | None:
        """Why this process can never write the index (its storage refuses writes), if so."""
        return self._roles.unwritable

    @property
    def phase(self) -> IndexPhase:
        return self._board.phase

    @property
    def last_error(self) -> str | None:
        return self._board.last_error

    async def reconfigure(self, editor_settings: Mapping[str, Any] | None) -> tuple[list[str], bool]:
        """Apply new editor settings. Returns the warnings and whether the index must be
        rescanned because what belongs in it changed; a changed model or budget takes effect
        at once."""
        loaded = load_settings(self.root, editor_settings)
        old, self.settings = self.settings, loaded.settings
        self._indexer.settings = self.settings
        self._pool.resize(worker_count(self.settings.index.workers))
        warnings = list(loaded.warnings)
        if db_path_for(self.root, self.settings) != self._roles.requested:
            warnings.append("dbPath changes take effect when the server restarts")
        rescan = (old.exclude, old.include, old.max_file_size) != (
            self.settings.exclude,
            self.settings.include,
            self.settings.max_file_size,
        )
        if (old.model, old.budget, old.privacy_mode, old.shared_cache) != (
            self.settings.model,
            self.settings.budget,
            self.settings.privacy_mode,
            self.settings.shared_cache,
        ):
            model = self._scheduler.model
            await model.configure(self.settings, warnings)
            if model.annotator is not None and not rescan:
                model.queue.extend(await model.backlog(), BACKGROUND)
                self._scheduler.ensure_draining()
        return warnings, rescan

    async def close(self, *, hand_off: bool = False) -> None:
        """Stop all work and let go of the index. With `hand_off` (a face whose process is
        short-lived: an MCP session, a CLI command), work this cuts short is left to a
        background indexer, started first so that it is waiting when the lock is let go."""
        if hand_off and await self._cut_short():
            handoff.start_background_indexer(self.root, self._index.path, self.env)
        self._board.closed = True
        # The workers stop at once rather than finish their batch: a scan cancelled while it
        # waits for one would otherwise wait seconds (large files) before it can end.
        workers_stopped = asyncio.get_running_loop().run_in_executor(None, self._pool.close)
        await self._background.cancel_all(self._indexer.task, *self._scheduler.tasks)
        await workers_stopped
        await self._scheduler.model.close()
        await self._roles.close()

    async def _cut_short(self) -> bool:
        """Whether closing now cuts work short: this process writes the index, and a pass, a
        repair, or an annotation backlog that is not done yet is under way. (Reader, read-only
        index, or nothing left: nothing to finish.)"""
        if self.role != "writer" or self.unwritable is not None or self._board.closed:
            return False
        if _running(self._indexer.task) or _running(self._repair.task):
            return True
        structural, model = self._scheduler.structural, self._scheduler.model
        # A drain may only be looking at the files a question turned up, annotated already.
        try:
            if _running(structural.task) and await structural.backlog():
                return True
            if _running(model.task) and model.annotator is not None:
                waiting, _ = await self._index.annotations.waiting_for(model.annotator.id)
                return waiting > len(model.gave_up)
        except Exception as exc:  # the index is failing: nothing a second process could finish
            log.debug("cannot tell what is left to annotate: %s", exc)
        return False

    def stop_threads(self) -> None:
        """Last resort when the event loop is gone (the client vanished without shutdown)."""
        self._pool.close()
        self._index.stop_threads()

    # -- indexing --------------------------------------------------------------------------

    def start_indexing(self, kind: str = "index", *, quiet: bool = False) -> asyncio.Future[ScanTotals]:
        """Start a full pass (scan, then annotate what changed) in the background; the future
        resolves once the scan is stored, when the index is ready for queries. The writer's first
        pass is followed by a check of the whole index file."""
        scanned = self._indexer.start(kind, quiet=quiet)
        self._repair.check_once_idle(self.wait_idle)
        return scanned

    def _rebuild(self) -> asyncio.Future[ScanTotals]:
        """Fill a fresh index that took a damaged one's place: a normal pass, with progress."""
        self._indexer.history = HistoryKeeper(self.root, self._index)  # HEAD is news to it
        return self._indexer.start("index")

    async def _guarded(self, operation: Callable[[], Awaitable[T]], *, wait: bool = True) -> T:
        """Run `operation`; when the index turns out damaged under it, once more on the rebuilt
        index: with `wait`, once the rebuild's scan is stored (an answer that lacks nothing),
        else as soon as the fresh index is in place (a status answers at once)."""
        epoch = await self._repair.before()
        try:
            return await operation()
        except Exception as exc:
            if not await self._repair.recover(exc, epoch, wait=wait):
                raise
        try:
            return await operation()
        except Exception as exc:
            self._unrepaired(exc)
            raise

    async def _guarded_stream(self, stream: Callable[[], AsyncIterator[T]]) -> AsyncIterator[T]:
        """`_guarded` for a stream, tried again only if it failed before its first item."""
        epoch = await self._repair.before()
        began = False
        try:
            async with contextlib.aclosing(stream()) as items:  # type: ignore[type-var]  # an async generator
                async for item in items:
                    began = True
                    yield item
            return
        except Exception as exc:
            if began:  # what went out cannot be taken back: say why the rest is missing
                self._unrepaired(exc)
                raise
            if not await self._repair.recover(exc, epoch, wait=True):
                raise
        try:
            async with contextlib.aclosing(stream()) as items:  # type: ignore[type-var]  # an async generator
                async for item in items:
                    yield item
        except Exception as exc:
            self._unrepaired(exc)
            raise

    def _unrepaired(self, exc: Exception) -> None:
        """Damage an operation met that trying again cannot get past: a clear error instead
        (the repair, if the damage is new, is under way)."""
        if (message := self._repair.damaged(exc)) is not None:
            raise WorkspaceUnavailable(message) from exc

    async def reindex(self) -> ReindexResult:
        """Rescan now; returns once the scan is stored (annotation continues). A reindex asked
        for while a damaged index is rebuilt shares the rebuild's scan."""
        self._roles.require_writer("reindex")
        # Shielded: the scan is shared (a pass that replaces this one hands it its own), so a
        # caller who gives up must not cancel it for the others.
        totals = await self._guarded(
            lambda: asyncio.shield(self._repair.rebuild_scan() or self._indexer.start("reindex")), wait=False
        )
        return ReindexResult(
            added=totals.added,
            changed=totals.changed,
            removed=totals.removed,
            renamed=totals.renamed,
            unchanged=totals.unchanged,
            files=totals.files,
            elapsed_ms=totals.elapsed_ms,
        )

    async def wait_idle(self) -> None:
        """Wait until the current pass, the annotation backlogs and the repair of a damaged
        index are done (each may start the next, so look again until none runs). A waiter that
        gives up (an interrupted command) leaves the work running, for `close` to hand on."""
        while running := [
            task
            for task in (self._indexer.task, *self._scheduler.tasks, self._repair.task)
            if task is not None and not task.done()
        ]:
            done, _ = await asyncio.wait(running)
            for task in done:
                task.cancelled() or task.exception()  # retrieved: each says what failed itself

    async def start_reconciling(self, interval: float) -> None:
        """Rescan quietly every `interval` seconds, for changes no editor reported."""
        await self._indexer.reconcile_every(interval)

    # -- access and change signals ---------------------------------------------------------

    def _relative_paths(self, values: Sequence[str], field: str = "paths") -> list[str]:
        paths = [
            to_relative(self.root, value, field=f"{field}[{index}]") for index, value in enumerate(values)
        ]
        return [path for path in dict.fromkeys(paths) if path]

    async def touch(self, values: Sequence[str], *, weight: float = 1.0, record: bool = True) -> None:
        """A client used these files: annotate them first, and remember the access."""
        if paths := self._relative_paths(values):
            await self._guarded(
                lambda: self._scheduler.touch(paths, weight=weight, record=record), wait=False
            )

    async def refresh(self, values: Sequence[str]) -> None:
        """Re-examine files the editor reports as saved, created, changed or deleted."""
        paths = self._relative_paths(values)
        await self._guarded(lambda: self._indexer.refresh(paths), wait=False)

    async def annotate_now(self, values: Sequence[str], *, timeout: float) -> list[FileItem]:
        """Annotate these files before anything else and answer once they show the current
        annotator's annotation (or when `timeout` runs out, with what they show then)."""
        self._roles.require_writer("annotate")
        paths = self._relative_paths(values)
        return await self._guarded(lambda: self._annotate_now(paths, timeout=timeout))

    async def _annotate_now(self, paths: list[str], *, timeout: float) -> list[FileItem]:
        existing = await self._index.files.existing(paths)
        missing = sorted(set(paths) - set(existing))
        if missing:
            raise InvalidParams(f"paths: not in the index: {', '.join(missing[:5])}")
        await self._scheduler.touch(existing, weight=1.0, record=True)
        entries = await self._scheduler.wait_annotated(existing, timeout=timeout)
        return [file_item(entries[path]) for path in existing if path in entries]

    # -- queries ---------------------------------------------------------------------------

    def stream_files(self, params: GetFilesParams) -> AsyncIterator[list[FileItem]]:
        """Every matching file, in batches of `params.batch_size`."""
        return self._guarded_stream(lambda: self._listing.stream(params, current=self._scheduler.current))

    async def files_page(self, params: GetFilesParams) -> GetFilesPage:
        return await self._guarded(lambda: self._listing.page(params, current=self._scheduler.current))

    def find_relevant_stream(self, params: FindRelevantParams) -> AsyncIterator[FindUpdate]:
        """The stages of findRelevant as they complete; the last update is `done`."""
        return self._guarded_stream(lambda: self._find_relevant_updates(params))

    async def _find_relevant_updates(self, params: FindRelevantParams) -> AsyncIterator[FindUpdate]:
        """findRelevant's stages, as answers; the scheduler hears which files were returned."""
        # Imported at the first question, not at startup: nothing on the way to a query-ready
        # index needs the relevance stages.
        from filescout.engine.answers import FindUpdate, question_of
        from filescout.relevance.find import find

        scoped = params.scope is not None and bool(params.scope.globs)
        # Globs compile in a thread: a hundred long ones take a tenth of a second.
        question = (
            await asyncio.to_thread(question_of, params, self.root)
            if scoped
            else question_of(params, self.root)
        )
        model = self._scheduler.model.annotator
        client = model.client if model is not None else None
        async for update in find(self._index, question, client, current=self._scheduler.current):
            if update.done and update.items:
                self._scheduler.returned([item.entry.path for item in update.items])
            answer = FindUpdate.of(update)
            if update.done and params.prompt is not None:
                answer.with_prompt(params.query, params.prompt.tokens)
            yield answer

    async def find_relevant(self, params: FindRelevantParams) -> FindRelevantResult:
        async for update in self.find_relevant_stream(params):
            if update.done:
                return update.result()
        raise AssertionError("the relevance stages ended without an answer")

    async def overview(self, params: GetOverviewParams) -> OverviewResult:
        """The workspace as an annotated tree within `params.tokens`, optionally scoped and
        focused on a question (engine/overview.py). Reads only: nothing is recorded as used."""
        if self._overviews is None:
            # Imported at the first overview, not at startup, like the relevance stages.
            from filescout.engine.overview import Overviews

            self._overviews = Overviews(self.root, self._index, lambda: self._scheduler.model.directory_id)
        overviews = self._overviews
        found = await self._guarded(
            lambda: overviews.overview(
                tokens=params.tokens,
                query=params.query,
                globs=params.globs,
                paths=params.paths,
                current=self._scheduler.current,
            )
        )
        return OverviewResult(
            prompt=found.text,
            entries=[
                shown(
                    OverviewEntry(
                        path=line.path,
                        type="directory" if line.is_directory else "file",
                        depth=line.depth,
                        summary=line.summary,
                        files=line.files,
                        folded=line.folded,
                        importance=round(line.importance, 4),
                        languages=list(line.languages),
                    )
                )
                for line in found.lines
            ],
            files=found.files,
            shown=found.shown,
            estimated_tokens=found.tokens,
        )

    async def push_to_shared_cache(self) -> sharing.PushReport:
        """Share this machine's model annotations of the workspace with the team's cache."""
        return await self._guarded(lambda: sharing.push(self._index, self.settings.shared_cache))

    async def shared_cache_report(self) -> sharing.CacheReport:
        return await self._guarded(lambda: sharing.report(self._index, self.settings.shared_cache))

    async def status(self) -> StatusResult:
        return await self._guarded(
            lambda: workspace_status(self.root, self.settings, self._roles, self._board, self._scheduler),
            wait=False,
        )


def _running(task: asyncio.Future[Any] | None) -> bool:
    return task is not None and not task.done()
