"""Worker processes for the CPU-bound part of indexing: reading, hashing and finding the words of
changed files during a scan, and structural annotation after it. Parsing holds the GIL, so only
processes spread it over the cores; the event loop and the SQLite writer stay in this process.

The pool starts when there is work and stops when idle (each worker holds the parsers, tens of
MB); processes are spawned, never forked from a process that runs SQLite threads. A worker that
dies (killed, out of memory, a crashing parser) breaks the pool: it is replaced, and the job is
tried once more in a new one; after that it fails, or runs in this process if the caller says
how.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from filescout.worker_process import start_worker

log = logging.getLogger(__name__)

T = TypeVar("T")
A = TypeVar("A")

DEFAULT_MAX_WORKERS = 4
"""Workers when the setting leaves it to the CPU count. Each costs ~40 MB, and beyond about
four the single writer in this process, not parsing, bounds the throughput."""
CORES_FOR_THE_SERVER = 1
"""While a backlog drains, this process's writer keeps a core busy: a worker on that core too
would cost memory and the server's latency for a few per cent of throughput (measured in
docs/BENCHMARKS.md: 2 cores, 1 worker against 2)."""
IDLE_SECONDS = 30.0
RETRIES = 1


def worker_count(setting: int | None, cpus: int | None = None) -> int:
    """The pool's size: the setting, or one per core but the server's (at least one, at most
    DEFAULT_MAX_WORKERS)."""
    if setting is not None:
        return setting
    cores = cpus if cpus is not None else (os.cpu_count() or 1)
    return max(1, min(cores - CORES_FOR_THE_SERVER, DEFAULT_MAX_WORKERS))


def _cancelling(inner: weakref.ref[Future[T]]) -> Callable[[Future[T]], None]:
    """Cancel the job when its caller's future is cancelled. The job is held weakly: the job's
    own callback holds the caller's future, and a cycle between the two would keep every result
    (a batch's words, MBs) alive until a full garbage collection, which a long-running process
    with many objects seldom makes."""

    def cancel_if_cancelled(outer: Future[T]) -> None:
        job = inner()
        if job is not None and outer.cancelled():
            job.cancel()

    return cancel_if_cancelled


class AnnotationPool:
    """A lazily started, self-stopping, self-healing pool of worker processes. `submit` may be
    called from any thread; `run` from the event loop."""

    def __init__(self, workers: int, *, idle_seconds: float = IDLE_SECONDS) -> None:
        self.workers = workers
        self._idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._in_flight = 0
        self._idle_timer: threading.Timer | None = None
        self._closed = False
        self.started = 0
        """How many times a set of workers was started (a replaced broken pool counts)."""

    @property
    def running(self) -> bool:
        return self._executor is not None

    def pids(self) -> list[int]:
        """The worker processes alive now."""
        executor = self._executor
        processes = dict(getattr(executor, "_processes", None) or {}) if executor is not None else {}
        return [pid for pid, process in processes.items() if process.is_alive()]

    def resize(self, workers: int) -> None:
        """Use `workers` processes from the next start on (the running ones finish their jobs)."""
        if workers != self.workers:
            self.workers = workers
            self._stop(wait=False, cancel=False)

    def submit(
        self, fn: Callable[[A], T], argument: A, *, fallback: Callable[[A], T] | None = None
    ) -> Future[T]:
        """Run `fn(argument)` in a worker. If workers die under it, it is tried once more in
        a new pool, then run here by `fallback` if there is one; otherwise the future fails
        with BrokenProcessPool."""
        outer: Future[T] = Future()
        self._attempt(outer, fn, argument, fallback, RETRIES)
        return outer

    async def run(self, fn: Callable[[A], T], argument: A) -> T:
        return await asyncio.wrap_future(self.submit(fn, argument))

    def close(self) -> None:
        """Stop the workers now and wait for them to exit. A job under way is abandoned, not
        waited for: a worker only reads files and computes (it writes nothing), and a closing
        workspace will not store its answer. Waiting for a batch of large files took seconds,
        longer than an MCP client gives a server to exit before it kills it."""
        self._closed = True
        with self._lock:
            executor = self._executor
        if executor is not None:
            _terminate_workers(executor)
        self._stop(wait=True, cancel=True)

    # -- inside ----------------------------------------------------------------------------

    def _attempt(
        self,
        outer: Future[T],
        fn: Callable[[A], T],
        argument: A,
        fallback: Callable[[A], T] | None,
        retries: int,
    ) -> None:
        try:
            executor = self._running_executor()
        except RuntimeError as exc:  # closed
            outer.set_exception(exc)
            return
        try:
            inner = executor.submit(fn, argument)
        except (BrokenProcessPool, RuntimeError) as exc:  # broke or stopped before the job went in
            self._job_done()
            self._discard(executor)
            self._after_failure(outer, BrokenProcessPool(str(exc)), fn, argument, fallback, retries)
            return
        outer.add_done_callback(_cancelling(weakref.ref(inner)))
        inner.add_done_callback(
            lambda done: self._settle(outer, done, executor, fn, argument, fallback, retries)
        )

    def _settle(
        self,
        outer: Future[T],
        inner: Future[T],
        executor: ProcessPoolExecutor,
        fn: Callable[[A], T],
        argument: A,
        fallback: Callable[[A], T] | None,
        retries: int,
    ) -> None:
        self._job_done()
        if outer.done():
            return
        if inner.cancelled():
            outer.cancel()
            return
        error = inner.exception()
        if error is None:
            outer.set_result(inner.result())
        elif isinstance(error, BrokenProcessPool):
            self._discard(executor)
            # This runs on the broken pool's own thread: start the next one elsewhere.
            threading.Thread(
                target=self._after_failure,
                args=(outer, error, fn, argument, fallback, retries),
                name="filescout-pool-retry",
                daemon=True,
            ).start()
        else:
            outer.set_exception(error)

    def _after_failure(
        self,
        outer: Future[T],
        error: BaseException,
        fn: Callable[[A], T],
        argument: A,
        fallback: Callable[[A], T] | None,
        retries: int,
    ) -> None:
        if outer.done():
            return
        if self._closed:  # the workers were stopped on purpose: nobody waits for this job's answer
            outer.set_exception(error)
        elif retries > 0:
            log.warning("an indexing worker process died; starting a new one and trying its job again")
            self._attempt(outer, fn, argument, fallback, retries - 1)
        elif fallback is not None:
            try:
                outer.set_result(fallback(argument))
            except BaseException as exc:
                outer.set_exception(exc)
        else:
            outer.set_exception(error)

    def _running_executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            if self._idle_timer is not None:
                self._idle_timer.cancel()
                self._idle_timer = None
            if self._executor is None:
                self._executor = ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=start_worker,
                    initargs=(logging.getLogger("filescout").getEffectiveLevel(),),
                )
                self.started += 1
                log.debug("started %d indexing worker processes", self.workers)
            self._in_flight += 1
            return self._executor

    def _job_done(self) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._in_flight == 0 and self._executor is not None and not self._closed:
                self._idle_timer = threading.Timer(self._idle_seconds, self._stop_if_idle)
                self._idle_timer.daemon = True
                self._idle_timer.start()

    def _stop_if_idle(self) -> None:
        with self._lock:
            if self._in_flight or self._executor is None:
                return
            executor, self._executor, self._idle_timer = self._executor, None, None
        log.debug("indexing workers idle: stopping them")
        executor.shutdown(wait=True)

    def _discard(self, executor: ProcessPoolExecutor) -> None:
        """Forget a broken pool (once, whoever notices first)."""
        with self._lock:
            if self._executor is executor:
                self._executor = None
        executor.shutdown(wait=False, cancel_futures=True)

    def _stop(self, *, wait: bool, cancel: bool) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
            if self._idle_timer is not None:
                self._idle_timer.cancel()
                self._idle_timer = None
        if executor is not None:
            executor.shutdown(wait=wait, cancel_futures=cancel)


def _terminate_workers(executor: ProcessPoolExecutor) -> None:
    """SIGTERM every worker of `executor` (Python 3.14 has `terminate_workers` for this; before,
    the executor's process table is the only way to them)."""
    terminate = getattr(executor, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        try:
            process.terminate()
        except (OSError, ValueError):  # already gone, or already closed
            pass
