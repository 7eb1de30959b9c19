"""pygls handlers. Each one decodes its params into a protocol Struct, makes one call on the
engine, and encodes the answer; errors become JSON-RPC errors with a useful message."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from filescout import __version__
from filescout import log as logsetup
from filescout.engine import Hooks, Workspace
from filescout.errors import InvalidParams, ReadOnly, WorkspaceUnavailable
from filescout.lsp.convert import converter_factory, decode_params
from filescout.lsp.progress import ClientProgress, WorkDoneProgress
from filescout.lsp.wire import send_partial_result
from filescout.paths import to_relative, uri_to_path
from filescout_protocol.types import (
    COMMANDS,
    METHODS,
    PROTOCOL_VERSION,
    Command,
    AnnotateParams,
    DidAccessParams,
    ErrorCode,
    FindRelevantParams,
    GetFilesParams,
    IndexStatus,
    Method,
)

log = logging.getLogger(__name__)

Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])

WATCHED_RECONCILE_SECONDS = 600
UNWATCHED_RECONCILE_SECONDS = 60
EDIT_ACCESS_INTERVAL = 60.0  # count typing in a file as one access per minute

LOG_MESSAGE_TYPES = {logging.ERROR: types.MessageType.Error,
                     logging.WARNING: types.MessageType.Warning,
                     logging.INFO: types.MessageType.Info}


class FilescoutProtocol(LanguageServerProtocol):
    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):  # type: ignore[override]
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {
            "filescout": {"protocolVersion": PROTOCOL_VERSION, "methods": list(METHODS),
                          "commands": list(COMMANDS), "partialResults": True}
        }
        return result


class FilescoutServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("filescout", __version__, protocol_cls=FilescoutProtocol,
                         converter_factory=converter_factory)
        self.engine: Workspace | None = None
        self.startup_error: str | None = None
        self.initialized = False
        self._tasks: set[asyncio.Future[Any]] = set()
        self._last_edit_access: dict[str, float] = {}

    def require_engine(self) -> Workspace:
        if self.engine is not None:
            return self.engine
        if not self.initialized and self.startup_error is None:
            raise JsonRpcException(message="server not initialized",
                                   code=ErrorCode.SERVER_NOT_INITIALIZED)
        raise JsonRpcException(message=self.startup_error or "no workspace",
                               code=ErrorCode.WORKSPACE_UNAVAILABLE)

    def send_log(self, level: int, message: str) -> None:
        message_type = LOG_MESSAGE_TYPES.get(level, types.MessageType.Log)
        self.window_log_message(types.LogMessageParams(type=message_type, message=message))

    def show_warnings(self, warnings: list[str]) -> None:
        for warning in warnings:
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Warning, message=f"filescout: {warning}"))

    def supports_configuration_pull(self) -> bool:
        workspace = self.client_capabilities.workspace if self.client_capabilities else None
        return bool(workspace and workspace.configuration)

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
            watchers=[types.FileSystemWatcher(glob_pattern="**/*")])
        try:
            await self.client_register_capability_async(types.RegistrationParams(registrations=[
                types.Registration(id="filescout-watch", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                   register_options=options)]))
        except Exception as exc:  # the editor said no: the periodic reconcile covers us
            log.info("file watching not available: %s", exc)
            return False
        return True

    def send_status(self, status: IndexStatus) -> None:
        self.protocol.notify(Method.STATUS, status)


def translate_errors(handler: Handler) -> Handler:
    """Engine errors become JSON-RPC errors: -32602 names the bad field."""

    @functools.wraps(handler)
    async def wrapper(*args: Any) -> Any:
        try:
            return await handler(*args)
        except InvalidParams as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        except WorkspaceUnavailable as exc:
            raise JsonRpcException(message=str(exc), code=ErrorCode.WORKSPACE_UNAVAILABLE) from None
        except ReadOnly as exc:
            raise JsonRpcException(message=str(exc), code=ErrorCode.READ_ONLY) from None

    return wrapper  # type: ignore[return-value]


def no_arguments(command: str, args: tuple[Any, ...]) -> None:
    if args:
        raise InvalidParams(f"{command} takes no arguments, got {len(args)}")


def workspace_root(params: types.InitializeParams) -> Path | None:
    """The root the editor opened: rootUri, else the first workspace folder, else rootPath."""
    if params.root_uri:
        return uri_to_path(params.root_uri)
    if params.workspace_folders:
        if len(params.workspace_folders) > 1:
            log.info("several workspace folders; indexing the first (%s)",
                     params.workspace_folders[0].uri)
        return uri_to_path(params.workspace_folders[0].uri)
    if params.root_path:
        return Path(params.root_path)
    return None


def editor_settings(value: Any) -> dict[str, Any] | None:
    """Settings as editors send them: bare, or under a `filescout` section."""
    if not isinstance(value, dict):
        return None
    section = value.get("filescout", value)
    return section if isinstance(section, dict) else None


def create_server() -> FilescoutServer:
    server = FilescoutServer()

    @server.feature(types.INITIALIZE)
    async def initialize(ls: FilescoutServer, params: types.InitializeParams) -> None:
        try:
            root = workspace_root(params)
        except InvalidParams as exc:
            ls.startup_error = f"cannot use the workspace: {exc}"
            return
        if root is None:
            ls.startup_error = "the editor sent no workspace root (rootUri or workspaceFolders)"
            return
        try:
            hooks = Hooks(on_status=ls.send_status,
                          progress=functools.partial(WorkDoneProgress.create, ls))
            ls.engine = await Workspace.open(root, editor_settings(params.initialization_options),
                                             hooks=hooks)
        except WorkspaceUnavailable as exc:
            ls.startup_error = str(exc)
            log.error("%s", exc)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: FilescoutServer, params: types.InitializedParams) -> None:
        ls.initialized = True
        handler = logsetup.ForwardingHandler(ls.send_log, asyncio.get_running_loop())
        logging.getLogger("filescout").addHandler(handler)
        if ls.engine is None:
            ls.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error,
                message=f"filescout cannot index this workspace: {ls.startup_error}"))
            return
        engine = ls.engine
        logsetup.set_level(engine.settings.log_level)
        ls.show_warnings(engine.warnings)
        engine.start_indexing("index")
        watching = await ls.watch_files()
        interval = engine.settings.reconcile_interval
        if interval is None:
            interval = WATCHED_RECONCILE_SECONDS if watching else UNWATCHED_RECONCILE_SECONDS
        ls.background(engine.start_reconciling(interval))

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: FilescoutServer,
                                       params: types.DidChangeConfigurationParams) -> None:
        engine = ls.engine
        if engine is None:
            return
        settings = params.settings
        if settings is None and ls.supports_configuration_pull():
            (settings,) = await ls.workspace_configuration_async(types.ConfigurationParams(
                items=[types.ConfigurationItem(section="filescout")]))
        warnings, rescan = await engine.reconfigure(editor_settings(settings))
        logsetup.set_level(engine.settings.log_level)
        ls.show_warnings(warnings)
        if rescan:
            engine.start_indexing("index")

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: FilescoutServer, params: None) -> None:
        if ls.engine is not None:
            await ls.engine.close()
            ls.engine = None
        ls.startup_error = "the server is shutting down"

    @server.feature(Method.GET_FILES)
    @translate_errors
    async def get_files(ls: FilescoutServer, params: Any) -> Any:
        request: GetFilesParams = decode_params(params, GetFilesParams, Method.GET_FILES)
        engine = ls.require_engine()
        if request.partial_result_token is None:
            return await engine.files_page(request)
        async for batch in engine.stream_files(request):
            send_partial_result(ls, request.partial_result_token, batch)
        return []

    @server.feature(Method.FIND_RELEVANT)
    @translate_errors
    async def find_relevant(ls: FilescoutServer, params: Any) -> Any:
        request: FindRelevantParams = decode_params(params, FindRelevantParams,
                                                    Method.FIND_RELEVANT)
        engine = ls.require_engine()
        token = request.partial_result_token
        progress = ClientProgress(ls, request.work_done_token, "filescout: finding relevant files")
        streamed: list[str] = []
        try:
            async for update in engine.find_relevant_stream(request):
                if update.done:
                    paths = [item.path for item in update.items]
                    # The final answer repeats nothing already streamed (LSP partial results).
                    return update.result([] if token is not None and paths == streamed else None)
                progress.report(f"{update.stage}: {len(update.items)} files")
                if token is not None and update.items:
                    send_partial_result(ls, token, update.items)
                    streamed = [item.path for item in update.items]
        finally:
            progress.end()
        raise AssertionError("the relevance stages ended without an answer")

    @server.feature(Method.DID_ACCESS)
    async def did_access(ls: FilescoutServer, params: Any) -> None:
        try:
            request: DidAccessParams = decode_params(params, DidAccessParams, Method.DID_ACCESS)
            await ls.require_engine().touch(request.paths, weight=2.0)
        except (InvalidParams, JsonRpcException) as exc:  # a notification has no reply
            log.warning("%s ignored: %s", Method.DID_ACCESS, exc)

    def workspace_uris(ls: FilescoutServer, uris: list[str]) -> list[str]:
        """The URIs that name files inside the workspace (editors report others too)."""
        engine = ls.engine
        if engine is None:
            return []
        inside = []
        for uri in uris:
            try:
                if uri.startswith("file:") and to_relative(engine.root, uri, field="uri"):
                    inside.append(uri)
            except InvalidParams:
                continue
        return inside

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: FilescoutServer, params: types.DidOpenTextDocumentParams) -> None:
        if uris := workspace_uris(ls, [params.text_document.uri]):
            await ls.engine.touch(uris)  # type: ignore[union-attr]

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: FilescoutServer, params: types.DidChangeTextDocumentParams) -> None:
        uris = workspace_uris(ls, [params.text_document.uri])
        now = time.monotonic()
        if uris and now - ls._last_edit_access.get(uris[0], 0.0) > EDIT_ACCESS_INTERVAL:
            ls._last_edit_access[uris[0]] = now
            await ls.engine.touch(uris)  # type: ignore[union-attr]

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: FilescoutServer, params: types.DidSaveTextDocumentParams) -> None:
        if uris := workspace_uris(ls, [params.text_document.uri]):
            await ls.engine.refresh(uris)  # type: ignore[union-attr]
            await ls.engine.touch(uris)  # type: ignore[union-attr]

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(ls: FilescoutServer,
                                       params: types.DidChangeWatchedFilesParams) -> None:
        if uris := workspace_uris(ls, [change.uri for change in params.changes]):
            await ls.engine.refresh(uris)  # type: ignore[union-attr]

    @server.command(Command.REINDEX)
    @translate_errors
    async def reindex(ls: FilescoutServer, *args: Any) -> Any:
        no_arguments(Command.REINDEX, args)
        return await ls.require_engine().reindex()

    @server.command(Command.STATUS)
    @translate_errors
    async def status(ls: FilescoutServer, *args: Any) -> Any:
        no_arguments(Command.STATUS, args)
        return await ls.require_engine().status()

    @server.command(Command.ANNOTATE)
    @translate_errors
    async def annotate(ls: FilescoutServer, *args: Any) -> Any:
        if len(args) != 1:
            raise InvalidParams(f"{Command.ANNOTATE} takes one argument, {{paths, timeout?}}; "
                                f"got {len(args)}")
        request: AnnotateParams = decode_params(args[0], AnnotateParams, Command.ANNOTATE)
        return await ls.require_engine().annotate_now(request.paths, timeout=request.timeout)

    return server


def serve(tcp: str | None = None, log_level: str = "info") -> int:
    logsetup.configure(log_level)
    server = create_server()
    try:
        if tcp:
            host, _, port = tcp.rpartition(":")
            server.start_tcp(host or "127.0.0.1", int(port))
        else:
            server.start_io()
    finally:
        if server.engine is not None:  # the client vanished without shutdown
            server.engine.stop_threads()
    return 0
