"""One workspace's state and every operation on it. The LSP handlers and the CLI both call
this; neither has logic of its own."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import msgspec

from filescout import __version__
from filescout.annotate import FileToAnnotate
from filescout.annotate.llm import MAX_FILES_PER_REQUEST, OUTPUT_TOKENS_PER_FILE, ModelAnnotator, ModelInput
from filescout.annotate.structural import StructuralAnnotator
from filescout.config import CONFIG_FILE, db_path_for, load_settings
from filescout.errors import InvalidParams, ReadOnly, WorkspaceUnavailable
from filescout.ignore import FILESCOUTIGNORE, IgnoreRules
from filescout.imports import import_candidates
from filescout.lock import WriterLock
from filescout.model import (
    CHARS_PER_TOKEN,
    Budget,
    BudgetSpent,
    ModelClient,
    ModelError,
    ModelRefused,
    ModelUnavailable,
)
from filescout.paths import to_relative
from filescout.progress import NullProgress, ProgressReporter
from filescout.relevance.filters import PathFilter, decode_cursor, encode_cursor
from filescout.relevance.find import RelevanceUpdate, find
from filescout.scan import Listing, ScanBatch, content_hash, enumerate_files, scan, scan_paths
from filescout.schedule import BACKGROUND, NEIGHBOUR, TOUCHED, AnnotationQueue
from filescout.relevance.prefilter import STRUCTURE_WEIGHTS
from filescout.relevance.query import analyse
from filescout.store import FileFilter, PendingFile, Store
from filescout_protocol.types import (
    PROTOCOL_VERSION,
    FileItem,
    ModelStatus,
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
ESTIMATED_OUTLINE_TOKENS = 200  # outline and a share of the instructions, per file
BACKLOG_WORTH_ANNOUNCING = 100
MAX_ANNOTATION_CHARS = 256 * 1024
SCAN_SHARE = 20  # percent of a pass's progress bar given to scanning
RULES_FINGERPRINT = "rules_fingerprint"
NEIGHBOURS_PER_TOUCH = 24
TEXT_MATCH_LIMIT = 10_000
LISTED_KINDS = ("source", "test", "docs", "config", "data", "generated", "other")
"""What getFiles lists when the caller names no kinds: everything with a summary worth reading."""
RETURNED_ACCESS_COUNT = 3
RETURNED_ACCESS_WEIGHT = 0.25
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
                 warnings: list[str]) -> None:
        self.root = root
        self.settings = settings
        self.store = store
        self.lock = lock
        self.structural = StructuralAnnotator()
        self.model: ModelAnnotator | None = None
        self.warnings = warnings
        self.phase: IndexPhase = "idle"
        self.last_error: str | None = None
        self.status_listeners: list[StatusListener] = []
        self.progress_factory: ProgressFactory | None = None
        self.persistent = True
        """A server waits out a failing model endpoint; a one-shot CLI run gives up instead."""
        self.queue = AnnotationQueue()
        self.model_queue = AnnotationQueue()
        self._model_task: asyncio.Task[None] | None = None
        self._model_message: str | None = None
        self._model_stopped: ModelError | None = None
        """Why model work stopped (budget, refusal) until something changes."""
        self._model_gave_up: set[str] = set()
        """Content hashes the model answered without a usable annotation; not asked again."""
        self._model_in_flight = 0
        """Files taken from the model queue whose annotation has not landed or gone back yet."""
        self._rules: IgnoreRules | None = None
        self._git_mode = False
        self._pass_task: asyncio.Task[None] | None = None
        self._drain_task: asyncio.Task[None] | None = None
        self._reporter: ProgressReporter = NullProgress()
        self._annotated_in_pass = 0
        self._access_backlog: dict[str, float] = {}
        """Accesses a reader saw, by path, for the index once this process writes it."""
        self._touched_unindexed: dict[str, None] = {}
        self._background: set[asyncio.Future[Any]] = set()
        self._closed = False
        store.current_annotator = self.structural.id

    @property
    def annotator_id(self) -> str:
        """The annotator whose annotations files should show: the model's when one is on."""
        return self.model.id if self.model is not None else self.structural.id

    async def _configure_model(self) -> None:
        """Set up (or take down) model annotation from the settings; a writer's job."""
        previous, self.model = self.model, None  # nothing may start on it while it closes
        if previous is not None:
            await previous.client.close()
        self._model_message = None
        self._model_stopped = None
        model = self.settings.model
        if model.model and not self.settings.privacy_mode and self.store.writable:
            month_start = Budget.today()[:8] + "01"
            budget = Budget(self.settings.budget, await self.store.usage_since(month_start),
                            sink=self._record_usage)
            try:
                self.model = ModelAnnotator(ModelClient(model, budget))
            except Exception as exc:  # e.g. a base URL the HTTP client rejects
                log.error("model annotation is off: cannot use %s: %s", model.base_url or "the endpoint", exc)
                self.warnings.append(f"model annotation is off: {exc}")
            else:
                log.info("model annotation on: %s", self.model.id)
        self.store.current_annotator = self.annotator_id
        self.model_queue = AnnotationQueue()
        self._model_gave_up.clear()

    async def _record_usage(self, day: str, calls: int, failures: int, input_tokens: int,
                            output_tokens: int) -> None:
        if self.model is not None:
            await self.store.record_usage(self.model.id, day, calls=calls, failures=failures,
                                          input_tokens=input_tokens, output_tokens=output_tokens)

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
            try:
                store = await open_store(db_path, loaded.warnings)
            except BaseException:
                lock.release()  # let another window try, instead of waiting on us forever
                raise
        else:
            log.info("another filescout process (pid %s) writes this index; serving reads",
                     lock.holder())
            store = await open_store_readonly(db_path)
        workspace = cls(root, loaded.settings, store, lock, loaded.warnings)
        if writer:
            await workspace._configure_model()
        else:
            workspace._spawn(workspace._wait_for_takeover())
        return workspace

    @property
    def role(self) -> Role:
        return "writer" if self.store.writable else "reader"

    def _spawn(self, coroutine: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background_done)
        return task

    def _background_done(self, task: asyncio.Future[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background work failed", exc_info=task.exception())

    async def reconfigure(self, editor_settings: Mapping[str, Any] | None) -> tuple[list[str], bool]:
        """Apply new editor settings. Returns the warnings and whether the index must be
        rescanned because what belongs in it changed; a changed model or budget takes effect
        at once."""
        loaded = load_settings(self.root, editor_settings)
        old, self.settings = self.settings, loaded.settings
        warnings = list(loaded.warnings)
        if db_path_for(self.root, self.settings) != self.store.path:
            warnings.append("dbPath changes take effect when the server restarts")
        rescan = (old.exclude, old.include, old.max_file_size) != (
            self.settings.exclude, self.settings.include, self.settings.max_file_size)
        if (old.model, old.budget, old.privacy_mode) != (
                self.settings.model, self.settings.budget, self.settings.privacy_mode):
            retiring, self.model = self.model, None  # no drain may start on it meanwhile
            await self._stop_model_drain()
            if retiring is not None:
                await retiring.client.close()
            await self._configure_model()
            if self.model is not None and not rescan:
                self.model_queue.extend(await self._model_backlog(), BACKGROUND)
                self._ensure_draining()
        return warnings, rescan

    async def close(self) -> None:
        self._closed = True
        tasks = [task for task in (self._pass_task, self._drain_task, self._model_task,
                                   *self._background) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.model is not None:
            await self.model.client.close()
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
            try:
                self.store = await open_store(reader.path, self.warnings)
            except Exception:
                log.exception("cannot take over the index; serving reads still")
                self.lock.release()
                continue
            await reader.close()
            try:
                await self._configure_model()
            except Exception:  # index without the model rather than no index at all
                log.exception("model annotation could not be set up")
            by_weight: dict[float, list[str]] = {}
            for path, weight in self._access_backlog.items():
                by_weight.setdefault(weight, []).append(path)
            for weight, paths in by_weight.items():
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
        """Wait until the current pass and the annotation backlogs are done (each may start
        the next, so look again until none runs)."""
        while running := [task for task in (self._pass_task, self._drain_task, self._model_task)
                          if task is not None and not task.done()]:
            await asyncio.gather(*running, return_exceptions=True)

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
        self.last_error = None
        try:
            result = await self._scan(reporter)
            if not scanned.done():
                scanned.set_result(result)
            self._annotated_in_pass = 0
            self._set_phase("annotating")  # the index matches the disk: ready
            self.queue.clear_background()
            self.queue.extend(await self.store.annotation_order(self.structural.id, machine=True),
                              BACKGROUND)
            if self.model is not None:
                self.model_queue.clear_background()
                self.model_queue.extend(await self._model_backlog(), BACKGROUND)
            if self._touched_unindexed:
                found = await self.store.existing(self._touched_unindexed)
                self._touched_unindexed.clear()
                self._queue_everywhere(reversed(found), TOUCHED)
            self._ensure_draining()
            await asyncio.shield(self._drain_task)  # type: ignore[arg-type]
            if reporter.is_cancelled():
                raise asyncio.CancelledError
            outcome = f"{result.files} files indexed, {self._annotated_in_pass} annotated"
            if self.last_error:
                outcome += f"; {self.last_error}"
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
        rules = self._ignore_rules()
        # Indexed files passed filescout's rules when they were indexed; while the rules are the
        # same, they need not be checked again. A pass under new rules that does not finish
        # leaves no fingerprint, so the next one checks everything.
        same_rules = await self.store.get_meta(RULES_FINGERPRINT) == rules.fingerprint
        if not same_rules:
            await self.store.set_meta(RULES_FINGERPRINT, "")

        def produce() -> None:
            try:
                listing: Listing = enumerate_files(self.root, rules,
                                                   known_ready.result if same_rules else None)
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
        if totals.changed or totals.removed:
            await self.store.drop_orphan_contents()
        await self.store.set_meta("last_scan", utc_now())
        await self.store.set_meta(RULES_FINGERPRINT, rules.fingerprint)
        files = await self.store.file_count()
        totals = msgspec.structs.replace(
            totals, files=files, elapsed_ms=int((time.perf_counter() - started) * 1000))
        log.info("scan: %d files, %d new, %d changed, %d removed (%d renamed), %d unchanged in %d ms",
                 files, totals.added, totals.changed, totals.removed, totals.renamed,
                 totals.unchanged, totals.elapsed_ms)
        return totals

    # -- annotation ------------------------------------------------------------------------

    def _queue_everywhere(self, paths: Iterable[str], tier: int) -> None:
        """Queue for the structural annotator and, when one is on, the model."""
        paths = list(paths)
        self.queue.extend(paths, tier)
        if self.model is not None:
            self.model_queue.extend(paths, tier)

    async def _model_backlog(self) -> list[str]:
        assert self.model is not None
        return await self.store.annotation_order(self.model.id, machine=False)

    def _ensure_draining(self) -> None:
        if self._closed or not self.store.writable:
            return
        if self._drain_task is None or self._drain_task.done():
            self._drain_task = asyncio.create_task(self._drain(), name="filescout-annotate")
        if self.model is not None and len(self.model_queue) and (
                self._model_task is None or self._model_task.done()):
            self._model_task = asyncio.create_task(self._drain_model(), name="filescout-model")

    async def _stop_model_drain(self) -> None:
        task = self._model_task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _drain(self) -> None:
        """Structurally annotate queued files, best first, until the queue is empty. Outside a
        pass, a backlog announces itself as a phase; the few files a question or an opened
        file queues do not (each phase change costs every listener a status query)."""
        announced = self.phase == "idle" and len(self.queue) >= BACKLOG_WORTH_ANNOUNCING
        if announced:
            self._set_phase("annotating")
        try:
            while True:
                if self._reporter.is_cancelled():  # the user stopped the backlog, not the touched
                    self.queue.clear_background()
                    self.model_queue.clear_background()
                if not (batch := self.queue.pop(ANNOTATION_BATCH)):
                    break
                pending = await self.store.pending(self.structural.id, batch)
                if pending:
                    try:
                        await self._annotate_structural(pending)
                    except sqlite3.Error:  # the index itself fails: stop
                        raise
                    except Exception as exc:  # this batch only; the backlog goes on
                        log.exception("annotating %s and %d more failed", pending[0].path,
                                      len(pending) - 1)
                        self.last_error = f"annotation failed: {type(exc).__name__}: {exc}"
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
            if announced and self.phase == "annotating" and (self._pass_task is None or self._pass_task.done()):
                self._set_phase("idle")

    async def _read(self, pending: Sequence[PendingFile]) -> list[FileToAnnotate]:
        """The texts of `pending` that still match the index; the others are re-scanned."""
        texts = await asyncio.to_thread(lambda: [_read_text(self.root, item) for item in pending])
        changed_since_scan = [item.path for item, text in zip(pending, texts) if text is None]
        if changed_since_scan:
            self._spawn(self.refresh(changed_since_scan))
        return [text for text in texts if text is not None]

    async def _annotate_structural(self, pending: Sequence[PendingFile]) -> None:
        readable = await self._read(pending)
        results = await self.structural.annotate(readable)
        annotations = [(item.hash, annotation) for item, annotation in zip(readable, results)
                       if annotation is not None]
        await self.store.save_annotations(self.structural.id, annotations,
                                          replace=self.annotator_id == self.structural.id)

    async def _drain_model(self) -> None:
        """Model-annotate queued files until the queue is empty or the model cannot go on
        (budget spent, endpoint refusing, or failing: then it waits and tries again)."""
        model = self.model
        if model is None:
            return
        reporter: ProgressReporter | None = None
        done = 0
        skipped: str | None = None
        batch_size = MAX_FILES_PER_REQUEST * model.client.settings.concurrency
        try:
            while True:
                reason = model.client.unavailable_reason()
                if reason is not None:
                    self._model_message = reason
                    if model.client.breaker.is_open and self.persistent:
                        await asyncio.sleep(model.client.breaker.seconds_left() + 0.05)
                        continue
                    log.warning("model annotation paused: %s", reason)
                    return
                if reporter is not None and reporter.is_cancelled():  # the backlog, not the touched
                    self.model_queue.clear_background()
                batch = self.model_queue.pop(batch_size)
                if not batch:
                    self._model_message = skipped  # None when every request was answered
                    return
                self._model_in_flight = len(batch)
                self._model_stopped = None
                pending = [item for item in await self.store.pending(model.id, batch)
                           if item.hash not in self._model_gave_up]
                if not pending:
                    continue
                if reporter is None and self.progress_factory is not None:
                    reporter = await self.progress_factory("model")
                    reporter.begin(f"filescout: summarizing with {model.client.settings.model}",
                                   f"{len(self.model_queue) + len(pending)} files")
                inputs = await self._model_inputs(pending)
                annotations, error = await model.annotate(inputs)
                saved = [(item.hash, annotation) for item, annotation in zip(inputs, annotations)
                         if annotation is not None]
                await self.store.save_annotations(model.id, saved, replace=True)
                done += len(saved)
                if error is None or not isinstance(error, (ModelUnavailable, BudgetSpent, ModelRefused)):
                    # Answered, or this request itself was rejected (asking again would be
                    # rejected again): these files keep their structural annotation.
                    self._model_gave_up.update(item.hash for item, annotation in zip(inputs, annotations)
                                               if annotation is None)
                    if error is not None:
                        log.warning("model annotation skipped %d files: %s",
                                    sum(annotation is None for annotation in annotations), error)
                        self._model_message = skipped = f"some files were skipped: {error}"
                else:
                    # Not this batch's fault: put back what is left and pause.
                    self.model_queue.extend([item.path for item, annotation in zip(inputs, annotations)
                                             if annotation is None], NEIGHBOUR)
                    self._model_message = str(error)
                    if isinstance(error, (BudgetSpent, ModelRefused)):
                        log.warning("model annotation stopped: %s", error)
                        self._model_stopped = error
                        return
                self._model_in_flight = 0
                if reporter is not None:
                    total = done + len(self.model_queue)
                    reporter.report(f"{done}/{total} files", 100 * done // max(total, 1))
        except Exception as exc:  # a defect, not the endpoint (those come back as ModelError)
            log.exception("model annotation failed")
            self._model_message = f"model annotation failed: {type(exc).__name__}: {exc}"
        finally:
            self._model_in_flight = 0
            if reporter is not None:
                reporter.end(f"{done} files summarized" + (f"; {self._model_message}"
                                                           if self._model_message else ""))

    async def _model_inputs(self, pending: Sequence[PendingFile]) -> list[ModelInput]:
        readable = await self._read(pending)
        outlines = await self.store.annotations(self.structural.id, [item.hash for item in readable])
        missing = [item for item in readable if item.hash not in outlines]
        if missing:  # the model got here first: the structural annotation (and content index) too
            computed = [(item.hash, annotation) for item, annotation in
                        zip(missing, await self.structural.annotate(missing)) if annotation is not None]
            await self.store.save_annotations(self.structural.id, computed, replace=False)
            outlines.update(computed)
        return [ModelInput(path=item.path, hash=item.hash, language=item.language, kind=item.kind,
                           text=item.text, outline=outlines[item.hash])
                for item in readable if item.hash in outlines]

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
        self._queue_everywhere(reversed(existing), TOUCHED)
        if record:
            await self._record(existing, weight=weight)
        self._ensure_draining()
        self._spawn(self._queue_neighbours(existing))

    async def annotate_now(self, values: Sequence[str], *, timeout: float) -> list[FileItem]:
        """Annotate these files before anything else and answer once they show the current
        annotator's annotation (or when `timeout` runs out, with what they show then)."""
        self._require_writer("annotate")
        paths = self._relative_paths(values)
        existing = await self.store.existing(paths)
        missing = sorted(set(paths) - set(existing))
        if missing:
            raise InvalidParams(f"paths: not in the index: {', '.join(missing[:5])}")
        await self.touch(existing, record=True)
        deadline = time.monotonic() + timeout
        while True:
            items = await self.store.files_by_path(existing)  # a file may vanish meanwhile
            waiting = [item for item in items.values() if item.status in ("pending", "stale")]
            model_stopped = self.model is None or self.model.client.unavailable_reason() is not None
            if not waiting or time.monotonic() > deadline or (
                    model_stopped and all(item.status != "pending" for item in waiting)):
                return [items[path] for path in existing if path in items]
            await asyncio.sleep(0.05)

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
            self._queue_everywhere([*imported[:NEIGHBOURS_PER_TOUCH], *siblings], NEIGHBOUR)
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
        # git applies its own rules, so the current settings' rules are complete; a walk's rules
        # carry the .gitignore files it found, so those are kept until the next walk.
        rules = self._ignore_rules() if self._git_mode or self._rules is None else self._rules
        known = await self.store.known_files_for(paths)
        batch = await asyncio.to_thread(
            scan_paths, self.root, paths, known, rules, git_mode=self._git_mode,
            max_file_size=self.settings.max_file_size)
        if batch.changed or batch.removed:
            await self.store.apply_changes(batch.changed, batch.removed)
            self._queue_everywhere([item.path for item in batch.changed], TOUCHED)
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

    async def _listing(self, params: GetFilesParams) -> AsyncIterator[tuple[FileItem, tuple]]:
        """Files matching every filter of `params`, in its order, each with its position."""
        path_filter = PathFilter.build(self.root, params.globs, params.paths)
        order = params.order_by or ("rank" if params.query else "path")
        if order == "rank" and not params.query:
            raise InvalidParams("orderBy: `rank` orders by a text query; pass `query` too")
        position = decode_cursor(params.cursor, order) if params.cursor else None
        ranked = await self._text_matches(params.query) if params.query else None
        where = FileFilter(
            prefixes=path_filter.prefixes,
            kinds=tuple(params.kinds or LISTED_KINDS),
            languages=tuple(params.languages),
            statuses=tuple(params.status),
            changed_since_ns=params.changed_since * 1_000_000 if params.changed_since is not None else None,
            tags=tuple(tag.lower() for tag in params.tags),
            all_tags=params.tags_match == "all",
            ranked=tuple(ranked) if ranked is not None else None,
        )
        # A small first page answers quickly; later pages are larger, so fewer round trips.
        first_page = max(min(params.batch_size, params.limit or DEFAULT_PAGE_SIZE) + 1, 100)
        async for page in self.store.list_files(where, order=order, position=position,
                                                first_page=first_page):
            for item, key in page:
                if path_filter.spec is None or path_filter.spec.match_file(item.path):
                    yield item, key

    async def _text_matches(self, text: str) -> list[str]:
        """Paths whose descriptions or content match `text`, best first (BM25, no priors)."""
        expression = analyse(text).match_expression
        if expression is None:
            raise InvalidParams("query: no searchable words in it")
        scores: dict[str, float] = {}
        for hits in (await self.store.search(expression, limit=TEXT_MATCH_LIMIT, weights=STRUCTURE_WEIGHTS),
                     await self.store.search_bodies(expression, limit=TEXT_MATCH_LIMIT)):
            for hit in hits:
                scores[hit.path] = scores.get(hit.path, 0.0) + hit.rank
        return sorted(scores, key=lambda path: (-scores[path], path))

    async def stream_files(self, params: GetFilesParams) -> AsyncIterator[list[FileItem]]:
        """Every matching file, in batches of `params.batch_size`."""
        batch: list[FileItem] = []
        async for item, _ in self._listing(params):
            batch.append(item)
            if len(batch) >= params.batch_size:
                yield batch
                batch = []
        if batch:
            yield batch

    async def files_page(self, params: GetFilesParams) -> GetFilesPage:
        limit = params.limit or DEFAULT_PAGE_SIZE
        order = params.order_by or ("rank" if params.query else "path")
        items: list[FileItem] = []
        next_cursor = None
        last_key: tuple = ()
        listing = self._listing(params)
        try:
            async for item, key in listing:
                if len(items) == limit:
                    next_cursor = encode_cursor(order, last_key)
                    break
                items.append(item)
                last_key = key
        finally:
            await listing.aclose()
        return GetFilesPage(items=items, next_cursor=next_cursor)

    async def find_relevant_stream(self, params: FindRelevantParams) -> AsyncIterator[RelevanceUpdate]:
        """The stages of findRelevant as they complete; the last update is `done`."""
        if not params.query.strip():
            raise InvalidParams("query: must not be blank")
        scope = params.scope
        path_filter = PathFilter.build(self.root, scope.globs if scope else [],
                                       scope.paths if scope else [], field_prefix="scope.")
        client = self.model.client if self.model is not None else None
        async for update in find(self.store, params, path_filter, client):
            if update.done and update.items:
                # What a question turns up is likely to be read next: annotate it soon, and
                # count it (lightly) as used.
                returned = [item.path for item in update.items]
                self._queue_everywhere(returned, NEIGHBOUR)
                self._ensure_draining()
                await self._record(returned[:RETURNED_ACCESS_COUNT], weight=RETURNED_ACCESS_WEIGHT)
            yield update

    async def find_relevant(self, params: FindRelevantParams) -> FindRelevantResult:
        async for update in self.find_relevant_stream(params):
            if update.done:
                return FindRelevantResult(items=update.items, stages=update.stages,
                                          degraded=update.degraded, message=update.message)
        raise AssertionError("the relevance stages ended without an answer")

    async def _record(self, paths: list[str], *, weight: float) -> None:
        if self.store.writable:
            await self.store.record_access(paths, weight=weight)
        else:
            for path in paths:
                self._access_backlog[path] = self._access_backlog.get(path, 0.0) + weight

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
            annotator=self.annotator_id,
            last_scan=await self.store.get_meta("last_scan"),
            role=self.role,
            writer_pid=os.getpid() if self.store.writable else self.lock.holder(),
            queued=len(self.queue),
            model=await self.model_status(),
            last_error=self.last_error,
        )

    async def model_status(self) -> ModelStatus:
        """What model annotation does, has cost, and would cost to finish."""
        model_settings = self.settings.model
        if self.model is None:
            state = "privacy" if self.settings.privacy_mode and model_settings.model else "off"
            message = ("privacy mode is on: no model is called" if state == "privacy"
                       else "no model configured: structural annotations only")
            return ModelStatus(annotator=self.structural.id, state=state, message=message)
        client = self.model.client
        budget = client.budget
        waiting_files, waiting_bytes = await self.store.waiting_for(self.model.id)
        waiting_files = max(waiting_files - len(self._model_gave_up), 0)
        done, spent_in, spent_out = await self.store.token_cost(self.model.id)
        if done:
            estimate = round((spent_in + spent_out) / done * waiting_files)
            input_share = spent_in / max(spent_in + spent_out, 1)
        else:  # before any call: excerpts, outlines, a share of the instructions, the answers
            estimate = round(min(waiting_bytes / CHARS_PER_TOKEN, waiting_files * model_settings.file_tokens)
                             + waiting_files * (ESTIMATED_OUTLINE_TOKENS + OUTPUT_TOKENS_PER_FILE))
            input_share = 0.85
        cost = None
        if model_settings.input_price is not None and model_settings.output_price is not None:
            cost = round(estimate * (input_share * model_settings.input_price
                                     + (1 - input_share) * model_settings.output_price) / 1e6, 4)
        if client.refused:
            state = "refused"
        elif budget.spent() or isinstance(self._model_stopped, BudgetSpent):
            state = "budget_spent"
        elif client.breaker.is_open:
            state = "unavailable"
        elif self._model_task is not None and not self._model_task.done():
            state = "active"
        else:
            state = "idle"
        return ModelStatus(
            annotator=self.model.id, state=state, message=self._model_message or client.unavailable_reason(),
            tokens_today=budget.tokens_today, tokens_this_month=budget.tokens_this_month,
            daily_budget=self.settings.budget.daily_tokens,
            monthly_budget=self.settings.budget.monthly_tokens,
            calls=budget.calls, failures=budget.failures, queued_files=len(self.model_queue) + self._model_in_flight,
            estimated_tokens_to_finish=estimate, estimated_cost_to_finish=cost,
        )
