"""One workspace's state and every operation on it. The LSP handlers and the CLI both call
this; neither has logic of its own."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from filescout import __version__
from filescout.annotate import FileToAnnotate, HeuristicAnnotator
from filescout.annotate.base import Annotator
from filescout.config import db_path_for, load_settings
from filescout.errors import InvalidParams, WorkspaceUnavailable
from filescout.ignore import IgnoreRules
from filescout.paths import to_relative
from filescout.progress import NullProgress, ProgressReporter
from filescout.relevance.filters import PathFilter, decode_cursor, encode_cursor
from filescout.relevance.lexical import lexical_stage
from filescout.scan import ScanResult, content_hash, scan
from filescout.store import PendingFile, Store
from filescout_protocol.types import (
    PROTOCOL_VERSION,
    DidAccessParams,
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
ANNOTATION_BATCH = 64
MAX_ANNOTATION_CHARS = 256 * 1024
SCAN_SHARE = 20  # percent of a pass's progress bar given to scanning

StatusListener = Callable[[IndexStatus], None]


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _read_text(root: Path, pending: PendingFile) -> FileToAnnotate | None:
    """The file's text if it still has the content the index knows; None if it changed or
    vanished since the scan (the next scan will catch up)."""
    try:
        data = (root / pending.path).read_bytes()
    except OSError:
        return None
    if content_hash(data) != pending.hash:
        return None
    text = data[:MAX_ANNOTATION_CHARS].decode("utf-8", errors="replace")
    return FileToAnnotate(path=pending.path, hash=pending.hash, language=pending.language,
                          kind=pending.kind, text=text)


async def open_store(path: Path) -> Store:
    """Open the index; a corrupt, foreign or newer index is moved aside and rebuilt, since the
    index is only a cache of the workspace."""
    try:
        return await Store.open(path)
    except Exception as exc:  # IndexUnusable, sqlite3.DatabaseError and friends
        if not path.exists():
            raise WorkspaceUnavailable(f"cannot create the index at {path}: {exc}") from exc
        aside = path.with_name(f"{path.name}.unusable-{int(time.time())}")
        log.warning("index %s is unusable (%s); moving it to %s and rebuilding", path, exc, aside)
        for suffix in ("", "-wal", "-shm"):
            source = Path(str(path) + suffix)
            if source.exists():
                shutil.move(str(source), str(aside) + suffix)
        try:
            return await Store.open(path)
        except Exception as second:
            raise WorkspaceUnavailable(f"cannot create the index at {path}: {second}") from second


class Workspace:
    """The engine for one workspace root."""

    def __init__(self, root: Path, settings: Settings, store: Store, annotator: Annotator,
                 warnings: list[str]) -> None:
        self.root = root
        self.settings = settings
        self.store = store
        self.annotator = annotator
        self.warnings = warnings
        self.phase: IndexPhase = "idle"
        self.last_error: str | None = None
        self.status_listeners: list[StatusListener] = []
        self._pass_task: asyncio.Task[None] | None = None
        self._urgent: dict[str, None] = {}
        self._unreadable: set[str] = set()
        self._background: set[asyncio.Future[None]] = set()
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
        store = await open_store(db_path_for(root, loaded.settings, env))
        return cls(root, loaded.settings, store, HeuristicAnnotator(), loaded.warnings)

    def reconfigure(self, editor_settings: Mapping[str, Any] | None) -> tuple[list[str], bool]:
        """Apply new editor settings. Returns the warnings and whether the index must be
        rescanned because what belongs in it changed."""
        loaded = load_settings(self.root, editor_settings)
        old, self.settings = self.settings, loaded.settings
        warnings = list(loaded.warnings)
        if db_path_for(self.root, self.settings) != self.store.path:
            warnings.append("dbPath changes take effect when the server restarts")
        rescan = (old.exclude, old.max_file_size) != (self.settings.exclude,
                                                      self.settings.max_file_size)
        return warnings, rescan

    async def close(self) -> None:
        self._closed = True
        await self.stop_indexing()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.store.close()

    # -- indexing --------------------------------------------------------------------------

    def _ignore_rules(self) -> IgnoreRules:
        excludes = list(self.settings.exclude)
        try:
            db_relative = self.store.path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            pass
        else:  # an index kept inside the workspace must not index itself
            excludes += [f"/{db_relative}", f"/{db_relative}-wal", f"/{db_relative}-shm"]
        return IgnoreRules(excludes)

    def _set_phase(self, phase: IndexPhase, message: str | None = None) -> None:
        self.phase = phase
        if self.status_listeners and not self._closed:
            task = asyncio.ensure_future(self._emit_status(message))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _emit_status(self, message: str | None = None) -> None:
        if not self.status_listeners:
            return
        by_status, _ = await self.store.counts()
        status = IndexStatus(
            phase=self.phase,
            files=sum(by_status.values()),
            annotated=by_status.get("annotated", 0),
            pending=by_status.get("pending", 0) + by_status.get("stale", 0),
            message=message,
        )
        for listener in self.status_listeners:
            listener(status)

    def start_indexing(self, reporter: ProgressReporter | None = None) -> asyncio.Future[ReindexResult]:
        """Start a full pass (scan, then annotate) in the background, replacing any pass
        under way. The returned future resolves when the scan part is done."""
        scanned: asyncio.Future[ReindexResult] = asyncio.get_running_loop().create_future()
        # The caller may not wait for the scan; its failure is logged by the pass itself.
        scanned.add_done_callback(lambda future: future.cancelled() or future.exception())
        if self._closed:
            scanned.cancel()
            return scanned
        previous = self._pass_task
        if previous is not None and not previous.done():
            previous.cancel()
        self._pass_task = asyncio.create_task(
            self._run_pass(reporter or NullProgress(), scanned, previous), name="filescout-index"
        )
        return scanned

    async def stop_indexing(self) -> None:
        task = self._pass_task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def wait_idle(self) -> None:
        """Wait until the current pass (if any) has finished."""
        task = self._pass_task
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    async def _run_pass(self, reporter: ProgressReporter, scanned: asyncio.Future[ReindexResult],
                        previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        reporter.begin("filescout: indexing", "scanning files")
        outcome = "cancelled"
        try:
            result = await self._scan(reporter)
            if not scanned.done():
                scanned.set_result(result)
            annotated = await self._annotate_pending(reporter)
            outcome = f"{result.files} files indexed, {annotated} annotated"
            self.last_error = None
            self._set_phase("idle", outcome)
        except asyncio.CancelledError:
            self._set_phase("idle", "indexing cancelled")
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

    async def _scan(self, reporter: ProgressReporter) -> ReindexResult:
        self._set_phase("scanning")
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        stop = threading.Event()

        def on_progress(done: int, total: int) -> None:
            percentage = SCAN_SHARE * done // total if total else 0
            loop.call_soon_threadsafe(reporter.report, f"scanning {done}/{total} files", percentage)

        known = await self.store.known_files()
        try:
            result: ScanResult = await asyncio.to_thread(
                scan, self.root, known, self._ignore_rules(),
                max_file_size=self.settings.max_file_size, progress=on_progress,
                is_cancelled=lambda: stop.is_set() or reporter.is_cancelled(),
            )
        except InterruptedError:
            raise asyncio.CancelledError from None
        finally:
            stop.set()
        await self.store.apply_scan(result.changed, result.removed)
        await self.store.set_meta("last_scan", utc_now())
        files = await self.store.file_count()
        elapsed = int((time.perf_counter() - started) * 1000)
        log.info("scan (%s): %d files, %d new, %d changed, %d removed, %d unchanged in %d ms",
                 result.source, files, result.added, len(result.changed) - result.added,
                 len(result.removed), result.unchanged, elapsed)
        return ReindexResult(added=result.added, changed=len(result.changed) - result.added,
                             removed=len(result.removed), unchanged=result.unchanged,
                             files=files, elapsed_ms=elapsed)

    async def _next_batch(self) -> list[PendingFile]:
        if self._urgent:
            urgent = list(self._urgent)[:ANNOTATION_BATCH]
            for path in urgent:
                self._urgent.pop(path, None)
            wanted = await self.store.pending(self.annotator.id, len(urgent), paths=urgent)
            if wanted:
                return wanted
        batch = await self.store.pending(self.annotator.id, ANNOTATION_BATCH + len(self._unreadable))
        return [item for item in batch if item.hash not in self._unreadable][:ANNOTATION_BATCH]

    async def _annotate_pending(self, reporter: ProgressReporter) -> int:
        self._set_phase("annotating")
        by_status, _ = await self.store.counts()
        total = by_status.get("pending", 0) + by_status.get("stale", 0)
        done = 0
        while batch := await self._next_batch():
            if reporter.is_cancelled():
                raise asyncio.CancelledError
            texts = await asyncio.to_thread(lambda: [_read_text(self.root, item) for item in batch])
            readable = [text for text in texts if text is not None]
            self._unreadable.update(item.hash for item, text in zip(batch, texts) if text is None)
            results = await self.annotator.annotate(readable)
            await self.store.save_annotations(
                self.annotator.id,
                [(item.hash, annotation) for item, annotation in zip(readable, results)
                 if annotation is not None],
            )
            done += len(batch)
            total = max(total, done)
            reporter.report(f"annotating {done}/{total} files",
                            SCAN_SHARE + (100 - SCAN_SHARE) * done // total)
        return done

    def touch(self, params: DidAccessParams) -> None:
        """A client used these files: annotate them before anything else."""
        for index, value in enumerate(params.paths):
            path = to_relative(self.root, value, field=f"paths[{index}]")
            if path:
                self._urgent[path] = None

    # -- queries ---------------------------------------------------------------------------

    async def stream_files(self, params: GetFilesParams) -> AsyncIterator[list[FileItem]]:
        """Every matching file, in path order, in batches of `params.batch_size`."""
        path_filter = PathFilter.build(self.root, params.globs, params.paths)
        after = decode_cursor(params.cursor).after if params.cursor else None
        batch: list[FileItem] = []
        async for page in self.store.iter_files(after=after, prefixes=path_filter.prefixes):
            for item in page:
                if path_filter.spec is None or path_filter.spec.match_file(item.path):
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
            last_error=self.last_error,
        )

