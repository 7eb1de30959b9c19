"""Cancelled MCP tool calls, driven by the MCP SDK's own client: a client that gives up on a call
sends `notifications/cancelled`, and the server must stop that call and go on serving. A
cancellation that reaches the SDK as anything but the SDK's own (a new `CancelledError` in place
of the one its cancel scope delivered) ends the SDK's task group, and with it the server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession

from harness.mcp_client import mcp_session, text_of
from harness.procfs import command_line, descendants
from harness.support import make_workspace

CANCELLATIONS = 300
"""Per tool."""
CALLS: dict[str, dict[str, Any]] = {
    "find_relevant_files": {"query": "where is the shopping cart discount applied", "limit": 5},
    "list_files": {"limit": 5, "query": "cart"},
    "index_status": {},
    "reindex_workspace": {},
    "annotate_files": {"paths": ["src/shop/cart.py", "src/shop/payments/stripe_gateway.py"]},
}


def server_pids() -> list[int]:
    """The `filescout mcp` processes this test started."""
    return [
        pid
        for pid in descendants(os.getpid())[1:]
        if b"filescout\0mcp" in command_line(pid) or b"filescout mcp" in command_line(pid)
    ]


async def call_time(session: ClientSession, tool: str) -> float:
    """How long one call takes, uncancelled: the median of a few, after a first that warms up."""
    times = []
    for _ in range(6):
        started = time.perf_counter()
        result = await session.call_tool(tool, CALLS[tool])
        assert not result.is_error, text_of(result)
        times.append(time.perf_counter() - started)
    return statistics.median(times[1:])


async def cancel_calls(session: ClientSession, tool: str, span: float) -> int:
    """CANCELLATIONS calls of `tool`, each cancelled by the client after a delay spread over
    0 to `span` seconds (some before the request is written, most while the server runs it, at
    every step of it); how many of them had no answer yet when cancelled."""
    unanswered = 0
    for n in range(CANCELLATIONS):
        call = asyncio.ensure_future(session.call_tool(tool, CALLS[tool]))
        await asyncio.sleep(span * ((n * 37) % CANCELLATIONS) / CANCELLATIONS)  # 37: spread, not in order
        unanswered += not call.done()
        call.cancel()  # the SDK's client sends notifications/cancelled for a request it wrote
        with contextlib.suppress(asyncio.CancelledError):
            result = await call
            assert not result.is_error, text_of(result)
    return unanswered


async def test_cancelling_every_tool_many_times_leaves_the_server_serving(tmp_path: Path) -> None:
    shop = make_workspace(tmp_path / "ws", git=True)
    stderr = tmp_path / "stderr"
    others = set(server_pids())  # an earlier test's server may still be on its way out
    async with mcp_session(shop, tmp_path / "cache", stderr) as session:
        (pid,) = set(server_pids()) - others
        spans = {tool: 3 * await call_time(session, tool) + 0.002 for tool in CALLS}
        # Every tool at once, so cancellations of one land while the others run. A call takes
        # longer then than alone: delays up to three times its time alone reach its end.
        running = await asyncio.wait_for(
            asyncio.gather(*(cancel_calls(session, tool, spans[tool]) for tool in CALLS)), 120
        )
        assert all(count > 0 for count in running), dict(zip(CALLS, running, strict=True))
        found = await asyncio.wait_for(
            session.call_tool("find_relevant_files", CALLS["find_relevant_files"]), 30
        )
        assert not found.is_error, text_of(found)
        assert found.structured_content["items"][0]["path"] == "src/shop/cart.py"
        status = await asyncio.wait_for(session.call_tool("index_status", {}), 30)
        assert status.structured_content["files"] == 11
        assert set(server_pids()) - others == {pid}
    errors = stderr.read_text()
    assert "Traceback" not in errors and "BrokenResourceError" not in errors, errors[-3000:]
