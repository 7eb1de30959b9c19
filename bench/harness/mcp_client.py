"""`filescout mcp` driven by the official MCP SDK's client, as chat panels and agents drive it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from harness import launch


def mcp_env(cache: Path, **extra: str) -> dict[str, str]:
    """Only what the server needs from this environment (no model, no settings of the developer's),
    its index under `cache`, a reader that looks for the writer's lock every half second."""
    keep = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "PYTHONPATH") if name in os.environ}
    return {**keep, "XDG_CACHE_HOME": str(cache), "FILESCOUT_TAKEOVER_INTERVAL": "0.5", **extra}


@asynccontextmanager
async def mcp_session(root: Path, cache: Path, stderr: Path, **extra: str) -> AsyncIterator[ClientSession]:
    """An initialized session with a server on `root`; its stderr appended to `stderr`."""
    program, *arguments = launch.command("mcp", str(root))
    params = StdioServerParameters(command=program, args=arguments, env=mcp_env(cache, **extra))
    with stderr.open("a") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: Any) -> str:
    """A tool result's text blocks, joined."""
    return "\n".join(block.text for block in result.content if block.type == "text")
