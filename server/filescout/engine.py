"""One workspace's state and every operation on it. The LSP handlers and the CLI both call
this; neither has logic of its own."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import msgspec

from filescout import __version__
from filescout.annotate import FileToAnnotate, HeuristicAnnotator
from filescout.annotate.base import Annotator
from filescout.config import CONFIG_FILE, db_path_for, load_settings
from filescout.errors import InvalidParams, ReadOnly, WorkspaceUnavailable
from filescout.ignore import FILESCOUTIGNORE, IgnoreRules
from filescout.imports import import_candidates
from filescout.lock import WriterLock
from filescout.paths import to_relative
from filescout.progress import NullProgress, ProgressReporter
from filescout.relevance.filters import PathFilter, decode_cursor, encode_cursor
from filescout.relevance.lexical import lexical_stage
from filescout.scan import Listing, ScanBatch, content_hash, enumerate_files, scan, scan_paths
from filescout.schedule import BACKGROUND, NEIGHBOUR, TOUCHED, AnnotationQueue
from filescout.store import IndexUnusable, PendingFile, Store
from filescout_protocol.types import (
    PROTOCOL_VERSION,
    FileItem,
    FindRelevantParams,
    FindRelevantResult,
    GetFilesPage,
    GetFilesParams,
    IndexPhase,
    IndexStatus,
    ReindexResult,
    Settings,
    StatusResult,
)

log = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE = 1000
ANNOTATION_BATCH = 32
MAX_ANNOTATION_CHARS = 256 * 1024
SCAN_SHARE = 20  # percent of a pass's progress bar given to scanning
NEIGHBOURS_PER_TOUCH = 24
RULE_FILES = frozenset({".gitignore", FILESCOUTIGNORE, CONFIG_FILE})
TAKEOVER_INTERVAL = float(os.environ.get("FILESCOUT_TAKEOVER_INTERVAL", "2"))
READER_OPEN_TIMEOUT = 10.0

StatusListener = Callable[[IndexStatus], None]
ProgressFactory = Callable[[str], Awaitable[ProgressReporter]]
Role = Literal["writer", "reader"]


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _settle(target: concurrent.futures.Future[Any], source: asyncio.Future[Any]) -> None:
    """Pass an asyncio result on to a thread waiting on a concurrent future."""
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())  # type: ignore[arg-type]
    else:
        target.set_result(source.result())


def lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lock")


def _read_text(root: Path, pending: PendingFile) -> FileToAnnotate | None:
    """The file's text if it still has the content the index knows; None if it changed or
    vanished since the scan."""
    try:
        data = (root / pending.path).read_bytes()
    except OSError:
        return None
    if content_hash(data) != pending.hash:
        return None
    text = data[:MAX_ANNOTATION_CHARS].decode("utf-8", errors="replace")
    return FileToAnnotate(path=pending.path, hash=pending.hash, language=pending.language,
                          kind=pending.kind, text=text)


async def open_store(path: Path, warnings: list[str]) -> Store:
    """Open the index for writing; a corrupt, foreign or newer index is moved aside and
    rebuilt (with a warning), since the index is only a cache of the workspace."""
    try:
        return await Store.open(path)
    except Exception as exc:  # IndexUnusable, sqlite3.DatabaseError and friends
        if not path.exists():
            raise WorkspaceUnavailable(f"cannot create the index at {path}: {exc}") from exc
        aside = path.with_name(f"{path.name}.unusable-{int(time.time())}")
        log.warning("index %s is unusable (%s); moving it to %s and rebuilding", path, exc, aside)
        warnings.append(f"the index at {path} was unusable ({exc}); it was moved to {aside.name} "
                        "and is being rebuilt")
        for suffix in ("", "-wal", "-shm"):
            source = Path(str(path) + suffix)
            if source.exists():
                shutil.move(str(source), str(aside) + suffix)
        try:
            return await Store.open(path)
        except Exception as second:
            raise WorkspaceUnavailable(f"cannot create the index at {path}: {second}") from second


async def open_store_readonly(path: Path, timeout: float = READER_OPEN_TIMEOUT) -> Store:
    """Open an index the lock holder writes, waiting briefly for it to create the index."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await Store.open_readonly(path)
        except Exception as exc:
            if time.monotonic() > deadline:
                raise WorkspaceUnavailable(
                    f"another filescout process writes {path}, and it is not readable yet: {exc}"
                ) from exc
            await asyncio.sleep(0.05)


