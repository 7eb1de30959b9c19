"""Logging: stderr always (stdout carries JSON-RPC), plus `window/logMessage` when an editor is
connected."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUIET_LIBRARIES = ("pygls", "aiosqlite", "httpx", "httpcore", "openai", "asyncio")


def configure(level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("filescout").setLevel(LEVELS.get(level, logging.INFO))
    for name in QUIET_LIBRARIES:  # pygls logs every payload at INFO
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(ExpectedErrorsFilter())


def set_level(level: str) -> None:
    logging.getLogger("filescout").setLevel(LEVELS.get(level, logging.INFO))


class ForwardingHandler(logging.Handler):
    """Hands filescout's log records to `send` on the event loop's thread, whichever thread
    logged them (the scanner runs in a worker thread; stdout must have one writer)."""

    def __init__(self, send: Callable[[int, str], None], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.INFO)
        self._send = send
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            if threading.get_ident() == self._loop_thread:
                self._send(record.levelno, message)
            elif not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._send, record.levelno, message)
        except Exception:  # logging must never take the server down
            self.handleError(record)


class ExpectedErrorsFilter(logging.Filter):
    """pygls logs every error a handler raises with a traceback; errors we raise on purpose
    (bad params, read-only, cancelled) are answers to the client, not server faults."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        code = getattr(error, "code", None)
        return not (isinstance(code, int) and code in EXPECTED_ERROR_CODES)


EXPECTED_ERROR_CODES = frozenset({-32602, -32800, -32010, -32011, -32002})
