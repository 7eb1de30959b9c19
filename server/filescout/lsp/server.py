"""The pygls server: its state between requests, the `initialize` answer, and `serve()`. What it
answers is in handlers.py."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Generator
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import lsp_method

from filescout import __version__
from filescout import log as logsetup
from filescout.door.server import Door
from filescout.engine import Workspace
from filescout.lsp.connection import CheckedProtocol, serve_stdio, serve_tcp
from filescout.lsp.convert import converter_factory
from filescout.lsp.stdio import ClientStdin, ClientStdout, chunk_reader
from filescout_protocol.types import (
    COMMANDS,
    METHODS,
    PROTOCOL_VERSION,
    ErrorCode,
    IndexStatus,
    Method,
)

log = logging.getLogger(__name__)

EDIT_ACCESS_INTERVAL = 60.0  # count typing in a file as one access per minute

LOG_MESSAGE_TYPES = {
    logging.ERROR: types.MessageType.Error,
    logging.WARNING: types.MessageType.Warning,
    logging.INFO: types.MessageType.Info,
}


class FilescoutProtocol(CheckedProtocol):
    """Advertises filescout's own methods under `capabilities.experimental`."""

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {
            "filescout": {
                "protocolVersion": PROTOCOL_VERSION,
                "methods": list(METHODS),
                "commands": list(COMMANDS),
                "partialResults": True,
            }
        }
        return result


class FilescoutServer(LanguageServer):
    """One editor connection and the engine it opened (None until `initialize`, or for good if
    the workspace cannot be used: requests then say why)."""

    def __init__(self) -> None:
        super().__init__(
            "filescout", __version__, protocol_cls=FilescoutProtocol, converter_factory=converter_factory
        )
        self.engine: Workspace | None = None
        self.door: Door | None = None
        """Where terminal commands ask this server (door/), once the engine is open."""
        self.startup_error: str | None = None
        self.initialize_done = asyncio.Event()
        """Set once `initialize` has opened the workspace or said why not: a client that sends
        `initialized` before the answer to `initialize` (early, as the spec forbids) waits for it."""
        self.initialized = False
        self._tasks: set[asyncio.Future[Any]] = set()
        self._last_edit_access: dict[str, float] = {}
        self.exit_code = 0

    def start_io(
        self, stdin: BinaryIO | ClientStdin | None = None, stdout: BinaryIO | ClientStdout | None = None
    ) -> None:
        """Serve one connection on these streams with filescout's reader (connection.py), which
        answers what pygls's own would leave unanswered; `exit_code` is what `exit` asked for."""
        protocol = self.protocol
        assert isinstance(protocol, CheckedProtocol)
        protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))  # type: ignore[arg-type]  # file-like
        try:
            self.exit_code = serve_stdio(protocol, chunk_reader(stdin or sys.stdin.buffer), self.thread_pool)
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        """Serve one editor that connects to host:port, with the same reader as on stdio."""
        protocol = self.protocol
        assert isinstance(protocol, CheckedProtocol)
        try:
            self.exit_code = asyncio.run(serve_tcp(protocol, host, port))
        except KeyboardInterrupt:
            pass
        finally:
            self.shutdown()

    def require_engine(self) -> Workspace:
        if self.engine is not None:
            return self.engine
        if not self.initialized and self.startup_error is None:
            raise JsonRpcException(message="server not initialized", code=ErrorCode.SERVER_NOT_INITIALIZED)
        raise JsonRpcException(
            message=self.startup_error or "no workspace", code=ErrorCode.WORKSPACE_UNAVAILABLE
        )

    def forward_logs(self, loop: asyncio.AbstractEventLoop) -> None:
        """Show filescout's log in the editor too (`window/logMessage`)."""
        handler = logsetup.ForwardingHandler(self.send_log, loop)
        logging.getLogger("filescout").addHandler(handler)

    def send_log(self, level: int, message: str) -> None:
        message_type = LOG_MESSAGE_TYPES.get(level, types.MessageType.Log)
        self.window_log_message(types.LogMessageParams(type=message_type, message=message))

    def show_warnings(self, warnings: list[str]) -> None:
        for warning in warnings:
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=f"filescout: {warning}")
            )

    def supports_configuration_pull(self) -> bool:
        workspace = self.client_capabilities.workspace if self.client_capabilities else None
        return bool(workspace and workspace.configuration)

    def edit_counts_as_access(self, uri: str) -> bool:
        """Typing in a file counts as one access a minute, not one per keystroke."""
        now = time.monotonic()
        if now - self._last_edit_access.get(uri, 0.0) <= EDIT_ACCESS_INTERVAL:
            return False
        self._last_edit_access[uri] = now
        return True

    def background(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def watch_files(self) -> bool:
        """Ask the editor to report file changes, if it can register watchers dynamically."""
        workspace = self.client_capabilities.workspace if self.client_capabilities else None
        watched = workspace.did_change_watched_files if workspace else None
        if not (watched and watched.dynamic_registration):
            return False
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
        )
        try:
            await self.client_register_capability_async(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id="filescout-watch",
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=options,
                        )
                    ]
                )
            )
        except Exception as exc:
            log.info("file watching not available: %s", exc)
            return False
        return True

    def send_status(self, status: IndexStatus) -> None:
        self.protocol.notify(Method.STATUS, status)
