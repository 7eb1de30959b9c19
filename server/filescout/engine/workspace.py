"""The engine's face: one workspace and every operation on it. The LSP handlers, the CLI and
the MCP tools each make one call here; this is where plain records become protocol Structs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from filescout.annotate.structural import ANNOTATOR_ID as STRUCTURAL
from filescout.core.errors import FilescoutError, InvalidParams, WorkspaceUnavailable
from filescout.core.paths import to_relative, unsafe_root_reason
from filescout.engine import handoff
from filescout.engine.admission import Admission, heavy_slots, is_small_page
from filescout.engine.background import Background
from filescout.engine.board import StatusBoard
from filescout.engine.hooks import Hooks
from filescout.engine.listing import FileListing, file_item
from filescout.engine.queue import BACKGROUND
from filescout.engine.repair import IndexRepair
from filescout.engine.roles import Role, Roles
from filescout.engine.settings import CONFIG_FILE, LoadedSettings, db_path_for, default_db_path, load_settings
from filescout.engine.shown import shown
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

# The indexing machinery (passes, the scheduler and its workers, the annotation pool) is imported
# where a Workspace is made, not here: a command answered from a current index (`CurrentIndex`)
# needs none of it, and importing it costs a one-shot command most of its time.
if TYPE_CHECKING:
    from filescout.core.records import DirectoryListing, KnownFile, ScanTotals
    from filescout.engine import sharing
    from filescout.engine.answers import FindUpdate
    from filescout.engine.overview import Overview, Overviews
    from filescout.index import Index
    from filescout.index.history import HistoryState
    from filescout.index.lock import WriterLock
    from filescout.llm.client import ModelClient
    from filescout.relevance.find import RelevanceUpdate
    from filescout.scan.ignore import IgnoreRules

log = logging.getLogger(__name__)

T = TypeVar("T")


class Workspace:
    """The engine for one workspace root."""

    def __init__(
        self, root: Path, settings: Settings, roles: Roles, warnings: list[str], hooks: Hooks
    ) -> None:
        from filescout.engine.annotation_pool import AnnotationPool, worker_count
        from filescout.engine.passes import Indexer
        from filescout.engine.scheduler import Scheduler

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
        self._admission = Admission(heavy_slots())
        """Heavy queries take turns (engine/admission.py), so cheap ones never wait behind a burst."""
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
        root, loaded, roles = await _acquire(
            root, editor_settings, env, writer_lock, persistent=hooks.persistent
        )
        return await cls._started(root, loaded, roles, env, hooks)

    @classmethod
    async def _started(
        cls, root: Path, loaded: LoadedSettings, roles: Roles, env: Mapping[str, str], hooks: Hooks
    ) -> Workspace:
        """The engine on an index whose role is taken: the model set up (by the writer), and the
        watch that lets a reader take over once the writer exits."""
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
        from filescout.engine.annotation_pool import worker_count

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
        from filescout.engine.history_keeper import HistoryKeeper

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

    async def settle_stores(self) -> bool:
        """Wait until the top-k stores (content words, descriptions) have every change they
        were told of (built first if they are to be); whether both answer now. For benchmarks
        and tests: a question never waits for a store."""
        return await self._roles.index.stores_settled()

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

    async def catch_up(self) -> None:
        """Take in what changed on disk since the index last looked, before answering a process
        that watches nothing (a command in a terminal, through the door): the few files that
        changed read again and annotated (for `CAUGHT_UP_WAIT` at most), or else a pass's scan
        stored. A pass under way has its scan stored first, then the check finds what changed
        after its listing; a scan that takes longer than `CAUGHT_UP_WAIT` (a first index of a
        large tree) is not waited for: the answer comes from what it has stored, as the
        editor's own questions do."""
        if self.role != "writer" or self.unwritable is not None or self._board.closed:
            return
        if _running(self._repair.task):
            return  # a damaged index being rebuilt: its pass answers
        if _running(self._indexer.task) and not await self._indexer.scan_stored(CAUGHT_UP_WAIT):
            return
        stale = await changed_on_disk(self._index, self.root, self.settings)
        if stale == []:
            return
        if stale is None:
            # Shielded: the scan is shared, and the pass goes on if the question is dropped.
            await self._guarded(lambda: asyncio.shield(self.start_indexing("index", quiet=True)), wait=False)
            return
        await self._guarded(lambda: self._indexer.refresh(stale), wait=False)
        await self._scheduler.wait_annotated(stale, timeout=CAUGHT_UP_WAIT, poll=0.01)

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
        """Every matching file, in batches of `params.batch_size`, once admitted."""
        return self._admission.admitted(
            self._guarded_stream(lambda: self._listing.stream(params, current=self._scheduler.current))
        )

    async def files_page(self, params: GetFilesParams) -> GetFilesPage:
        """A page of matching files: at once when it is small, else once admitted."""
        if is_small_page(
            params.limit,
            streamed=params.partial_result_token is not None,
            query=params.query,
            globs=params.globs,
        ):
            return await self._files_page(params)
        async with self._admission.heavy():
            return await self._files_page(params)

    async def _files_page(self, params: GetFilesParams) -> GetFilesPage:
        return await self._guarded(lambda: self._listing.page(params, current=self._scheduler.current))

    def find_relevant_stream(self, params: FindRelevantParams) -> AsyncIterator[FindUpdate]:
        """The stages of findRelevant as they complete; the last update is `done`. The model-free
        stage waits its turn among the heavy queries; the model's stages wait on the endpoint."""
        return self._admission.admitted(
            self._guarded_stream(lambda: self._find_relevant_updates(params)), through_first=True
        )

    async def _find_relevant_updates(self, params: FindRelevantParams) -> AsyncIterator[FindUpdate]:
        """findRelevant's stages, as answers; the scheduler hears which files were returned."""
        model = self._scheduler.model.annotator
        client = model.client if model is not None else None
        async for answer, update in _find_updates(
            self._index, self.root, params, client, current=self._scheduler.current
        ):
            if update.done and update.items:
                self._scheduler.returned([item.entry.path for item in update.items])
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
        async with self._admission.heavy():
            found = await self._guarded(
                lambda: overviews.overview(
                    tokens=params.tokens,
                    query=params.query,
                    globs=params.globs,
                    paths=params.paths,
                    current=self._scheduler.current,
                )
            )
        return _overview_result(found)

    async def push_to_shared_cache(self) -> sharing.PushReport:
        """Share this machine's model annotations of the workspace with the team's cache."""
        from filescout.engine import sharing

        return await self._guarded(lambda: sharing.push(self._index, self.settings.shared_cache))

    async def shared_cache_report(self) -> sharing.CacheReport:
        from filescout.engine import sharing

        return await self._guarded(lambda: sharing.report(self._index, self.settings.shared_cache))

    async def status(self) -> StatusResult:
        from filescout.engine.status import workspace_status

        return await self._guarded(
            lambda: workspace_status(self.root, self.settings, self._roles, self._board, self._scheduler),
            wait=False,
        )