class Workspace:
    """The engine for one workspace root."""

    def __init__(self, root: Path, settings: Settings, store: Store, lock: WriterLock,
                 annotator: Annotator, warnings: list[str]) -> None:
        self.root = root
        self.settings = settings
        self.store = store
        self.lock = lock
        self.annotator = annotator
        self.warnings = warnings
        self.phase: IndexPhase = "idle"
        self.last_error: str | None = None
        self.status_listeners: list[StatusListener] = []
        self.progress_factory: ProgressFactory | None = None
        self.queue = AnnotationQueue()
        self._rules: IgnoreRules | None = None
        self._git_mode = False
        self._pass_task: asyncio.Task[None] | None = None
        self._drain_task: asyncio.Task[None] | None = None
        self._reporter: ProgressReporter = NullProgress()
        self._annotated_in_pass = 0
        self._access_backlog: list[tuple[list[str], float]] = []
        self._touched_unindexed: dict[str, None] = {}
        self._background: set[asyncio.Future[Any]] = set()
        self._closed = False
        store.current_annotator = annotator.id

    @classmethod
    async def open(cls, root: Path, editor_settings: Mapping[str, Any] | None = None,
                   env: Mapping[str, str] = os.environ) -> Workspace:
        root = root.expanduser().resolve()
        if not root.is_dir():
            raise WorkspaceUnavailable(f"workspace root {root} is not a directory")
        loaded = load_settings(root, editor_settings, env)
        for warning in loaded.warnings:
            log.warning("%s", warning)
        db_path = db_path_for(root, loaded.settings, env)
        lock = WriterLock(lock_path(db_path))
        try:
            writer = lock.try_acquire()
        except OSError as exc:
            raise WorkspaceUnavailable(f"cannot use {db_path.parent}: {exc}") from exc
        if writer:
            store = await open_store(db_path, loaded.warnings)
        else:
            log.info("another filescout process (pid %s) writes this index; serving reads",
                     lock.holder())
            store = await open_store_readonly(db_path)
        workspace = cls(root, loaded.settings, store, lock, HeuristicAnnotator(), loaded.warnings)
        if not writer:
            workspace._spawn(workspace._wait_for_takeover())
        return workspace

    @property
    def role(self) -> Role:
        return "writer" if self.store.writable else "reader"

    def _spawn(self, coroutine: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def reconfigure(self, editor_settings: Mapping[str, Any] | None) -> tuple[list[str], bool]:
        """Apply new editor settings. Returns the warnings and whether the index must be
        rescanned because what belongs in it changed."""
        loaded = load_settings(self.root, editor_settings)
        old, self.settings = self.settings, loaded.settings
        warnings = list(loaded.warnings)
        if db_path_for(self.root, self.settings) != self.store.path:
            warnings.append("dbPath changes take effect when the server restarts")
        rescan = (old.exclude, old.include, old.max_file_size) != (
            self.settings.exclude, self.settings.include, self.settings.max_file_size)
        return warnings, rescan

    async def close(self) -> None:
        self._closed = True
        for task in (self._pass_task, self._drain_task, *self._background):
            if task is not None and not task.done():
                task.cancel()
        await asyncio.gather(*(task for task in (self._pass_task, self._drain_task, *self._background)
                               if task is not None), return_exceptions=True)
        await self.store.close()
        self.lock.release()

    # -- roles -----------------------------------------------------------------------------

    async def _wait_for_takeover(self) -> None:
        """Serve reads until the writer goes away, then become the writer."""
        while not self._closed:
            await asyncio.sleep(TAKEOVER_INTERVAL)
            if not self.lock.try_acquire():
                continue
            log.info("the other filescout process has exited; this one now indexes")
            reader = self.store
            self.store = await open_store(reader.path, self.warnings)
            self.store.current_annotator = self.annotator.id
            await reader.close()
            for paths, weight in self._access_backlog:
                await self.store.record_access(paths, weight=weight)
            self._access_backlog.clear()
            self.start_indexing("index")
            return

    def _require_writer(self, action: str) -> None:
        if not self.store.writable:
            raise ReadOnly(f"{action}: another filescout process (pid {self.lock.holder()}) "
                           "indexes this workspace; this one serves reads and takes over when "
                           "it exits")

    # -- status ----------------------------------------------------------------------------

    def _set_phase(self, phase: IndexPhase, message: str | None = None) -> None:
        self.phase = phase
        if self.status_listeners and not self._closed:
            self._spawn(self._emit_status(phase, message))

    async def _emit_status(self, phase: IndexPhase, message: str | None) -> None:
        by_status, _ = await self.store.counts()
        status = IndexStatus(
            phase=phase,
            files=sum(by_status.values()),
            annotated=by_status.get("annotated", 0),
            pending=by_status.get("pending", 0) + by_status.get("stale", 0),
            message=message,
        )
        for listener in self.status_listeners:
            listener(status)

    # -- indexing passes -------------------------------------------------------------------

    def _ignore_rules(self) -> IgnoreRules:
        excludes = list(self.settings.exclude)
        try:
            db_relative = self.store.path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            pass
        else:  # an index kept inside the workspace must not index itself
            excludes += [f"/{db_relative}", f"/{db_relative}-wal", f"/{db_relative}-shm",
                         f"/{db_relative}.lock"]
        return IgnoreRules.for_workspace(self.root, excludes, self.settings.include)

    def start_indexing(self, kind: str = "index", *, quiet: bool = False) -> asyncio.Future[ReindexResult]:
        """Start a full pass (scan, then annotate what changed) in the background, replacing
        any pass under way. The future resolves once the scan is stored. `kind` names the
        progress shown in the editor; a quiet pass shows none."""
        scanned: asyncio.Future[ReindexResult] = asyncio.get_running_loop().create_future()
        # The caller may not wait for the scan; a failure is logged by the pass itself.
        scanned.add_done_callback(lambda future: future.cancelled() or future.exception())
        if self._closed or not self.store.writable:
            scanned.cancel()
            return scanned
        previous = self._pass_task
        if previous is not None and not previous.done():
            previous.cancel()
        self._pass_task = asyncio.create_task(self._run_pass(kind, quiet, scanned, previous),
                                              name=f"filescout-{kind}")
        return scanned

    async def reindex(self) -> ReindexResult:
        """Rescan now; returns once the scan is stored (annotation continues)."""
        self._require_writer("reindex")
        return await self.start_indexing("reindex")

    async def wait_idle(self) -> None:
        """Wait until the current pass and annotation backlog are done."""
        for task in (self._pass_task, self._drain_task):
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)

    async def _run_pass(self, kind: str, quiet: bool, scanned: asyncio.Future[ReindexResult],
                        previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        reporter: ProgressReporter = NullProgress()
        if not quiet and self.progress_factory is not None:
            reporter = await self.progress_factory(kind)
        reporter.begin("filescout: indexing", "scanning files")
        self._reporter = reporter
        outcome = "indexing cancelled"
        try:
            result = await self._scan(reporter)
            if not scanned.done():
                scanned.set_result(result)
            self.queue.clear_background()
            self.queue.extend(await self.store.annotation_order(self.annotator.id), BACKGROUND)
            if self._touched_unindexed:
                found = await self.store.existing(self._touched_unindexed)
                self._touched_unindexed.clear()
                self.queue.extend(reversed(found), TOUCHED)
            self._annotated_in_pass = 0
            self._set_phase("annotating")
            self._ensure_draining()
            await asyncio.shield(self._drain_task)  # type: ignore[arg-type]
            if reporter.is_cancelled():
                raise asyncio.CancelledError
            outcome = f"{result.files} files indexed, {self._annotated_in_pass} annotated"
            self.last_error = None
            self._set_phase("idle", outcome)
        except asyncio.CancelledError:
            self._set_phase("idle", outcome)
            if not scanned.done():
                scanned.cancel()
            raise
        except Exception as exc:
            log.exception("indexing failed")
            self.last_error = f"{type(exc).__name__}: {exc}"
            outcome = f"indexing failed: {self.last_error}"
            self._set_phase("failed", outcome)
            if not scanned.done():
                scanned.set_exception(exc)
        finally:
            reporter.end(outcome)
            if self._reporter is reporter:
                self._reporter = NullProgress()

    async def _scan(self, reporter: ProgressReporter) -> ReindexResult:
        """Stream the scan's batches from a worker thread into the store, so hashing and
        database writes overlap."""
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        batches: asyncio.Queue[ScanBatch | BaseException | None] = asyncio.Queue(maxsize=4)

        def on_progress(done: int, total: int) -> None:
            percentage = SCAN_SHARE * done // total if total else 0
            loop.call_soon_threadsafe(reporter.report, f"scanning {done}/{total} files", percentage)

        def handoff(item: ScanBatch | BaseException | None) -> None:
            future = asyncio.run_coroutine_threadsafe(batches.put(item), loop)
            while True:
                try:
                    future.result(timeout=0.1)
                    return
                except concurrent.futures.TimeoutError:
                    if stop.is_set():  # nobody will take it: the pass is over
                        future.cancel()
                        raise InterruptedError("scan abandoned") from None

        # Load the index's view while git lists the tree: both mostly wait on other threads.
        known_ready: concurrent.futures.Future[dict] = concurrent.futures.Future()
        loading = asyncio.ensure_future(self.store.known_files())
        loading.add_done_callback(functools.partial(_settle, known_ready))
        self._set_phase("scanning")  # after the load: its counts query must not go first

        def produce() -> None:
            try:
                rules = self._ignore_rules()
                listing: Listing = enumerate_files(self.root, rules)
                self._rules, self._git_mode = rules, listing.source == "git"
                for batch in scan(self.root, known_ready.result(), listing,
                                  max_file_size=self.settings.max_file_size, progress=on_progress,
                                  is_cancelled=lambda: stop.is_set() or reporter.is_cancelled()):
                    handoff(batch)
                handoff(None)
            except BaseException as exc:  # handed to the event loop, which re-raises it
                if not stop.is_set():
                    handoff(exc)

        producer = loop.run_in_executor(None, produce)
        totals = ReindexResult(added=0, changed=0, removed=0, renamed=0, unchanged=0, files=0,
                               elapsed_ms=0)
        try:
            while (item := await batches.get()) is not None:
                if isinstance(item, InterruptedError):
                    raise asyncio.CancelledError
                if isinstance(item, BaseException):
                    raise item
                renamed = await self.store.apply_changes(item.changed, item.removed)
                totals = msgspec.structs.replace(
                    totals, added=totals.added + item.added,
                    changed=totals.changed + len(item.changed) - item.added,
                    removed=totals.removed + len(item.removed), renamed=totals.renamed + renamed,
                    unchanged=totals.unchanged + item.unchanged)
        finally:
            stop.set()
            while not batches.empty():  # unblock a producer waiting to hand over
                batches.get_nowait()
            loading.cancel()
            await asyncio.gather(producer, loading, return_exceptions=True)
        await self.store.set_meta("last_scan", utc_now())
        files = await self.store.file_count()
        totals = msgspec.structs.replace(
            totals, files=files, elapsed_ms=int((time.perf_counter() - started) * 1000))
        log.info("scan: %d files, %d new, %d changed, %d removed (%d renamed), %d unchanged in %d ms",
                 files, totals.added, totals.changed, totals.removed, totals.renamed,
                 totals.unchanged, totals.elapsed_ms)
        return totals

    # -- annotation ------------------------------------------------------------------------

    def _ensure_draining(self) -> None:
        if self._closed or not self.store.writable:
            return
        if self._drain_task is None or self._drain_task.done():
            self._drain_task = asyncio.create_task(self._drain(), name="filescout-annotate")

    async def _drain(self) -> None:
        """Annotate queued files, best first, until the queue is empty."""
        if self.phase == "idle":
            self._set_phase("annotating")
        try:
            while batch := self.queue.pop(ANNOTATION_BATCH):
                if self._reporter.is_cancelled():
                    self.queue.clear_background()
                    continue
                pending = await self.store.pending(self.annotator.id, batch)
                if pending:
                    await self._annotate(pending)
                self._annotated_in_pass += len(pending)
                done = self._annotated_in_pass
                total = done + len(self.queue)
                self._reporter.report(f"annotating {done}/{total} files",
                                      SCAN_SHARE + (100 - SCAN_SHARE) * done // max(total, 1))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("annotation failed")
            self.last_error = f"{type(exc).__name__}: {exc}"
        finally:
            if self.phase == "annotating" and (self._pass_task is None or self._pass_task.done()):
                self._set_phase("idle")

    async def _annotate(self, pending: list[PendingFile]) -> None:
        texts = await asyncio.to_thread(lambda: [_read_text(self.root, item) for item in pending])
        readable = [text for text in texts if text is not None]
        changed_since_scan = [item.path for item, text in zip(pending, texts) if text is None]
        if changed_since_scan:
            self._spawn(self.refresh(changed_since_scan))
        results = await self.annotator.annotate(readable)
        await self.store.save_annotations(
            self.annotator.id,
            [(item.hash, annotation) for item, annotation in zip(readable, results)
             if annotation is not None],
        )

    # -- access and change signals ---------------------------------------------------------

    def _relative_paths(self, values: Iterable[str], field: str = "paths") -> list[str]:
        paths = [to_relative(self.root, value, field=f"{field}[{index}]")
                 for index, value in enumerate(values)]
        return [path for path in dict.fromkeys(paths) if path]

    async def touch(self, values: Sequence[str], *, weight: float = 1.0,
                    record: bool = True) -> None:
        """A client used these files: annotate them (and, a little later, their neighbours
        and imports) before anything else, and remember the access."""
        paths = self._relative_paths(values)
        if not paths:
            return
        existing = await self.store.existing(paths)
        # A file opened while the first scan runs is not in the index yet: keep it in mind.
        self._touched_unindexed.update(dict.fromkeys(set(paths) - set(existing)))
        self.queue.extend(reversed(existing), TOUCHED)
        if record:
            if self.store.writable:
                await self.store.record_access(existing, weight=weight)
            else:
                self._access_backlog.append((existing, weight))
        self._ensure_draining()
        self._spawn(self._queue_neighbours(existing))

    async def _queue_neighbours(self, paths: Sequence[str]) -> None:
        for path in paths[:4]:
            directory = path.rpartition("/")[0]
            siblings = await self.store.directory_files(directory, limit=NEIGHBOURS_PER_TOUCH)
            items = await self.store.files_by_path([path])
            candidates: list[str] = []
            if path in items:
                text = await asyncio.to_thread(self._head_text, path)
                candidates = import_candidates(path, items[path].language, text)
            files = [c for c in candidates if not c.endswith("/")]
            directories = [c.rstrip("/") for c in candidates if c.endswith("/")]
            imported = await self.store.existing(files)
            for directory_candidate in directories[:8]:
                imported += await self.store.directory_files(directory_candidate, limit=8)
            self.queue.extend([*imported[:NEIGHBOURS_PER_TOUCH], *siblings], NEIGHBOUR)
        self._ensure_draining()

    def _head_text(self, path: str) -> str:
        try:
            with open(self.root / path, "rb") as handle:
                return handle.read(64 * 1024).decode("utf-8", errors="replace")
        except OSError:
            return ""

    async def refresh(self, values: Sequence[str]) -> ScanBatch | None:
        """Re-examine files the editor reports as saved, created, changed or deleted; what
        changed is re-annotated first. A changed ignore or config file triggers a full pass."""
        if not self.store.writable:
            return None
        paths = self._relative_paths(values)
        if any(path.rpartition("/")[2] in RULE_FILES for path in paths):
            self.start_indexing("index")
            return None
        rules = self._rules or self._ignore_rules()
        known = await self.store.known_files_for(paths)
        batch = await asyncio.to_thread(
            scan_paths, self.root, paths, known, rules, git_mode=self._git_mode,
            max_file_size=self.settings.max_file_size)
        if batch.changed or batch.removed:
            await self.store.apply_changes(batch.changed, batch.removed)
            self.queue.extend([item.path for item in batch.changed], TOUCHED)
            self._ensure_draining()
        return batch

    async def start_reconciling(self, interval: float) -> None:
        """Rescan quietly every `interval` seconds, for changes no editor reported."""
        if interval <= 0:
            return
        while not self._closed:
            await asyncio.sleep(interval)
            idle = self._pass_task is None or self._pass_task.done()
            if idle and self.store.writable:
                self.start_indexing("index", quiet=True)

    # -- queries ---------------------------------------------------------------------------

    async def stream_files(self, params: GetFilesParams) -> AsyncIterator[list[FileItem]]:
        """Every matching file, in path order, in batches of `params.batch_size`."""
        path_filter = PathFilter.build(self.root, params.globs, params.paths)
        after = decode_cursor(params.cursor).after if params.cursor else None
        batch: list[FileItem] = []
        async for page in self.store.iter_files(after=after, prefixes=path_filter.prefixes):
            for item in page:
                if item.kind != "binary" and (path_filter.spec is None or path_filter.spec.match_file(item.path)):
                    batch.append(item)
                    if len(batch) >= params.batch_size:
                        yield batch
                        batch = []
        if batch:
            yield batch

    async def files_page(self, params: GetFilesParams) -> GetFilesPage:
        limit = params.limit or DEFAULT_PAGE_SIZE
        paged = msgspec.structs.replace(params, batch_size=limit + 1)
        stream = self.stream_files(paged)
        try:
            first = await anext(stream, [])
        finally:
            await stream.aclose()
        items = first[:limit]
        next_cursor = encode_cursor(items[-1].path) if len(first) > limit else None
        return GetFilesPage(items=items, next_cursor=next_cursor)

    async def find_relevant(self, params: FindRelevantParams) -> FindRelevantResult:
        if not params.query.strip():
            raise InvalidParams("query: must not be blank")
        scope = params.scope
        path_filter = PathFilter.build(self.root, scope.globs if scope else [],
                                       scope.paths if scope else [], field_prefix="scope.")
        items = await lexical_stage(self.store, params.query, limit=params.limit, scope=path_filter)
        # What a question turns up is likely to be read next: annotate it soon.
        self.queue.extend([item.path for item in items], NEIGHBOUR)
        self._ensure_draining()
        message = None if items else "no indexed file matches the query's words"
        return FindRelevantResult(items=items, stages=["prefilter"], message=message)

    async def status(self) -> StatusResult:
        by_status, by_kind = await self.store.counts()
        return StatusResult(
            protocol_version=PROTOCOL_VERSION,
            server_version=__version__,
            root=str(self.root),
            db_path=str(self.store.path),
            phase=self.phase,
            files=sum(by_status.values()),
            by_status=by_status,
            by_kind=by_kind,
            annotator=self.annotator.id,
            last_scan=await self.store.get_meta("last_scan"),
            role=self.role,
            writer_pid=os.getpid() if self.store.writable else self.lock.holder(),
            queued=len(self.queue),
            last_error=self.last_error,
        )
