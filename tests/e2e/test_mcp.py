"""`filescout mcp` driven over stdio by the MCP SDK's own client."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from harness.fake_openai import Action, FakeOpenAI
from harness.support import (
    make_large_workspace,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
    wait_until,
)

READ_ONLY_TOOLS = {"find_relevant_files", "list_files", "index_status"}
WRITING_TOOLS = {"reindex_workspace", "annotate_files"}


def server_env(cache: Path, **extra: str) -> dict[str, str]:
    keep = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    return {**keep, "XDG_CACHE_HOME": str(cache), "FILESCOUT_TAKEOVER_INTERVAL": "0.5", **extra}


@asynccontextmanager
async def mcp_session(root: Path, cache: Path, stderr: Path, **env: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "filescout", "mcp", str(root)], env=server_env(cache, **env)
    )
    with stderr.open("w") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws", git=True)


async def test_tools_are_listed_with_schemas_and_hints(shop: Path, tmp_path: Path) -> None:
    async with mcp_session(shop, tmp_path / "cache", tmp_path / "stderr") as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == READ_ONLY_TOOLS | WRITING_TOOLS
    for name in READ_ONLY_TOOLS:
        assert tools[name].annotations.read_only_hint is True
    for name in WRITING_TOOLS:
        assert tools[name].annotations.read_only_hint is False
    find = tools["find_relevant_files"]
    assert find.input_schema["type"] == "object" and find.input_schema["required"] == ["query"]
    assert find.input_schema["properties"]["limit"]["maximum"] == 100
    assert find.output_schema["type"] == "object" and "items" in find.output_schema["properties"]


async def test_find_relevant_files_ranks_reports_progress_and_renders_a_block(
    shop: Path, tmp_path: Path
) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with mcp_session(shop, tmp_path / "cache", tmp_path / "stderr") as session:
        result = await session.call_tool(
            "find_relevant_files",
            {"query": "where is the shopping cart discount applied", "limit": 3},
            progress_callback=on_progress,
        )
        assert not result.is_error, text_of(result)
        items = result.structured_content["items"]
        assert items[0]["path"] == "src/shop/cart.py" and items[0]["reason"]
        text = text_of(result)
        assert text.startswith('<filescout-files count="') and text.endswith("</filescout-files>")
        assert "1. src/shop/cart.py" in text
        await wait_until(lambda: bool(progress), message="a progress notification")
        assert any(message and message.startswith("prefilter:") for _, _, message in progress)
        scoped = await session.call_tool("find_relevant_files", {"query": "cart checkout", "paths": ["web"]})
        assert [item["path"] for item in scoped.structured_content["items"]] == ["web/checkoutForm.ts"]
        listed = await session.call_tool("list_files", {"paths": ["src/shop/payments"], "limit": 1})
        assert [item["path"] for item in listed.structured_content["items"]] == [
            "src/shop/payments/__init__.py"
        ]
        assert "cursor" in text_of(listed) and listed.structured_content["nextCursor"]
        status = await session.call_tool("index_status", {})
        assert status.structured_content["role"] == "writer" and status.structured_content["files"] == 11


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"query": "cart", "limit": 0}, "limit"),
        ({"limit": 3}, "query"),
        ({"query": "cart", "colour": "blue"}, "colour"),
        ({"query": "cart", "paths": ["../elsewhere"]}, "paths[0]"),
        ({"query": "cart", "globs": ["../*.py"]}, "globs[0]"),
        ({"query": 5}, "query"),
    ],
)
async def test_bad_arguments_are_tool_errors_naming_them(
    shop: Path, tmp_path: Path, arguments: dict[str, Any], named: str
) -> None:
    async with mcp_session(shop, tmp_path / "cache", tmp_path / "stderr") as session:
        result = await session.call_tool("find_relevant_files", arguments)
        assert result.is_error and named in text_of(result), text_of(result)
        again = await session.call_tool("find_relevant_files", {"query": "cart"})  # still serving
        assert not again.is_error
    assert "Traceback" not in (tmp_path / "stderr").read_text()


async def test_cancelling_a_call_stops_model_calls_at_once(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 300)
    fake = FakeOpenAI().start()
    try:
        env = {"FILESCOUT_MODEL": "test-model", "OPENAI_BASE_URL": fake.base_url}
        async with mcp_session(root, tmp_path / "cache", tmp_path / "stderr", **env) as session:
            await session.call_tool("index_status", {})
            await wait_until(lambda: fake.calls("annotate") > 0, message="annotation calls", timeout=60)
            fake.per_kind["judge"] = Action(delay=3.0)
            fake.per_kind["tags"] = Action(delay=3.0)
            call = asyncio.ensure_future(
                session.call_tool("find_relevant_files", {"query": "unit sample helper value", "limit": 20})
            )
            await wait_until(lambda: fake.calls("judge") >= 1, message="the first judging call")
            await asyncio.sleep(0.5)  # the calls sent together with the first one have all arrived
            judged = fake.calls("judge")
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await asyncio.sleep(3.5)
            assert fake.calls("judge") == judged  # no chunk was sent after the cancellation
            after = await session.call_tool("index_status", {})  # the server carries on
            assert after.structured_content["files"] == 300
    finally:
        fake.stop()
    assert "Traceback" not in (tmp_path / "stderr").read_text()


async def test_beside_an_editor_server_it_reads_the_shared_index(shop: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    editor = await start_client(shop, cache)
    try:
        await wait_for_indexing(editor)
        async with mcp_session(shop, cache, tmp_path / "stderr") as session:
            status = await session.call_tool("index_status", {})
            assert status.structured_content["role"] == "reader"
            assert "Another filescout process" in text_of(status)
            found = await session.call_tool("find_relevant_files", {"query": "refund a charge"})
            assert found.structured_content["items"][0]["path"] == "src/shop/payments/stripe_gateway.py"
            refused = await session.call_tool("reindex_workspace", {})
            assert refused.is_error and "another filescout process" in text_of(refused)
    finally:
        await stop_client(editor)
