"""What indexing is doing, told to whoever listens: the phase and the last error. Counts come
from the index, so nothing here can fall out of sync with it."""

from __future__ import annotations

import logging
from collections.abc import Callable

from filescout.core.records import IndexPhase
from filescout.engine.background import Background
from filescout.engine.faults import disk_full_message, is_disk_full
from filescout.engine.hooks import StatusListener
from filescout.index import Index
from filescout_protocol.types import IndexStatus

log = logging.getLogger(__name__)


class StatusBoard:
    """The current phase and the last error; each phase change reaches the listener."""

    def __init__(
        self,
        index: Index,
        listener: StatusListener | None,
        background: Background,
        current_annotator: Callable[[], str],
        damaged: Callable[[BaseException], str | None] = lambda exc: None,
    ) -> None:
        self.phase: IndexPhase = "idle"
        self.last_error: str | None = None
        self.closed = False
        self.in_pass = False
        """A full pass runs: it, not the backlog, decides when the phase returns to idle."""
        self._index = index
        self._listener = listener
        self._background = background
        self._current = current_annotator
        self._damaged = damaged
        """The words for damage to the index (its repair begun), None for other errors."""
        self._full_said = False

    def storage_fault(self, exc: BaseException) -> str | None:
        """When `exc` is the disk under the index filling up: record it as the last error, log
        it the first time (not once per batch, file or pass), and return the message; likewise
        when it is damage to the index, which the repair says and rebuilds. None for any other
        error, which remains the caller's to report."""
        if (damage := self._damaged(exc)) is not None:
            self.last_error = damage
            return damage
        if not is_disk_full(exc):
            return None
        self.last_error = disk_full_message(self._index.path)
        if not self._full_said:
            self._full_said = True
            log.error("%s", self.last_error)
        return self.last_error

    def storage_recovered(self) -> None:
        """A pass stored everything: a full disk, should it come back, is news again."""
        self._full_said = False

    def set_phase(self, phase: IndexPhase, message: str | None = None) -> None:
        self.phase = phase
        if self._listener is not None and not self.closed:
            self._background.spawn(self._emit(phase, message))

    async def _emit(self, phase: IndexPhase, message: str | None) -> None:
        try:
            by_status, _ = await self._index.files.counts(current=self._current())
        except Exception as exc:
            if self.storage_fault(exc) is None:
                raise
            return
        status = IndexStatus(
            phase=phase,
            files=sum(by_status.values()),
            annotated=by_status.get("annotated", 0),
            pending=by_status.get("pending", 0) + by_status.get("stale", 0),
            message=message,
        )
        if self._listener is not None:
            self._listener(status)
