"""No planted secret reaches a client, on every face: the planted corpus (bench/harness/secrets_corpus.py)
served by `filescout serve` (getFiles and findRelevant streamed, and their prompt-ready blocks),
`filescout mcp` (each tool's text and structured content, through the MCP SDK's client) and the
CLI (`files`, `find`, text and `--json`); model-free, and with a model that writes secrets back
into summaries, tags and reasons. A file's path is shown as it is: a client must open it.
(findRelevant over the LSP face with the model on: tests/e2e/test_secrets_corpus.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from harness import launch, secrets_corpus
from harness.fake_openai import FakeOpenAI
from harness.mcp_client import mcp_session, text_of
from harness.support import as_dict, execute, get_files_streamed, start_client, stop_client, wait_for_indexing

QUESTIONS = secrets_corpus.QUESTIONS
PROMPT_TOKENS = 50_000
# the MCP server runs the code this test imports (mcp_session passes on little of the environment)
SAME_CODE = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}


def cli(cache: Path, *args: str) -> str:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "FILESCOUT_CACHE_DIR": ""}
    result = subprocess.run(launch.command(*args), env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def from_the_cli(cache: Path, root: Path, *refresh: str) -> list[str]:
    """What `files` and `find` print, as text and as JSON."""
    printed = [cli(cache, "files", str(root), *refresh), cli(cache, "files", str(root), "--json", *refresh)]
    for question in QUESTIONS:
        for form in ((), ("--json",)):
            printed.append(cli(cache, "find", str(root), question, "--limit", "60", *form, *refresh))
    return printed


async def from_mcp(session: Any, readable: list[str]) -> list[str]:
    """Each tool's text and structured content."""
    results = [
        await session.call_tool("list_files", {"limit": 1000, "prompt_tokens": 200_000}),
        await session.call_tool("list_files", {"query": "token password key secret", "limit": 1000}),
        await session.call_tool("annotate_files", {"paths": readable[:100], "timeout": 60}),
        await session.call_tool("index_status", {}),
    ]
    for question in QUESTIONS:
        results.append(
            await session.call_tool(
                "find_relevant_files", {"query": question, "limit": 100, "prompt_tokens": PROMPT_TOKENS}
            )
        )
    for result in results:
        assert not result.is_error, text_of(result)
    return [text for result in results for text in (text_of(result), json.dumps(result.structured_content))]


def readable_files() -> list[str]:
    return sorted(set(secrets_corpus.files()) - secrets_corpus.sensitive_files())


def assert_nothing_leaked(face: str, received: list[str]) -> None:
    text = "\n".join(received)
    assert secrets_corpus.leaked_to_client(text) == [], face
    assert "[REDACTED]" in text, face  # there was something to redact


async def test_every_face_model_free(tmp_path: Path) -> None:
    root = secrets_corpus.write_workspace(tmp_path / "ws")
    cache = tmp_path / "cache"
    cli(cache, "index", str(root))
    assert_nothing_leaked("cli", from_the_cli(cache, root, "--no-refresh"))

    async with mcp_session(root, cache, tmp_path / "stderr", **SAME_CODE) as session:
        assert_nothing_leaked("mcp", await from_mcp(session, readable_files()))

    client = await start_client(root, cache)
    received: list[Any] = []
    try:
        await wait_for_indexing(client)
        batches, result = await get_files_streamed(client, "files", batchSize=25)
        received += [as_dict(batches), as_dict(result)]
        page = await client.protocol.send_request_async(
            "files/getFiles", {"limit": 10_000, "prompt": {"tokens": 200_000}}
        )
        received.append(as_dict(page))
        for number, question in enumerate(QUESTIONS):
            token = f"question-{number}"
            answer = await client.protocol.send_request_async(
                "files/findRelevant",
                {
                    "query": question,
                    "limit": 60,
                    "partialResultToken": token,
                    "prompt": {"tokens": PROMPT_TOKENS},
                },
            )
            received += [as_dict(client.partial_results.get(token, [])), as_dict(answer)]
        received.append(as_dict(await execute(client, "filescout.status")))
    finally:
        await stop_client(client)
    assert {item["path"] for batch in received[0] for item in batch} == set(secrets_corpus.files())
    assert_nothing_leaked("lsp", [json.dumps(value) for value in received])


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


async def test_what_a_model_wrote_is_redacted_on_every_face(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = secrets_corpus.write_workspace(tmp_path / "ws")
    cache = tmp_path / "cache"
    secrets_corpus.echoing_secrets(fake, quiet=set())
    model = {"FILESCOUT_MODEL": "test-model", "OPENAI_BASE_URL": fake.base_url, **SAME_CODE}
    async with mcp_session(root, cache, tmp_path / "stderr", **model) as session:
        deadline = time.monotonic() + 120
        while True:  # until the model has annotated what it will
            status = (await session.call_tool("index_status", {})).structured_content
            if status["model"]["state"] == "idle" and status["model"]["queuedFiles"] == 0:
                break
            assert time.monotonic() < deadline, status
            await asyncio.sleep(0.2)
        received = await from_mcp(session, readable_files())
    assert fake.calls("annotate") and fake.calls("judge")
    assert any("It sets password = " in text for text in received)  # the model's summaries are shown
    assert_nothing_leaked("mcp", received)
    # the index as the model left it, shown by the CLI without a rescan
    printed = from_the_cli(cache, root, "--no-refresh")
    assert any("It sets password = " in text for text in printed)
    assert_nothing_leaked("cli", printed)
