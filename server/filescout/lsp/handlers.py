"""The LSP methods and commands filescout answers. Each handler decodes its params into a
protocol Struct, makes one call on the engine, and encodes the answer; `register` puts them all
on a server, so this module is the one list of what the server speaks."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from filescout import log as logsetup
from filescout.core.errors import InvalidParams, WorkspaceUnavailable
from filescout.door.server import Door
from filescout.engine import Hooks, Workspace
from filescout.lsp.partial_results import stream_batches, stream_relevant
from filescout.lsp.progress import ClientProgress, WorkDoneProgress

# At run time, not only for type checking: pygls reads command handlers' hints.
from filescout.lsp.server import FilescoutServer
from filescout.lsp.translate import (
    editor_settings,
    no_arguments,
    translate_errors,
    workspace_root,
    workspace_uris,
)
from filescout.rpc.params import decode_params
from filescout_protocol.types import (
    AnnotateParams,
    Command,
    DidAccessParams,
    FindRelevantParams,
    GetFilesParams,
    GetOverviewParams,
    Method,
)

log = logging.getLogger(__name__)

WATCHED_RECONCILE_SECONDS = 600
UNWATCHED_RECONCILE_SECONDS = 60


def engine_hooks(ls: FilescoutServer) -> Hooks:
    """Status notifications, messages and work-done progress: how the engine reaches the editor."""
    return Hooks(
        on_status=ls.send_status,
        on_warning=lambda message: ls.show_warnings([message]),
        progress=functools.partial(WorkDoneProgress.create, ls),
    )


def reconcile_interval(configured: float | None, watching: bool) -> float:
    """How often to rescan: rarely when the editor reports changes, often when it cannot."""
    if configured is not None:
        return configured
    return WATCHED_RECONCILE_SECONDS if watching else UNWATCHED_RECONCILE_SECONDS


# Lifecycle


async def initialize(ls: FilescoutServer, params: types.InitializeParams) -> None:
    try:
        await open_workspace(ls, params)
    finally:
        ls.initialize_done.set()


async def open_workspace(ls: FilescoutServer, params: types.InitializeParams) -> None:
    try:
        root = workspace_root(params)
    except InvalidParams as exc:
        ls.startup_error = f"cannot use the workspace: {exc}"
        return
    if root is None:
        ls.startup_error = "the editor sent no workspace root (rootUri or workspaceFolders)"
        return
    try:
        ls.engine = await Workspace.open(
            root, editor_settings(params.initialization_options), hooks=engine_hooks(ls)
        )
    except WorkspaceUnavailable as exc:
        ls.startup_error = str(exc)
        log.error("%s", exc)


async def initialized(ls: FilescoutServer, params: types.InitializedParams) -> None:
    await ls.initialize_done.wait()
    ls.initialized = True
    ls.forward_logs(asyncio.get_running_loop())
    engine = ls.engine
    if engine is None:
        ls.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Error,
                message=f"filescout cannot index this workspace: {ls.startup_error}",
            )
        )
        return
    logsetup.set_level(engine.settings.log_level)
    ls.show_warnings(engine.warnings)
    engine.start_indexing("index")
    ls.door = await Door.open(engine, engine.env)
    watching = await ls.watch_files()
    ls.background(engine.start_reconciling(reconcile_interval(engine.settings.reconcile_interval, watching)))


async def did_change_configuration(ls: FilescoutServer, params: types.DidChangeConfigurationParams) -> None:
    engine = ls.engine
    if engine is None:
        return
    settings = params.settings
    if settings is None and ls.supports_configuration_pull():
        (settings,) = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="filescout")])
        )
    warnings, rescan = await engine.reconfigure(editor_settings(settings))
    logsetup.set_level(engine.settings.log_level)
    ls.show_warnings(warnings)
    if rescan:
        engine.start_indexing("index")


async def shutdown(ls: FilescoutServer, params: None) -> None:
    if ls.door is not None:
        await ls.door.close()
        ls.door = None
    if ls.engine is not None:
        await ls.engine.close()
        ls.engine = None
    ls.startup_error = "the server is shutting down"


# filescout's own methods


@translate_errors
async def get_files(ls: FilescoutServer, params: Any) -> Any:
    request: GetFilesParams = decode_params(params, GetFilesParams, Method.GET_FILES)
    engine = ls.require_engine()
    if request.partial_result_token is None:
        return await engine.files_page(request)
    return await stream_batches(ls, request.partial_result_token, engine.stream_files(request))


@translate_errors
async def find_relevant(ls: FilescoutServer, params: Any) -> Any:
    request: FindRelevantParams = decode_params(params, FindRelevantParams, Method.FIND_RELEVANT)
    engine = ls.require_engine()
    progress = ClientProgress(ls, request.work_done_token, "filescout: finding relevant files")
    try:
        return await stream_relevant(
            ls, request.partial_result_token, engine.find_relevant_stream(request), progress
        )
    finally:
        progress.end()


@translate_errors
async def get_overview(ls: FilescoutServer, params: Any) -> Any:
    request: GetOverviewParams = decode_params(params, GetOverviewParams, Method.GET_OVERVIEW)
    return await ls.require_engine().overview(request)


async def did_access(ls: FilescoutServer, params: Any) -> None:
    try:
        request: DidAccessParams = decode_params(params, DidAccessParams, Method.DID_ACCESS)
        await ls.require_engine().touch(request.paths, weight=2.0)
    except (InvalidParams, JsonRpcException) as exc:  # a notification has no reply
        log.warning("%s ignored: %s", Method.DID_ACCESS, exc)


# Document sync: opening, editing and saving are accesses; saves and watched changes rescan


async def did_open(ls: FilescoutServer, params: types.DidOpenTextDocumentParams) -> None:
    if (engine := ls.engine) and (uris := workspace_uris(engine, [params.text_document.uri])):
        await engine.touch(uris)


async def did_change(ls: FilescoutServer, params: types.DidChangeTextDocumentParams) -> None:
    if (
        (engine := ls.engine)
        and (uris := workspace_uris(engine, [params.text_document.uri]))
        and ls.edit_counts_as_access(uris[0])
    ):
        await engine.touch(uris)


async def did_save(ls: FilescoutServer, params: types.DidSaveTextDocumentParams) -> None:
    if (engine := ls.engine) and (uris := workspace_uris(engine, [params.text_document.uri])):
        await engine.refresh(uris)
        await engine.touch(uris)


async def did_change_watched_files(ls: FilescoutServer, params: types.DidChangeWatchedFilesParams) -> None:
    changed = [change.uri for change in params.changes]
    if (engine := ls.engine) and (uris := workspace_uris(engine, changed)):
        await engine.refresh(uris)


# Commands


@translate_errors
async def reindex(ls: FilescoutServer, *args: Any) -> Any:
    no_arguments(Command.REINDEX, args)
    return await ls.require_engine().reindex()


@translate_errors
async def status(ls: FilescoutServer, *args: Any) -> Any:
    no_arguments(Command.STATUS, args)
    return await ls.require_engine().status()


@translate_errors
async def annotate(ls: FilescoutServer, *args: Any) -> Any:
    if len(args) != 1:
        raise InvalidParams(f"{Command.ANNOTATE} takes one argument, {{paths, timeout?}}; got {len(args)}")
    request: AnnotateParams = decode_params(args[0], AnnotateParams, Command.ANNOTATE)
    return await ls.require_engine().annotate_now(request.paths, timeout=request.timeout)


FEATURES: tuple[tuple[str, Callable[..., Any]], ...] = (
    (types.INITIALIZE, initialize),
    (types.INITIALIZED, initialized),
    (types.WORKSPACE_DID_CHANGE_CONFIGURATION, did_change_configuration),
    (types.SHUTDOWN, shutdown),
    (Method.GET_FILES, get_files),
    (Method.FIND_RELEVANT, find_relevant),
    (Method.DID_ACCESS, did_access),
    (Method.GET_OVERVIEW, get_overview),
    (types.TEXT_DOCUMENT_DID_OPEN, did_open),
    (types.TEXT_DOCUMENT_DID_CHANGE, did_change),
    (types.TEXT_DOCUMENT_DID_SAVE, did_save),
    (types.WORKSPACE_DID_CHANGE_WATCHED_FILES, did_change_watched_files),
)
COMMANDS: tuple[tuple[str, Callable[..., Any]], ...] = (
    (Command.REINDEX, reindex),
    (Command.STATUS, status),
    (Command.ANNOTATE, annotate),
)


def register(server: FilescoutServer) -> None:
    """Put every method and command on the server (pygls passes it to each as `ls`)."""
    for method, handler in FEATURES:
        server.feature(method)(handler)
    for command, handler in COMMANDS:
        server.command(command)(handler)