def _running(task: asyncio.Future[Any] | None) -> bool:
    return task is not None and not task.done()


async def _acquire(
    root: Path,
    editor_settings: Mapping[str, Any] | None,
    env: Mapping[str, str],
    writer_lock: WriterLock | None,
    *,
    persistent: bool,
) -> tuple[Path, LoadedSettings, Roles]:
    """The workspace's root (checked), its settings, and its index in the role this process can
    take: the writer's if the lock is free (or is `writer_lock`), else a reader's; with the
    top-k stores (content words, descriptions) kept only when `persistent`."""
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
        stores=persistent,
    )
    return root, loaded, roles


async def _find_updates(
    index: Index, root: Path, params: FindRelevantParams, client: ModelClient | None, *, current: str
) -> AsyncIterator[tuple[FindUpdate, RelevanceUpdate]]:
    """findRelevant's stages, each as the answer a client is sent and as the relevance stages
    made it."""
    # Imported at the first question, not at startup: nothing on the way to a query-ready
    # index needs the relevance stages.
    from filescout.engine.answers import FindUpdate, question_of
    from filescout.relevance.find import find

    scoped = params.scope is not None and bool(params.scope.globs)
    # Globs compile in a thread: a hundred long ones take a tenth of a second.
    question = await asyncio.to_thread(question_of, params, root) if scoped else question_of(params, root)
    async for update in find(index, question, client, current=current):
        answer = FindUpdate.of(update)
        if update.done and params.prompt is not None:
            answer.with_prompt(params.query, params.prompt.tokens)
        yield answer, update


