"""`filescout mcp` driven over stdio by the MCP SDK's own client."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from filescout.engine.prompt import estimate_tokens
from harness.fake_openai import Action, FakeOpenAI
from harness.mcp_client import mcp_session, text_of
from harness.support import (
    make_large_workspace,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
    wait_until,
)

READ_ONLY_TOOLS = {"find_relevant_files", "list_files", "index_status", "workspace_overview"}
WRITING_TOOLS = {"reindex_workspace", "annotate_files"}


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


ENGINE_NAMES = re.compile(r"scope\.|options\.|prompt\.tokens|useModel|orderBy|changedSince|tagsMatch")
"""How the engine's requests name what the tools take as arguments: never in a tool's error."""
ANNOTATED = ["src/shop/cart.py"]
BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("find_relevant_files", {"limit": 3}, "query"),
    ("find_relevant_files", {"query": 5}, "query"),
    ("find_relevant_files", {"query": "  "}, "query"),
    ("find_relevant_files", {"query": "cart", "limit": 0}, "limit"),
    ("find_relevant_files", {"query": "cart", "globs": "*.py"}, "globs"),
    ("find_relevant_files", {"query": "cart", "globs": ["../*.py"]}, "globs[0]"),
    ("find_relevant_files", {"query": "cart", "paths": ["../elsewhere"]}, "paths[0]"),
    ("find_relevant_files", {"query": "cart", "paths": ["src", "/etc"]}, "paths[1]"),
    ("find_relevant_files", {"query": "cart", "use_model": "yes"}, "use_model"),
    ("find_relevant_files", {"query": "cart", "prompt_tokens": 10}, "prompt_tokens"),
    ("find_relevant_files", {"query": "cart", "colour": "blue"}, "colour"),
    ("list_files", {"globs": ["../*.py"]}, "globs[0]"),
    ("list_files", {"paths": ["../elsewhere"]}, "paths[0]"),
    ("list_files", {"query": ""}, "query"),
    ("list_files", {"query": "!!!"}, "query"),
    ("list_files", {"tags": [""]}, "tags[0]"),
    ("list_files", {"kinds": ["spreadsheet"]}, "kinds[0]"),
    ("list_files", {"languages": [5]}, "languages[0]"),
    ("list_files", {"status": ["done"]}, "status[0]"),
    ("list_files", {"changed_since": -1}, "changed_since"),
    ("list_files", {"order_by": "size"}, "order_by"),
    ("list_files", {"order_by": "rank"}, "order_by"),
    ("list_files", {"limit": 0}, "limit"),
    ("list_files", {"cursor": "not-a-cursor"}, "cursor"),
    ("list_files", {"prompt_tokens": 10}, "prompt_tokens"),
    ("list_files", {"page": 2}, "page"),
    ("workspace_overview", {"tokens": 10}, "tokens"),
    ("workspace_overview", {"tokens": "many"}, "tokens"),
    ("workspace_overview", {"query": 5}, "query"),
    ("workspace_overview", {"globs": ["../*.py"]}, "globs[0]"),
    ("workspace_overview", {"paths": ["../elsewhere"]}, "paths[0]"),
    ("workspace_overview", {"depth": 2}, "depth"),
    ("index_status", {"verbose": True}, "verbose"),
    ("reindex_workspace", {"force": True}, "force"),
    ("annotate_files", {}, "paths"),
    ("annotate_files", {"paths": []}, "paths"),
    ("annotate_files", {"paths": ["../elsewhere.py"]}, "paths[0]"),
    ("annotate_files", {"paths": ["src/shop/cart.py", "nowhere.py"]}, "paths"),
    ("annotate_files", {"paths": ANNOTATED, "timeout": 0}, "timeout"),
    ("annotate_files", {"paths": ANNOTATED, "timeout": "soon"}, "timeout"),
]


def names(text: str, argument: str) -> bool:
    """Whether `text` names `argument` as a whole (`paths` is not named by `paths[0]`'s text)."""
    return re.search(rf"(?<![\w.]){re.escape(argument)}(?![\w\[])", text) is not None


async def test_bad_arguments_are_tool_errors_naming_the_argument(shop: Path, tmp_path: Path) -> None:
    """Every argument of every tool, given a bad value: the error names it as the tool does."""
    assert {tool for tool, _, _ in BAD_ARGUMENTS} == READ_ONLY_TOOLS | WRITING_TOOLS
    async with mcp_session(shop, tmp_path / "cache", tmp_path / "stderr") as session:
        by_path = await session.call_tool("list_files", {"limit": 1})
        cases = [
            *BAD_ARGUMENTS,  # a cursor of a listing in another order
            (
                "list_files",
                {"cursor": by_path.structured_content["nextCursor"], "order_by": "recent"},
                "cursor",
            ),
        ]
        for tool, arguments, named in cases:
            result = await session.call_tool(tool, arguments)
            text = text_of(result)
            assert result.is_error, (tool, arguments, text)
            assert text.startswith(f"invalid arguments for {tool}: "), (arguments, text)
            assert names(text, named), (tool, arguments, text)
            assert not ENGINE_NAMES.search(text), (tool, arguments, text)
        again = await session.call_tool("find_relevant_files", {"query": "cart"})  # still serving
        assert not again.is_error
    assert "Traceback" not in (tmp_path / "stderr").read_text()


def shown_paths(text: str) -> list[str]:
    """The files a prompt-ready block shows, in order: its `N. path` lines."""
    return [line.split(". ", 1)[1] for line in text.splitlines() if re.match(r"\d+\. ", line)]


async def until_annotated(session: Any, timeout: float = 60.0) -> None:
    """Wait until the index is idle with nothing left to annotate."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        status = (await session.call_tool("index_status", {})).structured_content
        if status["phase"] == "idle" and not {"pending", "stale"} & set(status["byStatus"]):
            return
        assert asyncio.get_running_loop().time() < deadline, f"still annotating: {status}"
        await asyncio.sleep(0.1)


async def test_prompt_tokens_bound_the_structured_content_too(shop: Path, tmp_path: Path) -> None:
    """The structured content carries the files the text shows, no more, and says how many
    were left out; a listing's next page starts with them."""
    async with mcp_session(shop, tmp_path / "cache", tmp_path / "stderr") as session:
        await until_annotated(session)  # the bound is only tested once summaries fill the lines
        question = {"query": "cart checkout payment refund discount", "limit": 20}
        whole = await session.call_tool("find_relevant_files", {**question, "prompt_tokens": 200_000})
        everything = [item["path"] for item in whole.structured_content["items"]]
        assert len(everything) >= 4 and whole.structured_content["leftOut"] == 0
        assert shown_paths(text_of(whole)) == everything
        cut = await session.call_tool("find_relevant_files", {**question, "prompt_tokens": 200})
        text, found = text_of(cut), cut.structured_content
        assert estimate_tokens(text) <= 200
        shown = [item["path"] for item in found["items"]]
        assert shown and shown == shown_paths(text) == everything[: len(shown)]
        assert found["leftOut"] == len(everything) - len(shown) > 0
        assert f"{found['leftOut']} more files did not fit in 200 tokens" in text
        assert "prompt" not in found  # the text block is the prompt; the structured content is data

        listing = await session.call_tool("list_files", {"prompt_tokens": 200_000})
        every_file = [item["path"] for item in listing.structured_content["items"]]
        assert listing.structured_content["leftOut"] == 0 and shown_paths(text_of(listing)) == every_file
        paged: list[str] = []
        left_out: list[int] = []
        arguments: dict[str, Any] = {"prompt_tokens": 200}
        while True:
            page = await session.call_tool("list_files", arguments)
            text, files = text_of(page), page.structured_content
            assert not page.is_error and estimate_tokens(text) <= 200, text
            assert [item["path"] for item in files["items"]] == shown_paths(text)
            paged += shown_paths(text)
            left_out.append(files["leftOut"])
            if files["leftOut"]:
                assert f"More files ({files['leftOut']} of this page did not fit in 200 tokens)" in text
            if not files["nextCursor"]:
                break
            arguments["cursor"] = files["nextCursor"]
        assert paged == every_file  # none skipped, none twice
        assert max(left_out) > 0


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
