"""Who writes the index: the first process to take its lock. Others open it read-only, answer
from WAL snapshots, keep the access signals they see, and take over when the writer exits."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Literal

from filescout.engine.faults import (
    FULL_ERRNOS,
    UNWRITABLE_ERRNOS,
    cannot_write_message,
    disk_full_message,
    is_disk_full,
)
from filescout.errors import ReadOnly, WorkspaceUnavailable
from filescout.index import Index
from filescout.lock import WriterLock

log = logging.getLogger(__name__)

TAKEOVER_INTERVAL = float(os.environ.get("FILESCOUT_TAKEOVER_INTERVAL", "2"))
READER_OPEN_TIMEOUT = 10.0

Role = Literal["writer", "reader"]


def lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lock")


class IndexFull(WorkspaceUnavailable):
    """The disk under the index is full: opening it for writing failed, not the index."""


async def open_for_writing(path: Path, warnings: list[str]) -> Index:
    """Open the index for writing; a corrupt, foreign or newer index is moved aside and
    rebuilt (with a warning), since the index is only a cache of the workspace. A full disk
    is not the index's fault: it stays where it is."""
    try:
        return await Index.open(path)
    except Exception as exc:  # IndexUnusable, sqlite3.DatabaseError and friends
        if is_disk_full(exc):
            raise IndexFull(disk_full_message(path)) from exc
        if not path.exists():
            raise WorkspaceUnavailable(f"cannot create the index at {path}: {exc}") from exc
        aside = path.with_name(f"{path.name}.unusable-{int(time.time())}")
        log.warning("index %s is unusable (%s); moving it to %s and rebuilding", path, exc, aside)
        warnings.append(
            f"the index at {path} was unusable ({exc}); it was moved to {aside.name} and is being rebuilt"
        )
        for suffix in ("", "-wal", "-shm"):
            source = Path(str(path) + suffix)
            if source.exists():
                shutil.move(str(source), str(aside) + suffix)
        try:
            return await Index.open(path)
        except Exception as second:
            raise WorkspaceUnavailable(f"cannot create the index at {path}: {second}") from second


async def open_for_reading(path: Path, timeout: float = READER_OPEN_TIMEOUT) -> Index:
    """Open an index the lock holder writes, waiting briefly for it to create the index."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await Index.open_readonly(path)
        except Exception as exc:
            if time.monotonic() > deadline:
                raise WorkspaceUnavailable(
                    f"another filescout process writes {path}, and it is not readable yet: {exc}"
                ) from exc
            await asyncio.sleep(0.05)


class Roles:
    """The writer lock, the role it gives this process, and the hand-over between roles."""

    def __init__(
        self, index: Index, lock: WriterLock, warnings: list[str], *, unwritable: str | None = None
    ) -> None:
        self.index = index
        self.lock = lock
        self.unwritable = unwritable
        """Why this process can never write the index (its storage refuses writes), if so."""
        self._warnings = warnings
        self._access_backlog: dict[str, float] = {}
        """Accesses a reader saw, by path, for the index once this process writes it."""

    @classmethod
    async def acquire(cls, db_path: Path, warnings: list[str]) -> Roles:
        """Take the writer role if the lock is free, else open the index for reading."""
        lock = WriterLock(lock_path(db_path))
        try:
            writer = lock.try_acquire()
        except OSError as exc:
            # Reads need no lock: an index that exists is served even where nothing can be written.
            if exc.errno in UNWRITABLE_ERRNOS | FULL_ERRNOS and db_path.exists():
                return await cls._unwritable(db_path, lock, warnings, cannot_write_message(db_path, exc))
            raise WorkspaceUnavailable(f"cannot use {db_path.parent}: {exc}") from exc
        if not writer:
            log.info("another filescout process (pid %s) writes this index; serving reads", lock.holder())
            return cls(await open_for_reading(db_path), lock, warnings)
        try:
            return cls(await open_for_writing(db_path, warnings), lock, warnings)
        except IndexFull as exc:
            lock.release()
            return await cls._unwritable(db_path, lock, warnings, str(exc))
        except BaseException:
            lock.release()  # let another window try, instead of waiting on us forever
            raise

    @classmethod
    async def _unwritable(cls, db_path: Path, lock: WriterLock, warnings: list[str], reason: str) -> Roles:
        """Serve the index read-only for good, saying why."""
        try:
            index = await Index.open_unwritable(db_path)
        except Exception as exc:
            raise WorkspaceUnavailable(f"{reason}; and it cannot be read either: {exc}") from exc
        log.warning("%s", reason)
        warnings.append(reason)
        return cls(index, lock, warnings, unwritable=reason)

    @property
    def role(self) -> Role:
        return "writer" if self.index.writable else "reader"

    def writer_pid(self) -> int | None:
        if self.unwritable is not None:
            return None
        return os.getpid() if self.index.writable else self.lock.holder()

    def require_writer(self, action: str) -> None:
        if self.unwritable is not None:
            raise ReadOnly(f"{action}: {self.unwritable}")
        if not self.index.writable:
            raise ReadOnly(
                f"{action}: another filescout process (pid {self.lock.holder()}) "
                "indexes this workspace; this one serves reads and takes over when "
                "it exits"
            )

    async def record_access(self, paths: Sequence[str], *, weight: float) -> None:
        """Count a use of `paths`; a reader keeps it until it writes the index itself."""
        if self.index.writable:
            await self.index.access.record(paths, weight=weight)
            return
        for path in paths:
            self._access_backlog[path] = self._access_backlog.get(path, 0.0) + weight

    async def wait_for_takeover(
        self, became_writer: Callable[[], Awaitable[None]], closed: Callable[[], bool]
    ) -> None:
        """Serve reads until the writer goes away, then become the writer and call
        `became_writer`. An index on storage that refuses writes is never taken over."""
        while self.unwritable is None and not closed():
            await asyncio.sleep(TAKEOVER_INTERVAL)
            try:
                if not self.lock.try_acquire():
                    continue
            except OSError as exc:  # the lock's directory went away or became read-only
                log.debug("cannot take the writer lock: %s", exc)
                continue
            log.info("the other filescout process has exited; this one now indexes")
            try:
                await self.index.become_writer(await open_for_writing(self.index.path, self._warnings))
            except Exception:
                log.exception("cannot take over the index; serving reads still")
                self.lock.release()
                continue
            await self._flush_access_backlog()
            await became_writer()
            return

    async def _flush_access_backlog(self) -> None:
        by_weight: dict[float, list[str]] = {}
        for path, weight in self._access_backlog.items():
            by_weight.setdefault(weight, []).append(path)
        for weight, paths in by_weight.items():
            await self.index.access.record(paths, weight=weight)
        self._access_backlog.clear()

    async def close(self) -> None:
        await self.index.close()
        self.lock.release()
