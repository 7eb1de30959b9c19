"""A damaged index heals itself. The index is a cache of the workspace, so a file SQLite calls
corrupt, or one that lacks a table of its schema, is not worth saving in place: the process that
writes it says so once, moves it aside (one copy kept, for a look afterwards), opens a fresh index
in its place and rebuilds it with a normal pass, while every operation keeps answering. Damage is
met by any statement of a request or of background work, or by SQLite's quick check once the first
pass is over. A reader never moves the writer's file: it says what it met, and reads the new file
as soon as the writer has put it in place."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import Any

from filescout.core.errors import WorkspaceUnavailable
from filescout.core.records import ScanTotals
from filescout.engine.background import Background
from filescout.engine.faults import damaged_elsewhere_message, damaged_message, index_damage
from filescout.engine.roles import Roles, set_index_aside
from filescout.index import Index

log = logging.getLogger(__name__)

MAX_REBUILDS = 3
"""Rebuilds in one process: an index damaged again and again (a failing disk) is said, not
rebuilt in a loop. A repair that fails (the file cannot be moved, the new one not created) is
not tried again either: the same words answer until filescout restarts."""

Rebuild = Callable[[], "asyncio.Future[ScanTotals]"]
Warn = Callable[[str], None]


class IndexRepair:
    """Finds damage in what operations and background work report, and replaces the index."""

    def __init__(self, roles: Roles, background: Background, rebuild: Rebuild, warn: Warn | None) -> None:
        self._roles = roles
        self._background = background
        self._rebuild = rebuild
        self._warn = warn
        self.epoch = 0
        """How many times another file took the index's place: an operation that began under an
        earlier one is tried again rather than taken for new damage."""
        self._repair: asyncio.Future[None] | None = None
        """The repair under way: done once a fresh index is in place and its first scan stored."""
        self._in_place: asyncio.Future[None] | None = None
        self._scan: asyncio.Future[ScanTotals] | None = None
        self._message: str | None = None
        self._gave_up: str | None = None
        """Why the damaged index is left as it is until filescout restarts, once it is."""
        self._rebuilds = 0
        self._said_elsewhere = False
        self._reopening = asyncio.Lock()
        self._check: asyncio.Future[Any] | None = None
        self._diagnosing: asyncio.Future[Any] | None = None
        """A look at the schema after an error SQLite does not call damage (a full disk fails
        every batch: one look at a time is enough)."""

    @property
    def _index(self) -> Index:
        return self._roles.index

    # -- operations (the face's guard) -------------------------------------------------------

    async def before(self) -> int:
        """Called as an operation begins: a reader whose writer has replaced the index reads the
        new file first. Returns the epoch the operation runs under."""
        if not self._index.writable and self._index.db.replaced():
            await self._reopen()
        return self.epoch

    async def recover(self, exc: Exception, epoch: int, *, wait: bool) -> bool:
        """An operation begun under `epoch` failed with `exc`. True once trying it again makes
        sense (a fresh index is in place; with `wait`, its first scan is stored too); False when
        `exc` has nothing to do with damage. Raises WorkspaceUnavailable, saying why, when the
        damage cannot be repaired by this process."""
        if not isinstance(exc, (sqlite3.Error, ValueError, WorkspaceUnavailable)):
            return False  # a bad request is answered at once, whatever the index is doing
        if epoch == self.epoch and not self.under_way():
            reason = index_damage(exc) or await self._diagnose(exc)
            if reason is None:
                return False
            if not self._index.writable:
                if await self._reopen():
                    return True
                raise WorkspaceUnavailable(self._damaged_elsewhere(reason)) from exc
            if self._gave_up is not None:
                raise WorkspaceUnavailable(self._gave_up) from exc
            self._begin(reason)
        await self._settle(wait)
        return True

    def rebuild_scan(self) -> asyncio.Future[ScanTotals] | None:
        """The scan of the rebuild under way, for a reindex asked for meanwhile to share."""
        return self._scan if self._scan is not None and not self._scan.done() else None

    # -- background work (the status board) --------------------------------------------------

    def damaged(self, exc: BaseException) -> str | None:
        """The words for `exc` when it is the index's damage, the repair begun; None for any
        other error, which stays the caller's to report. While a repair is under way, the
        index's errors belong to the file being replaced."""
        if self.under_way() and isinstance(exc, (sqlite3.Error, ValueError)):  # ValueError: closed
            return self._message
        reason = index_damage(exc)
        if reason is None:
            # FTS5 without one of its tables says "logic error": a look at the schema, one at a time
            idle = self._diagnosing is None or self._diagnosing.done()
            if isinstance(exc, sqlite3.Error) and idle:
                self._diagnosing = self._background.spawn(self._diagnose_later(exc))
            return None
        if not self._index.writable:
            return self._damaged_elsewhere(reason)
        if self._gave_up is not None:
            return self._gave_up
        self._begin(reason)
        return self._message

    def under_way(self) -> bool:
        return self._repair is not None and not self._repair.done()

    @property
    def task(self) -> asyncio.Future[None] | None:
        """The repair, done once a fresh index is in place and its first scan is stored."""
        return self._repair

    def check_once_idle(self, idle: Callable[[], Awaitable[None]]) -> None:
        """Have SQLite's quick check look for damage no statement has met yet, once per
        process, by the writer. It reads the whole file (0.9 s for the index of 100K files in
        the page cache, 3 to 6 s from disk), so it runs in the background once the first pass
        and its annotation are over (`idle` returns): never before the index's first answers."""
        if self._check is not None or not self._index.writable:
            return
        self._check = self._background.spawn(self._check_when_idle(idle))

    async def checked(self) -> None:
        """Wait for the quick check, if one was started (it starts once the first pass is idle)."""
        if self._check is not None:
            await asyncio.gather(self._check, return_exceptions=True)

    async def _check_when_idle(self, idle: Callable[[], Awaitable[None]]) -> None:
        await idle()
        if not self._index.writable or self.under_way() or self.epoch:
            return
        started = time.perf_counter()
        try:
            finding = await self._index.db.quick_check()
        except sqlite3.Error as exc:
            finding = index_damage(exc)
            if finding is None:
                log.warning("the index at %s could not be checked: %s", self._index.path, exc)
                return
        elapsed = int((time.perf_counter() - started) * 1000)
        log.info("SQLite's quick check of the index: %s (%d ms)", finding or "ok", elapsed)
        if finding is not None and not self.under_way() and not self.epoch:
            self._begin(f"SQLite's quick check: {finding}")

    # -- the repair --------------------------------------------------------------------------

    def _begin(self, reason: str) -> None:
        """Start replacing the index, unless a repair is under way or was given up."""
        if self.under_way() or self._gave_up is not None:
            return
        path = self._index.path
        self.epoch += 1
        self._message = damaged_message(path, reason, None)
        self._in_place = asyncio.get_running_loop().create_future()
        self._scan = None
        self._repair = self._background.spawn(self._replace(reason))

    async def _replace(self, reason: str) -> None:
        in_place = self._in_place
        assert in_place is not None
        try:
            self._scan = await self._fresh_index(reason)
        except Exception as exc:  # said by _fresh_index; the operations waiting get its words
            in_place.set_exception(exc)
            in_place.exception()  # retrieved: no operation may be waiting to read it
            return
        except BaseException:
            in_place.cancel()
            raise
        in_place.set_result(None)
        await asyncio.wait({self._scan})

    async def _fresh_index(self, reason: str) -> asyncio.Future[ScanTotals]:
        """Move the damaged file aside, open a new one in its place, start the rebuild."""
        index = self._index
        path = index.path
        try:
            if self._rebuilds == MAX_REBUILDS:
                raise WorkspaceUnavailable(f"it was rebuilt {MAX_REBUILDS} times already")
            aside = set_index_aside(path, "damaged")
            fresh = await Index.open(path)
        except Exception as exc:
            self._gave_up = (
                f"the index at {path} is damaged ({reason}) and is not rebuilt: {exc}; it is left "
                "as it is until filescout restarts"
            )
            self._say(self._gave_up, logging.ERROR)
            raise
        self._rebuilds += 1
        self._message = damaged_message(path, reason, aside)
        self._say(self._message, logging.WARNING)
        await index.db.adopt(fresh.db)
        return self._rebuild()

    async def _settle(self, wait: bool) -> None:
        """Wait for the fresh index to be in place (and, with `wait`, for its first scan)."""
        repair, in_place = self._repair, self._in_place
        if repair is None or in_place is None:
            return
        await asyncio.wait({repair, in_place}, return_when=asyncio.FIRST_COMPLETED)
        if not in_place.done() or in_place.cancelled():
            raise WorkspaceUnavailable(f"the index at {self._index.path} was being rebuilt; try again")
        if in_place.exception() is not None:
            raise WorkspaceUnavailable(self._gave_up or str(in_place.exception()))
        if wait:
            await asyncio.wait({repair})

    async def _diagnose(self, exc: BaseException) -> str | None:
        """For an error SQLite does not call damage: damage if the schema lacks a table."""
        if not isinstance(exc, sqlite3.Error):
            return None
        try:
            missing = await self._index.db.missing_objects()
        except sqlite3.Error as again:
            return index_damage(again)
        return f"the index lacks {', '.join(missing)}" if missing else None

    async def _diagnose_later(self, exc: BaseException) -> None:
        if (reason := await self._diagnose(exc)) is not None:
            if self._index.writable:
                self._begin(reason)
            else:
                self._damaged_elsewhere(reason)

    # -- a reader ------------------------------------------------------------------------------

    def _damaged_elsewhere(self, reason: str) -> str:
        """What a process that does not write the index says of its damage (once per file)."""
        roles = self._roles
        writer = (
            f"the filescout process that writes it (pid {roles.writer_pid()})"
            if roles.unwritable is None
            else "only a process that can write its storage"
        )
        message = damaged_elsewhere_message(self._index.path, reason, writer)
        if not self._said_elsewhere:
            self._said_elsewhere = True
            self._say(message, logging.WARNING)
        return message

    async def _reopen(self) -> bool:
        """Read the file the writer put in place of the one these connections read. False while
        there is none (or it is not ready yet): the next operation looks again."""
        epoch = self.epoch
        async with self._reopening:
            if self.epoch != epoch:
                return True
            index = self._index
            if index.writable or not index.db.replaced():
                return False
            opener = Index.open_unwritable if self._roles.unwritable is not None else Index.open_readonly
            try:
                fresh = await opener(index.path)
            except Exception as exc:
                log.debug("the new index at %s is not readable yet: %s", index.path, exc)
                return False
            await index.db.adopt(fresh.db)
            self.epoch += 1
            self._said_elsewhere = False
            log.info("the index at %s was replaced by the process that writes it: reading it", index.path)
            return True

    def _say(self, message: str, level: int) -> None:
        log.log(level, "%s", message)
        if self._warn is not None:
            self._warn(message)