def _overview_result(found: Overview) -> OverviewResult:
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


# -- answering from the index as it is ---------------------------------------------------------

RULES_FINGERPRINT = "rules_fingerprint"
"""The meta key a full pass stores its ignore rules' fingerprint under (`passes.RULES_FINGERPRINT`)."""
SKIPPED_NAMES = "skipped_names"
"""The meta key for the files the last pass left out for their names (`passes.SKIPPED_NAMES`)."""
HISTORY_UNREADABLE = "history_unreadable_at"
"""The meta key for the HEAD whose history git could not read (`history_keeper.HISTORY_UNREADABLE`)."""


class NeedsEngine(Exception):
    """A query on a `CurrentIndex` failed before it answered anything: the whole engine (which
    repairs a damaged index) should answer it instead."""


class CurrentIndex:
    """A workspace's index, answering as it is, without the indexing machinery: what a one-shot
    command (the CLI) uses when the index is current, or when another process keeps it current.
    Opening one loads the settings and the index and takes the same role `Workspace.open`
    would; `engine` turns it into the whole engine, on the same index and lock, when the index
    must be brought up to date first."""

    def __init__(self, root: Path, loaded: LoadedSettings, roles: Roles, env: Mapping[str, str]) -> None:
        self.root = root
        self.settings = loaded.settings
        self.warnings = loaded.warnings
        self.env = env
        self._loaded = loaded
        self._roles: Roles | None = roles
        self._index: Index = roles.index

    @classmethod
    async def open(cls, root: Path, env: Mapping[str, str] = os.environ) -> CurrentIndex:
        root, loaded, roles = await _acquire(root, None, env, None, persistent=False)
        return cls(root, loaded, roles, env)

    @property
    def role(self) -> Role:
        return self._index_roles().role

    @property
    def writer_pid(self) -> int | None:
        return self._index_roles().writer_pid()

    @property
    def unwritable(self) -> str | None:
        return self._index_roles().unwritable

    def _index_roles(self) -> Roles:
        if self._roles is None:
            raise RuntimeError("this index was handed to the engine")
        return self._roles

    @property
    def current_annotator(self) -> str:
        """The annotator whose annotations files show here: the embedded one (a model is only
        ever set up by the whole engine, so `stale_files` sends a writer with one there)."""
        return STRUCTURAL

    async def stale_files(self) -> list[str] | None:
        """What a pass would do now, when it is little: [] when it would leave the index as it
        is, the indexed files it would read again when they are all it would do, None when a
        whole pass is needed (or it cannot be told). The index is current when this process
        writes it, no model is set up to annotate, nothing is left to annotate, and nothing
        changed on disk (`changed_on_disk`)."""
        roles = self._index_roles()
        model = self.settings.model
        if (
            roles.role != "writer"
            or roles.unwritable is not None
            or (model.model and not self.settings.privacy_mode)
        ):
            return None
        try:
            if await self._index.annotations.backlog(self.current_annotator, machine=True):
                return None
        except Exception as exc:  # the pass says what is wrong, and the repair mends the index
            log.debug("cannot tell whether the index is current: %s", exc)
            return None
        return await changed_on_disk(self._index, self.root, self.settings)

    async def engine(self, hooks: Hooks) -> Workspace:
        """The whole engine on this index, in the role taken (the lock stays held); this object
        is done with."""
        roles, self._roles = self._index_roles(), None
        return await Workspace._started(self.root, self._loaded, roles, self.env, hooks)

    # -- queries, as the engine answers them -------------------------------------------------

    def find_relevant_stream(self, params: FindRelevantParams) -> AsyncIterator[FindUpdate]:
        """The stages of findRelevant, as `Workspace.find_relevant_stream` gives them."""
        return _first_or_engine(self._find_relevant_updates(params))

    async def _find_relevant_updates(self, params: FindRelevantParams) -> AsyncIterator[FindUpdate]:
        async for answer, _ in _find_updates(
            self._index, self.root, params, None, current=self.current_annotator
        ):
            yield answer

    def stream_files(self, params: GetFilesParams) -> AsyncIterator[list[FileItem]]:
        return _first_or_engine(
            FileListing(self.root, self._index).stream(params, current=self.current_annotator)
        )

    async def overview(self, params: GetOverviewParams) -> OverviewResult:
        from filescout.engine.overview import Overviews

        overviews = Overviews(self.root, self._index, lambda: None)  # no model: no directory summaries
        try:
            found = await overviews.overview(
                tokens=params.tokens,
                query=params.query,
                globs=params.globs,
                paths=params.paths,
                current=self.current_annotator,
            )
        except FilescoutError:
            raise
        except Exception as exc:
            raise NeedsEngine(str(exc)) from exc
        return _overview_result(found)

    async def close(self) -> None:
        """Let go of the index and the lock (unless the engine took them over)."""
        if self._roles is not None:
            await self._roles.close()


