"""`filescout mcp`: the engine as an MCP server on stdio, for chat panels and agents (Copilot
agent mode, Cursor, Claude Code, Zed, Continue, Neovim chat plugins).

It opens the workspace through the same engine and index as `filescout serve`: beside an
editor's server it takes the reader role and answers from the shared index (and takes over
when that server exits); alone, it indexes. The MCP SDK is imported only here, so the LSP
server does not pay for it at start-up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    ToolAnnotations,
)
from mcp.types import Tool as McpTool

from filescout import __version__
from filescout.core.errors import FilescoutError, InvalidParams, WorkspaceUnavailable
from filescout.core.records import ScanTotals
from filescout.door.server import Door
from filescout.engine import Workspace
from filescout.mcp.lines import checked_stdio
from filescout.mcp.tools import TOOL_SPECS, Answer, ToolSpec
from filescout.rpc.params import field_error
from filescout_protocol.tools import Tool

log = logging.getLogger(__name__)
T = TypeVar("T")

RECONCILE_SECONDS = 60
INSTRUCTIONS = (
    "filescout keeps an index of every file in this workspace with a short summary. Before "
    f"reading or changing code for a task, call {Tool.FIND_RELEVANT_FILES} with the user's "
    f"request to learn which files matter; {Tool.LIST_FILES} lists files with their summaries; "
    f"{Tool.WORKSPACE_OVERVIEW} gives the lay of the land: the workspace as an annotated tree."
)


def object_schema(cls: type[msgspec.Struct]) -> dict[str, Any]:
    """A Struct's JSON Schema with the Struct itself at the root, as MCP wants it (an object,
    not a `$ref`); the Structs it uses stay under `$defs`."""
    schema = msgspec.json.schema(cls)
    definitions: dict[str, Any] = schema["$defs"]
    root: dict[str, Any] = definitions.pop(schema["$ref"].rsplit("/", 1)[1])
    if definitions:
        root["$defs"] = definitions
    return root


def describe_tool(spec: ToolSpec) -> McpTool:
    hints = ToolAnnotations(
        title=spec.title,
        read_only_hint=spec.read_only,
        destructive_hint=False,
        idempotent_hint=spec.read_only,
        open_world_hint=False,
    )
    return McpTool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=object_schema(spec.input),
        output_schema=object_schema(spec.output),
        annotations=hints,
    )


class Interrupted(Exception):
    """The work of a call ended cancelled though the call was not: something it waited on
    was cancelled (a pass stopped as the index closed)."""


async def apart(work: Coroutine[Any, Any, T]) -> T:
    """`work`, run in a task of its own. The SDK's cancel scope knows its cancellation by the
    exception's message, and any other `CancelledError` out of a handler ends the SDK's task
    group and the server with it. Here the handler only ever raises the very cancellation the
    scope delivered (passed on to the work, again at each delivery, and waited out), and a
    cancellation the work raises of its own is `Interrupted`, an error of the call."""
    task = asyncio.ensure_future(work)
    cancellation: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            if cancellation is None:
                cancellation = exc
            task.cancel()
    if cancellation is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the caller gave up on it
        try:
            raise cancellation
        finally:
            cancellation = None  # no reference cycle through the traceback's frame
    if task.cancelled():
        raise Interrupted("the work it waited on was cancelled; try again")
    return task.result()


def tool_error(text: str) -> CallToolResult:
    """An error the calling model reads (and can correct), not a protocol error."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class McpFace:
    """The tools over one engine. A fresh index is scanned before tools answer from it."""

    def __init__(self, engine: Workspace, scanned: asyncio.Future[ScanTotals] | None) -> None:
        self._engine = engine
        self._scanned = scanned
        self._specs = {spec.name: spec for spec in TOOL_SPECS}
        self._tools = [describe_tool(spec) for spec in TOOL_SPECS]

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=self._tools)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        spec = self._specs.get(params.name)
        if spec is None:  # a protocol error, as MCP specifies for an unknown tool
            raise MCPError(
                INVALID_PARAMS, f"unknown tool {params.name!r}; the tools are {', '.join(self._specs)}"
            )
        try:
            args = msgspec.convert(params.arguments or {}, spec.input)
        except msgspec.ValidationError as exc:
            return tool_error(f"invalid arguments for {spec.name}: {field_error(exc)}")
        try:
            structured, text = await apart(self._answer(ctx, spec, args))
        except InvalidParams as exc:
            return tool_error(f"invalid arguments for {spec.name}: {spec.arguments(str(exc))}")
        except FilescoutError as exc:
            return tool_error(spec.arguments(str(exc)))
        except Interrupted as exc:
            log.warning("%s was interrupted: %s", spec.name, exc)
            return tool_error(f"{spec.name} was interrupted: {exc}")
        except Exception as exc:  # a defect: say so, keep serving
            log.exception("%s failed", spec.name)
            return tool_error(f"{spec.name} failed: {type(exc).__name__}: {exc}")
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=msgspec.to_builtins(structured)
        )

    async def _answer(self, ctx: ServerRequestContext[Any], spec: ToolSpec, args: Any) -> Answer:
        if spec.name != Tool.INDEX_STATUS:
            await self._ready(ctx)
        return await spec.run(self._engine, args, ctx.session.report_progress)

    async def _ready(self, ctx: ServerRequestContext[Any]) -> None:
        """Wait for the first scan of a workspace never indexed before (it is query-ready as
        soon as the scan is stored; summaries fill in afterwards)."""
        scanned = self._scanned
        if scanned is None or scanned.done():
            return
        await ctx.session.report_progress(0, None, "indexing the workspace for the first time")
        await asyncio.wait({scanned})
        if scanned.cancelled() or scanned.exception() is not None:
            self._scanned = None  # a later pass may still complete; answer from what there is
            raise WorkspaceUnavailable(
                "the first scan of this workspace did not finish"
                + (f": {scanned.exception()}" if not scanned.cancelled() else "; try again")
            )


async def run(root: Path) -> int:
    engine = await Workspace.open(root)
    reconciling: asyncio.Task[None] | None = None
    door: Door | None = None
    try:
        for warning in engine.warnings:
            log.warning("%s", warning)
        scanned = None
        if engine.role == "writer":
            never_scanned = (await engine.status()).last_scan is None
            pass_scanned = engine.start_indexing("index")
            scanned = pass_scanned if never_scanned else None
        # A reader that takes over later rescans too: there is no editor to report changes.
        reconciling = asyncio.create_task(engine.start_reconciling(RECONCILE_SECONDS))
        door = await Door.open(engine, engine.env)
        face = McpFace(engine, scanned)
        server: Server[Any] = Server(
            "filescout",
            version=__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=face.list_tools,
            on_call_tool=face.call_tool,
        )
        async with checked_stdio() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        if door is not None:
            await door.close()
        if reconciling is not None:
            reconciling.cancel()
        # A client may start a server per call: work this one leaves is finished in the background.
        await engine.close(hand_off=True)
    return 0


def serve(path: str, log_level: str = "warning") -> int:
    """Serve MCP on stdio until the client closes it."""
    from filescout import log as logsetup

    logsetup.configure(log_level)  # stderr; stdout carries the protocol
    return asyncio.run(run(Path(path)))
