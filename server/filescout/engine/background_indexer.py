"""The background indexer: finishes the work a short-lived process cut short (`handoff.py`
starts it), then exits.

One per index at a time: it holds a lock of its own (`<index>.background`) from start to exit,
and one started meanwhile leaves at once, since the work is the same whoever does it. It waits
for the writer lock while the process that started it lets go of it (and a moment longer),
indexes and annotates until idle, and exits. A process that holds the writer lock beyond that
(an editor's server, a session started meanwhile) keeps it: it indexes itself, or hands its own
work on when it closes. The writer lock is yielded to nobody mid-way; an editor's server that
starts meanwhile is a reader and takes over when this exits. It stops within a second or so
when the workspace, the index or its folder is deleted, and on SIGTERM. While it works, the face
that started it may serve the engine (the command line opens the workspace's door, so terminal
commands are answered by this process rather than from an index it is still writing).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from filescout.core.errors import FilescoutError
from filescout.engine.handoff import background_lock_path
from filescout.engine.hooks import Hooks
from filescout.engine.roles import lock_path
from filescout.engine.workspace import Workspace
from filescout.index.lock import WriterLock

log = logging.getLogger(__name__)

AFTER_STARTER = 3.0 if os.name == "posix" else 15.0
"""How long the writer lock is tried once the process that started this one is gone (where
that cannot be told, from the start)."""
STARTER_LIMIT = 120.0
"""The longest wait for the starting process to let go of the lock."""
POLL = 0.1
WATCH_INTERVAL = 0.5


Serving = Callable[[Workspace], AbstractAsyncContextManager[object]]
"""What a face does with the engine while it works (entered once it writes the index)."""


async def main(
    root: Path, db_path: Path, starter: int | None = None, *, serving: Serving | None = None
) -> int:
    """Finish the work on `root`'s index at `db_path`; stop early when the workspace or the
    index is deleted, or on SIGTERM."""
    work = asyncio.ensure_future(finish(root, db_path, starter, serving=serving))
    with contextlib.suppress(NotImplementedError, AttributeError):  # no such signal handling on Windows
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, work.cancel)
    watcher = asyncio.ensure_future(_watch(root, db_path, work))
    try:
        return await work
    except asyncio.CancelledError:
        if not work.cancelled():
            raise
        log.info("background indexer %d stopped", os.getpid())
        return 0
    finally:
        watcher.cancel()


async def finish(
    root: Path, db_path: Path, starter: int | None = None, *, serving: Serving | None = None
) -> int:
    if (why := gone(root, db_path, seen_index=False)) is not None:
        log.info("nothing to finish: %s", why)
        return 0
    own = WriterLock(background_lock_path(db_path))
    if not _try(own):
        log.info("background indexer %s finishes the work on %s", own.holder(), root)
        return 0
    try:
        writer = await _writer_lock(db_path, own, starter)
        if writer is None:
            return 0
        try:
            return await _index(root, writer, serving)
        finally:
            writer.release()  # closing the workspace released it, unless opening failed
    finally:
        own.release()


async def _writer_lock(db_path: Path, own: WriterLock, starter: int | None) -> WriterLock | None:
    """The index's writer lock, once the starting process let go of it; None when another
    process holds it longer, or a newer background indexer is about to take it."""
    writer = WriterLock(lock_path(db_path))
    began = time.monotonic()
    deadline = began + AFTER_STARTER
    while not _try(writer):
        now = time.monotonic()
        if starter is not None and now - began < STARTER_LIMIT and _alive(starter):
            deadline = now + AFTER_STARTER
        elif now > deadline:
            return _last_look(writer, own)
        await asyncio.sleep(POLL)
    log.info("background indexer %d writes %s", os.getpid(), db_path)
    return writer


def _last_look(writer: WriterLock, own: WriterLock) -> WriterLock | None:
    """The writer may have let go just now, after starting a background indexer of its own
    that found this one waiting and left: look once more with the background lock let go, so
    that one of the two always goes on."""
    holder = writer.holder()
    own.release()
    if _try(writer):
        if _try(own):
            log.info("background indexer %d writes %s", os.getpid(), writer.path)
            return writer
        writer.release()  # a newer background indexer waits for it: that one goes on
        log.info("background indexer %s finishes the work", own.holder())
        return None
    log.info("filescout process %s writes this index and finishes the work itself", holder)
    return None


async def _index(root: Path, writer: WriterLock, serving: Serving | None) -> int:
    began = time.monotonic()
    try:
        # A failing model endpoint is given up on, not waited out: nobody waits for this.
        engine = await Workspace.open(root, hooks=Hooks(persistent=False), writer_lock=writer)
    except FilescoutError as exc:
        log.error("background indexing of %s failed: %s", root, exc)
        return 1
    try:
        if engine.role != "writer":  # the index refuses writes: the warnings say why
            return 0
        async with serving(engine) if serving is not None else contextlib.nullcontext():
            engine.start_indexing("index")
            await engine.wait_idle()
        status = await engine.status()
        log.info(
            "background indexer %d done in %.1f s: %d files (%s)%s",
            os.getpid(),
            time.monotonic() - began,
            status.files,
            ", ".join(f"{count} {name}" for name, count in sorted(status.by_status.items())),
            f"; {engine.last_error}" if engine.last_error else "",
        )
        return 0
    finally:
        await engine.close()


async def _watch(root: Path, db_path: Path, work: asyncio.Future[int]) -> None:
    seen_index = False
    while not work.done():
        seen_index = seen_index or db_path.exists()
        if (why := gone(root, db_path, seen_index=seen_index)) is not None:
            log.info("background indexer %d stops: %s", os.getpid(), why)
            work.cancel()
            return
        await asyncio.sleep(WATCH_INTERVAL)


def gone(root: Path, db_path: Path, *, seen_index: bool) -> str | None:
    """Why there is nothing left to work on, if so."""
    if not root.is_dir():
        return f"the workspace folder {root} is gone"
    if not db_path.parent.is_dir():
        return f"the index folder {db_path.parent} is gone"
    if seen_index and not db_path.exists():
        return f"the index {db_path} is gone"
    return None


def _try(lock: WriterLock) -> bool:
    try:
        return lock.try_acquire()
    except OSError as exc:  # its folder went away (the watcher says so) or refuses writes
        log.debug("cannot take %s: %s", lock.path, exc)
        return False


def _alive(pid: int) -> bool:
    """Whether process `pid` still runs (where that can be told without touching it)."""
    if os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if sys.platform.startswith("linux"):  # an exited process its parent has not reaped yet
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X")
    return True
