"""Indexing passes: a scan of the workspace, stored in batches, followed by draining the
annotation backlog it leaves; plus the small rescans that saves, watched changes and the
quiet periodic check ask for."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filescout.core.errors import WorkspaceUnavailable
from filescout.core.records import DirectoryListing, KnownFile, ScanTotals
from filescout.engine.annotation_pool import AnnotationPool
from filescout.engine.background import Background
from filescout.engine.board import StatusBoard
from filescout.engine.history_keeper import HistoryKeeper
from filescout.engine.hooks import Hooks
from filescout.engine.progress import NullProgress, ProgressReporter
from filescout.engine.queue import TOUCHED
from filescout.engine.scheduler import Scheduler
from filescout.engine.settings import CONFIG_FILE
from filescout.engine.structural_worker import SCAN_SHARE, PassProgress
from filescout.index import Index
from filescout.scan.ignore import FILESCOUTIGNORE, IgnoreRules
from filescout.scan.tree import (
    RACY_NS,
    Listing,
    ReadJob,
    ReadOutcome,
    ScanBatch,
    WalkMemory,
    WorkspaceGone,
    drifted,
    enumerate_files,
    printable,
    read_here,
    read_outcomes,
    require_root,
    scan,
    scan_paths,
)
from filescout_protocol.types import Settings

log = logging.getLogger(__name__)

RULES_FINGERPRINT = "rules_fingerprint"
SKIPPED_NAMES = "skipped_names"
"""How many files the last full scan left out because their names are not UTF-8."""
NAMED_IN_WARNING = 20
RULE_FILES = frozenset({".gitignore", FILESCOUTIGNORE, CONFIG_FILE})
HANDOFF_DEPTH = 2  # scan batches waiting for the event loop (each carries its files' words: MBs)
READ_HERE_LIMIT = 256
"""Changed files a scan reads in its own thread before it hands reading to the worker
processes (a restart usually finds a handful: starting workers would cost more)."""


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _pass_on(
    target: asyncio.Future[Any] | concurrent.futures.Future[Any], source: asyncio.Future[Any]
) -> None:
    """Resolve `target` as `source` was resolved: a replaced pass's waiter gets the new pass's
    scan; a thread waiting on a concurrent future gets an asyncio result."""
    if target.done():
        return
    if source.cancelled():
        target.cancel()
    elif (error := source.exception()) is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())


class Indexer:
    def __init__(
        self,
        root: Path,
        settings: Settings,
        index: Index,
        scheduler: Scheduler,
        board: StatusBoard,
        hooks: Hooks,
        background: Background,
        pool: AnnotationPool,
    ) -> None:
        self.root = root
        self.settings = settings
        self.pool = pool
        self.task: asyncio.Task[None] | None = None
        self._scanned: asyncio.Future[ScanTotals] | None = None
        self._index = index
        self._scheduler = scheduler
        self._board = board
        self._hooks = hooks
        self._background = background
        self._settling: dict[str, str] = {}
        """Files read within their timestamp tick (path -> hash read), to be read again after it."""
        self._rules: IgnoreRules | None = None
        self._git_mode = False
        self._undecodable: frozenset[str] = frozenset()
        """The names the last listing set aside; each new set is logged once."""
        self._unlistable: list[str] = []
        self._gone = False
        """The last pass or rescan found the workspace folder gone."""
        self._unreadable: frozenset[str] = frozenset()
        """What the last full scan could not read; each new set is logged once."""
        self.history = HistoryKeeper(root, index)

    @property
    def idle(self) -> bool:
        return self.task is None or self.task.done()

    async def scan_stored(self, timeout: float) -> bool:
        """Whether the pass under way, if any, has stored its scan (or ended without one) within
        `timeout` seconds."""
        scanned = self._scanned
        if scanned is None or self.idle:
            return True
        done, _ = await asyncio.wait({scanned}, timeout=timeout)  # its failure is the pass's to report
        return bool(done)

    def start(self, kind: str = "index", *, quiet: bool = False) -> asyncio.Future[ScanTotals]:
        """Start a full pass in the background, replacing any pass under way. The future
        resolves once the scan is stored. `kind` names the progress shown in the editor; a
        quiet pass shows none."""
        scanned: asyncio.Future[ScanTotals] = asyncio.get_running_loop().create_future()
        # The caller may not wait for the scan; a failure is logged by the pass itself.
        scanned.add_done_callback(lambda future: future.cancelled() or future.exception())
        if self._board.closed or not self._index.writable:
            scanned.cancel()
            return scanned
        previous, replaced = self.task, self._scanned
        if previous is not None and not previous.done():
            previous.cancel()
            if replaced is not None and not replaced.done():
                # Whoever waits for the replaced pass's scan gets this one's.
                scanned.add_done_callback(functools.partial(_pass_on, replaced))
        self._scanned = scanned
        self.task = asyncio.create_task(self._run(kind, quiet, scanned, previous), name=f"filescout-{kind}")
        return scanned

    async def _run(
        self, kind: str, quiet: bool, scanned: asyncio.Future[ScanTotals], previous: asyncio.Task[None] | None
    ) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        reporter: ProgressReporter = NullProgress() if quiet else await self._hooks.progress(kind)
        reporter.begin("filescout: indexing", "scanning files")
        progress = self._scheduler.structural.progress = PassProgress(reporter)
        board = self._board
        board.in_pass = True
        outcome = "indexing cancelled"
        board.last_error = None
        try:
            result = await self._scan(reporter)
            if not scanned.done():
                scanned.set_result(result)
            progress.annotated = 0
            board.set_phase("annotating")  # the index matches the disk: ready
            await self._scheduler.after_scan()
            await asyncio.shield(self._scheduler.structural.task)  # type: ignore[arg-type]  # started just above
            if reporter.is_cancelled():
                raise asyncio.CancelledError
            self._gone = False
            outcome = f"{result.files} files indexed, {progress.annotated} annotated"
            if board.last_error:
                outcome += f"; {board.last_error}"
            else:
                board.storage_recovered()
            board.in_pass = False
            board.set_phase("idle", outcome)
            reporter.report("reading the repository's history", 100)
            await self.history.update()  # after the pass: questions never wait for it
        except asyncio.CancelledError:
            board.in_pass = False
            board.set_phase("idle", outcome)
            if not scanned.done() and self._scanned is scanned:  # a replaced pass's waiters get the next scan
                scanned.cancel()
            raise
        except Exception as exc:
            full = board.storage_fault(exc)
            if isinstance(exc, WorkspaceGone):  # said in words, no traceback
                log.error("%s", exc)
                board.last_error = str(exc)
                self._gone = True
            elif full is None:
                log.exception("indexing failed")
                board.last_error = f"{type(exc).__name__}: {exc}"
            outcome = f"indexing failed: {board.last_error}"
            board.in_pass = False
            board.set_phase("failed", outcome)
            if not scanned.done():
                scanned.set_exception(WorkspaceUnavailable(full) if full is not None else exc)
        finally:
            reporter.end(outcome)
            if self._scheduler.structural.progress is progress:
                self._scheduler.structural.progress = PassProgress()

    def ignore_rules(self) -> IgnoreRules:
        excludes = list(self.settings.exclude)
        try:
            db_relative = self._index.path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            pass
        else:  # an index kept inside the workspace must not index itself
            excludes += [
                f"/{db_relative}",
                f"/{db_relative}-wal",
                f"/{db_relative}-shm",
                f"/{db_relative}.lock",
            ]
        return IgnoreRules.for_workspace(self.root, excludes, self.settings.include)

    async def _scan(self, reporter: ProgressReporter) -> ScanTotals:
        """Stream the scan's batches from a worker thread into the index, so hashing and
        database writes overlap."""
        started = time.perf_counter()
        # Load the index's view while git lists the tree: both mostly wait on other threads.
        known_ready: concurrent.futures.Future[dict[str, KnownFile]] = concurrent.futures.Future()
        loading = asyncio.ensure_future(self._index.files.known())
        loading.add_done_callback(functools.partial(_pass_on, known_ready))
        self._board.set_phase("scanning")  # after the load: its counts query must not go first
        rules = await asyncio.to_thread(self.ignore_rules)  # a thousand long patterns take a second
        # Indexed files passed filescout's rules when they were indexed; while the rules are the
        # same, they need not be checked again. A pass under new rules that does not finish
        # leaves no fingerprint, so the next one checks everything.
        same_rules = await self._index.meta.get(RULES_FINGERPRINT) == rules.fingerprint
        if not same_rules:
            await self._index.meta.set(RULES_FINGERPRINT, "")
        # A walk lists again only the directories that changed since the last complete walk.
        walked_before = await self._index.directories.load() if same_rules else {}
        producer = ScanProducer(self, rules, known_ready, same_rules, reporter, walked_before)
        try:
            totals = await producer.store_batches(self._index, self._scheduler.current)
        finally:
            loading.cancel()
            await asyncio.gather(loading, return_exceptions=True)
        if (walked := producer.walked) is not None:
            await self._index.directories.keep(walked.listed, walked.gone, replace=not walked.before)
        else:
            await self._index.directories.forget()
        self._read_again_later(producer.settling)
        unreadable = frozenset([*(f"{directory}/" for directory in self._unlistable), *producer.unreadable])
        if unreadable != self._unreadable:
            say_unreadable(unreadable)
        self._unreadable = unreadable
        if totals.changed or totals.removed:
            await self._index.annotations.drop_orphans()
        await self._index.meta.set(SKIPPED_NAMES, str(len(self._undecodable)))
        await self._index.meta.set("last_scan", utc_now())
        await self._index.meta.set(RULES_FINGERPRINT, rules.fingerprint)
        totals = dataclasses.replace(
            totals,
            files=await self._index.files.count(),
            elapsed_ms=int((time.perf_counter() - started) * 1000),
        )
        log.info(
            "scan: %d files, %d new, %d changed, %d removed (%d renamed), %d unchanged in %d ms",
            totals.files,
            totals.added,
            totals.changed,
            totals.removed,
            totals.renamed,
            totals.unchanged,
            totals.elapsed_ms,
        )
        return totals

    def listed(self, listing: Listing, rules: IgnoreRules) -> None:
        """Remember how the last full scan listed the tree, for rescans of single paths; say
        once which files it had to leave out."""
        self._rules, self._git_mode = rules, listing.source == "git"
        self._unlistable = listing.unlistable
        undecodable = frozenset(listing.undecodable)
        if undecodable and undecodable != self._undecodable:
            names = sorted(printable(path) for path in undecodable)
            more = len(names) - NAMED_IN_WARNING
            log.warning(
                "%d files left out of the index: their names are not valid UTF-8 (renaming them "
                "brings them in): %s%s",
                len(names),
                ", ".join(names[:NAMED_IN_WARNING]),
                f" and {more} more" if more > 0 else "",
            )
        self._undecodable = undecodable

    async def refresh(self, paths: Sequence[str], *, reread: bool = False) -> ScanBatch | None:
        """Re-examine files the editor reports as saved, created, changed or deleted; what
        changed is re-annotated first. A changed ignore or config file triggers a full pass.
        `reread`: read them even if their stat did not change (their content was found not to
        match the index)."""
        if not self._index.writable:
            return None
        if any(path.rpartition("/")[2] in RULE_FILES for path in paths) or self._back():
            self.start("index")
            return None
        # git applies its own rules, so the current settings' rules are complete; a walk's rules
        # carry the .gitignore files it found, so those are kept until the next walk.
        rules = (
            await asyncio.to_thread(self.ignore_rules)
            if self._git_mode or self._rules is None
            else self._rules
        )
        known = await self._index.files.known_among(paths)
        try:
            batch = await asyncio.to_thread(
                scan_paths,
                self.root,
                paths,
                known,
                rules,
                git_mode=self._git_mode,
                max_file_size=self.settings.max_file_size,
                reread=reread,
            )
        except WorkspaceGone as exc:  # its files are kept
            if not self._gone:
                log.error("%s", exc)
            self._board.last_error, self._gone = str(exc), True
            return None
        if batch.unreadable:
            say_unreadable(batch.unreadable)
        self._read_again_later(batch.settling)
        if batch.changed or batch.removed:
            try:
                await self._index.files.apply_changes(
                    batch.changed, batch.removed, current=self._scheduler.current, bodies=batch.bodies
                )
            except Exception as exc:
                if self._board.storage_fault(exc) is None:
                    raise
                return None
            self._scheduler.queue([item.path for item in batch.changed], TOUCHED)
            self._scheduler.files_changed()
            self._scheduler.ensure_draining()
        return batch

    def _read_again_later(self, settling: Sequence[tuple[str, str]]) -> None:
        """A file read within its modification's timestamp tick may be rewritten, same size,
        without its stat showing it (or may have been read half rewritten), and one that kept
        changing while read was not stored at all: read each once more when the tick is over,
        when a read that matches the file's stat is one whole version, and rescan those whose
        content is not what was stored."""
        if not settling or self._board.closed:
            return
        idle = not self._settling
        self._settling.update(settling)
        if idle:
            self._background.spawn(self._settle())

    async def _settle(self) -> None:
        await asyncio.sleep(RACY_NS / 1e9 + 0.1)
        read, self._settling = self._settling, {}
        changed = await asyncio.to_thread(drifted, self.root, read, max_file_size=self.settings.max_file_size)
        if changed:
            await self.refresh(changed, reread=True)

    def _back(self) -> bool:
        """Whether the workspace folder was found gone and is back: a full pass brings the
        index up to date with whatever it holds now."""
        if not self._gone:
            return False
        try:
            require_root(self.root)
        except WorkspaceGone:
            return False
        return True

    async def reconcile_every(self, interval: float) -> None:
        """Rescan quietly every `interval` seconds, for changes no editor reported."""
        if interval <= 0:
            return
        while not self._board.closed:
            await asyncio.sleep(interval)
            if self.idle and self._index.writable:
                self.start("index", quiet=True)


def say_unreadable(paths: Collection[str]) -> None:
    """Name the files and folders left out because they may not be read."""
    if not paths:
        return
    names = sorted(printable(path) for path in paths)
    more = len(names) - NAMED_IN_WARNING
    log.warning(
        "%d files or folders left out of the index: permission denied reading them: %s%s",
        len(names),
        ", ".join(names[:NAMED_IN_WARNING]),
        f" and {more} more" if more > 0 else "",
    )


class ScanProducer:
    """The scan in a worker thread, handing batches to the event loop through a bounded
    queue; the event loop writes each batch in one transaction while the thread hashes the
    next."""

    def __init__(
        self,
        indexer: Indexer,
        rules: IgnoreRules,
        known: concurrent.futures.Future[dict[str, KnownFile]],
        same_rules: bool,
        reporter: ProgressReporter,
        walked_before: Mapping[str, DirectoryListing],
    ) -> None:
        self._indexer = indexer
        self._rules = rules
        self._known = known
        self._same_rules = same_rules
        self._walked_before = walked_before
        self.walked: WalkMemory | None = None
        self._reporter = reporter
        self._loop = asyncio.get_running_loop()
        self._stop = threading.Event()
        self._batches: asyncio.Queue[ScanBatch | BaseException | None] = asyncio.Queue(HANDOFF_DEPTH)
        self.unreadable: list[str] = []
        self.settling: list[tuple[str, str]] = []

    async def store_batches(self, index: Index, current: str) -> ScanTotals:
        producer = self._loop.run_in_executor(None, self._produce)
        totals = ScanTotals()
        try:
            while (item := await self._batches.get()) is not None:
                if isinstance(item, InterruptedError):
                    raise asyncio.CancelledError
                if isinstance(item, BaseException):
                    raise item
                renamed = await index.files.apply_changes(
                    item.changed, item.removed, current=current, bodies=item.bodies
                )
                self.unreadable.extend(item.unreadable)
                self.settling.extend(item.settling)
                totals = dataclasses.replace(
                    totals,
                    added=totals.added + item.added,
                    changed=totals.changed + len(item.changed) - item.added,
                    removed=totals.removed + len(item.removed),
                    renamed=totals.renamed + renamed,
                    unchanged=totals.unchanged + item.unchanged,
                )
        finally:
            self._stop.set()
            while not self._batches.empty():  # unblock a producer waiting to hand over
                self._batches.get_nowait()
            await asyncio.gather(producer, return_exceptions=True)
        return totals

    def _produce(self) -> None:
        indexer = self._indexer
        try:
            listing = enumerate_files(
                indexer.root,
                self._rules,
                self._known.result if self._same_rules else None,
                self._walked_before,
                self._cancelled,
            )
            indexer.listed(listing, self._rules)
            self.walked = listing.walked
            for batch in scan(
                indexer.root,
                self._known.result(),
                listing,
                max_file_size=indexer.settings.max_file_size,
                progress=self._on_progress,
                is_cancelled=self._cancelled,
                reader=ScanReader(indexer.pool),
            ):
                self._handoff(batch)
            self._handoff(None)
        except BaseException as exc:  # handed to the event loop, which re-raises it
            if not self._stop.is_set():
                self._handoff(exc)

    def _cancelled(self) -> bool:
        return self._stop.is_set() or self._reporter.is_cancelled()

    def _on_progress(self, done: int, total: int) -> None:
        percentage = SCAN_SHARE * done // total if total else 0
        self._loop.call_soon_threadsafe(self._reporter.report, f"scanning {done}/{total} files", percentage)

    def _handoff(self, item: ScanBatch | BaseException | None) -> None:
        future = asyncio.run_coroutine_threadsafe(self._batches.put(item), self._loop)
        while True:
            try:
                future.result(timeout=0.1)
                return
            except concurrent.futures.TimeoutError:
                if self._stop.is_set():  # nobody will take it: the pass is over
                    future.cancel()
                    raise InterruptedError("scan abandoned") from None


class ScanReader:
    """Where a scan's reading (read, hash, classify, content words) runs: in the scan's own
    thread while the changes are few, in the worker processes once they are many or the
    workers run anyway. A job whose workers die is tried again, then read here."""

    def __init__(self, pool: AnnotationPool) -> None:
        self._pool = pool
        self._read_here = 0

    def __call__(self, job: ReadJob) -> concurrent.futures.Future[list[ReadOutcome]]:
        if self._pool.running or self._read_here >= READ_HERE_LIMIT:
            return self._pool.submit(read_outcomes, job, fallback=read_outcomes)
        self._read_here += len(job[1])
        return read_here(job)