async def _first_or_engine(stream: AsyncIterator[T]) -> AsyncIterator[T]:
    """`stream`, whose failure before its first item (other than the question's own) is
    NeedsEngine: the whole engine answers then, mending what is wrong with the index."""
    began = False
    async with contextlib.aclosing(stream):  # type: ignore[type-var]  # an async generator
        try:
            async for item in stream:
                began = True
                yield item
        except FilescoutError:  # said in words: the question's own, or the workspace's
            raise
        except Exception as exc:
            if began:
                raise
            raise NeedsEngine(str(exc)) from exc


async def changed_on_disk(index: Index, root: Path, settings: Settings) -> list[str] | None:
    """What a pass would find changed on disk now, when it is little: [] when it would leave the
    index as it is, the indexed files it would read again when they are all it would do, None
    when a whole pass is needed (or it cannot be told): the last pass was complete (same rules,
    the history at HEAD), and the files are those it stored, each with the size and modification
    time it had then. Checked as a pass's scan checks (git's listing or the remembered walk, then
    a stat of every file), without reading or storing anything."""
    started = time.perf_counter()
    # git is asked for HEAD while the index is read and the tree listed.
    head = asyncio.ensure_future(asyncio.to_thread(_head_commit, root))
    known: Mapping[str, KnownFile] = {}
    try:
        if await index.meta.get("last_scan") is None:
            return None
        fingerprint = await index.meta.get(RULES_FINGERPRINT)
        skipped = await index.meta.get(SKIPPED_NAMES)
        known = await index.files.known()
        walked = await index.directories.load()
        history = await index.history.state()
        unreadable = await index.meta.get(HISTORY_UNREADABLE)
        # Listed (git runs beside) while every indexed file is looked at: two threads.
        listed, stale = await asyncio.gather(
            asyncio.to_thread(
                _listed_as_indexed,
                root,
                settings,
                index.path,
                known,
                walked,
                fingerprint or "",
                int(skipped or 0),
            ),
            asyncio.to_thread(_changed_files, root, known),
        )
        if not listed or not _at_head(history, await head, unreadable):
            stale = None
    except Exception as exc:  # the pass says what is wrong, and the repair mends the index
        log.debug("cannot tell whether the index is current: %s", exc)
        return None
    finally:
        await asyncio.gather(head, return_exceptions=True)  # git's answer, if unused, waited for
    log.info(
        "the index is %s (%d files looked at in %d ms)",
        "current" if stale == [] else "not current",
        len(known),
        (time.perf_counter() - started) * 1000,
    )
    return stale


STALE_FILES_LIMIT = 64
"""More changed files than this are left to a whole pass, which reads them in worker processes."""
CAUGHT_UP_WAIT = 5.0
"""The longest a question through the door waits for the scan of a pass under way to be stored,
and then for the files it had read again to be annotated (by the embedded annotator,
milliseconds; a model may take longer: the answer then shows the annotation they had)."""


