"""Between the editor's terms and the engine's: the workspace root and settings an editor sends,
the URIs that name files of the workspace, and engine errors as JSON-RPC errors."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from filescout.core.errors import InvalidParams, ReadOnly, WorkspaceUnavailable
from filescout.core.paths import local_path, to_relative, uri_to_path
from filescout.engine import Workspace
from filescout_protocol.types import ErrorCode

log = logging.getLogger(__name__)

Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])


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

    return wrapper  # type: ignore[return-value]  # same signature, as functools.wraps says


def no_arguments(command: str, args: tuple[Any, ...]) -> None:
    """Commands that take nothing say so rather than ignore what they were given."""
    if args:
        raise InvalidParams(f"{command} takes no arguments, got {len(args)}")


def workspace_root(params: types.InitializeParams) -> Path | None:
    """The root the editor opened: rootUri, else the first workspace folder, else rootPath."""
    if params.root_uri:
        return uri_to_path(params.root_uri, field="rootUri")
    if params.workspace_folders:
        if len(params.workspace_folders) > 1:
            log.info("several workspace folders; indexing the first (%s)", params.workspace_folders[0].uri)
        return uri_to_path(params.workspace_folders[0].uri, field="workspaceFolders[0].uri")
    if params.root_path:
        return local_path(params.root_path, field="rootPath")
    return None


def editor_settings(value: Any) -> dict[str, Any] | None:
    """Settings as editors send them: bare, or under a `filescout` section."""
    if not isinstance(value, dict):
        return None
    section = value.get("filescout", value)
    return section if isinstance(section, dict) else None


def workspace_uris(engine: Workspace | None, uris: Iterable[str]) -> list[str]:
    """The URIs that name files inside the workspace (editors report others too)."""
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
