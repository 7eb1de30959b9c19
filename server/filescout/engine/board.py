"""What indexing is doing, told to whoever listens: the phase and the last error. Counts come
from the index, so nothing here can fall out of sync with it."""

from __future__ import annotations

from collections.abc import Callable

from filescout.engine.background import Background
from filescout.engine.hooks import StatusListener
from filescout.index import Index
from filescout.records import IndexPhase
from filescout_protocol.types import IndexStatus


class StatusBoard:
    """The current phase and the last error; each phase change reaches the listener."""

    def __init__(
        self,
        index: Index,
        listener: StatusListener | None,
        background: Background,
        current_annotator: Callable[[], str],
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

    def set_phase(self, phase: IndexPhase, message: str | None = None) -> None:
        self.phase = phase
        if self._listener is not None and not self.closed:
            self._background.spawn(self._emit(phase, message))

    async def _emit(self, phase: IndexPhase, message: str | None) -> None:
        by_status, _ = await self._index.files.counts(current=self._current())
        status = IndexStatus(
            phase=phase,
            files=sum(by_status.values()),
            annotated=by_status.get("annotated", 0),
            pending=by_status.get("pending", 0) + by_status.get("stale", 0),
            message=message,
        )
        if self._listener is not None:
            self._listener(status)