def _listed_as_indexed(
    root: Path,
    settings: Settings,
    db_path: Path,
    known: Mapping[str, KnownFile],
    walked: Mapping[str, DirectoryListing],
    fingerprint: str,
    skipped: int,
) -> bool:
    """Whether a pass would list the files the index holds, no more and no fewer: its own steps
    (engine/passes.py), read-only. The same rules (their fingerprint), the same listing (git's,
    or a walk that lists only the directories whose stamp changed)."""
    from filescout.scan.ignore import IgnoreRules

    excludes = list(settings.exclude)
    try:
        db_relative = db_path.resolve().relative_to(root).as_posix()
    except ValueError:
        pass
    else:  # as `Indexer.ignore_rules`: an index kept inside the workspace is not indexed
        excludes += [f"/{db_relative}", f"/{db_relative}-wal", f"/{db_relative}-shm", f"/{db_relative}.lock"]
    rules = IgnoreRules.for_workspace(root, excludes, settings.include)
    if rules.fingerprint != fingerprint:
        return False
    listed = _git_listed(root, rules, known)
    if listed is None:  # not a plain git work tree: listed as a pass lists it
        from filescout.scan.tree import enumerate_files

        listing = enumerate_files(root, rules, lambda: known, walked)
        if listing.unlistable or (
            listing.walked is not None and (listing.walked.listed or listing.walked.gone)
        ):
            return False
        listed = set(listing.paths), len(listing.undecodable)
    return known.keys() == listed[0] and listed[1] == skipped


def _changed_files(root: Path, known: Mapping[str, KnownFile]) -> list[str] | None:
    """The indexed files whose size or modification time is not the one stored; None when a
    file is gone, when one of them is a rule file, or when there are too many for a refresh."""
    from filescout.scan.ignore import FILESCOUTIGNORE

    rule_files = {".gitignore", FILESCOUTIGNORE, CONFIG_FILE}  # a change: a pass (`passes.RULE_FILES`)
    base = str(root)
    prefix = base + "/"
    lstat, is_regular = os.lstat, stat.S_ISREG
    stale: list[str] = []
    for path, previous in known.items():
        try:
            info = lstat(prefix + path)
        except OSError:
            return None
        if not is_regular(info.st_mode):  # a symlink counts as what it leads to, inside the root
            from filescout.scan.tree import stat_inside

            followed = stat_inside(base, path)
            if followed is None:
                return None
            info = followed
        if previous[1] != info.st_size or previous[2] != info.st_mtime_ns:
            stale.append(path)
            if len(stale) > STALE_FILES_LIMIT or path.rpartition("/")[2] in rule_files:
                return None
    return stale


GIT_TIMEOUT = 300.0


def _git_listed(
    root: Path, rules: IgnoreRules, known: Mapping[str, KnownFile]
) -> tuple[set[str], int] | None:
    """What a pass lists in a git work tree of its own (`scan.tree.git_ls_files`): git's tracked
    and untracked files that filescout's rules let through (those indexed passed them already),
    and how many names are left out for not being UTF-8. None for a tree whose listing needs
    more (submodules, paths filescout brings back from git's ignored ones) or when git fails:
    the scan's own listing answers then. Here, rather than through scan.tree, which a one-shot
    command would import for this alone."""
    if not (root / ".git").exists() or os.path.lexists(root / ".gitmodules") or rules.has_reincludes:
        return None
    from filescout.vcs import git

    listing = git.run(
        root, "ls-files", "--cached", "--others", "--exclude-standard", "-z", timeout=GIT_TIMEOUT
    )
    if listing is None or listing.returncode != 0:
        return None
    names = dict.fromkeys(
        name for name in listing.stdout.decode("utf-8", "surrogateescape").split("\0") if name
    )
    paths: set[str] = set()
    undecodable = 0
    for name in names:
        if name not in known and rules.is_ignored_after_git(name, git_ignored=False):
            continue
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            undecodable += 1
        else:
            paths.add(name)
    return paths, undecodable


def _head_commit(root: Path) -> str | None:
    """HEAD's commit as `vcs.commits.find_head` asks git for it; None outside git (or before the
    first commit)."""
    from filescout.vcs import git

    found = git.run(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", "--show-prefix", timeout=15.0)
    if found is None or found.returncode != 0:
        return None
    lines = found.stdout.decode("utf-8", "surrogateescape").splitlines()
    commits = [line for line in lines if len(line) in (40, 64) and all(c in "0123456789abcdef" for c in line)]
    return commits[0] if len(commits) == 1 else None


def _at_head(history: HistoryState | None, head: str | None, unreadable: str | None) -> bool:
    """Whether the history index is what a pass's update (`HistoryKeeper`) would leave: complete
    at HEAD's commit, empty outside git, or as it is where git could not read HEAD's history."""
    if head is None:
        return history is None
    if unreadable == head:
        return True
    return history is not None and history.tip == head and history.highest == history.newest
