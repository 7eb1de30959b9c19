"""Work-done progress: how indexing shows up natively in the editor."""

from __future__ import annotations

import logging
import time
import uuid

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from filescout.engine.progress import NullProgress, ProgressReporter

log = logging.getLogger(__name__)

MIN_REPORT_INTERVAL = 0.2  # seconds; editors redraw on every report


class WorkDoneProgress:
    """A server-initiated work-done progress with a fresh token per run (pygls refuses to create
    a token twice), throttled reports, and the editor's cancel button wired to `is_cancelled`."""

    def __init__(self, server: LanguageServer, token: str) -> None:
        self._server = server
        self._token = token
        self._last_report = 0.0
        self._last_percentage: int | None = None

    @classmethod
    async def create(cls, server: LanguageServer, kind: str) -> ProgressReporter:
        capabilities = server.client_capabilities
        window = capabilities.window if capabilities else None
        if not (window and window.work_done_progress):
            return NullProgress()
        token = f"filescout/{kind}/{uuid.uuid4().hex[:12]}"
        try:
            await server.work_done_progress.create_async(token)
        except Exception as exc:
            log.info("client refused work-done progress: %s", exc)
            return NullProgress()
        return cls(server, token)

    def begin(self, title: str, message: str | None = None) -> None:
        self._server.work_done_progress.begin(
            self._token,
            types.WorkDoneProgressBegin(title=title, message=message, percentage=0, cancellable=True),
        )

    def report(self, message: str | None = None, percentage: int | None = None) -> None:
        now = time.monotonic()
        elapsed = now - self._last_report
        moved = percentage != self._last_percentage and elapsed >= MIN_REPORT_INTERVAL / 4
        if elapsed < MIN_REPORT_INTERVAL and not moved:
            return
        self._last_report = now
        self._last_percentage = percentage
        self._server.work_done_progress.report(
            self._token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )

    def end(self, message: str | None = None) -> None:
        self._server.work_done_progress.end(self._token, types.WorkDoneProgressEnd(message=message))
        release(self._server, self._token)

    def is_cancelled(self) -> bool:
        future = self._server.work_done_progress.tokens.get(self._token)
        return future is not None and future.cancelled()


class ClientProgress:
    """Progress on a token the client sent with its request (`workDoneToken`): no creation
    round trip; nothing at all when the client sent none."""

    def __init__(self, server: LanguageServer, token: str | int | None, title: str) -> None:
        self._server = server
        self._token = token
        if token is not None:
            server.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title))

    def report(self, message: str) -> None:
        if self._token is not None:
            self._server.work_done_progress.report(self._token, types.WorkDoneProgressReport(message=message))

    def end(self, message: str | None = None) -> None:
        if self._token is not None:
            self._server.work_done_progress.end(self._token, types.WorkDoneProgressEnd(message=message))
            release(self._server, self._token)
            self._token = None


def release(server: LanguageServer, token: str | int) -> None:
    """pygls keeps a future for every token that ever began and never lets go of it: one per
    indexing pass and per request that brought a token, for the life of the connection."""
    server.work_done_progress.tokens.pop(token, None)
