"""Directory summaries written by a model for the workspace overview, in process on a real SQLite
index with a local fake model: keys that survive a rename and change with what is below, children
before parents, what reaches the model (redacted, delimited), the budget, and privacy mode."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from filescout.annotate.directories import SYSTEM_PROMPT, DirectorySummarizer
from filescout.engine import Hooks, Workspace
from filescout.engine.directory_writer import DirectoryCounts, write_directory_summaries
from filescout.index.directory_summaries import directory_keys
from filescout.llm.client import Budget, BudgetSpent, ModelClient
from filescout_protocol.types import BudgetSettings, GetOverviewParams, ModelSettings
from harness.fake_openai import FakeOpenAI, Request
from harness.support import make_workspace

PLANTED_KEY = "sk-proj-PLANTEDabcdefghijklmnopqrstuvwxyz0123456789"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def options(fake: FakeOpenAI, *, directories: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "model": {
            "model": "test-model",
            "baseUrl": fake.base_url,
            "maxRetries": 0,
            "timeout": 10,
            "directorySummaries": directories,
        },
        **extra,
    }


async def opened(root: Path, cache: Path, settings: dict[str, Any]) -> Workspace:
    engine = await Workspace.open(
        root, settings, env={"FILESCOUT_CACHE_DIR": str(cache)}, hooks=Hooks(persistent=False)
    )
    engine.start_indexing("index")
    await asyncio.wait_for(engine.wait_idle(), 120)
    return engine


def directory_requests(fake: FakeOpenAI) -> list[Request]:
    return [request for request in fake.requests if request.body["messages"][0]["content"] == SYSTEM_PROMPT]


def asked_about(requests: list[Request]) -> list[str]:
    """The directories each request named, in the order they were asked."""
    return [
        line[4:].split(" (directory", 1)[0]
        for request in requests
        for line in request.body["messages"][1]["content"].splitlines()
        if line.startswith("### ")
    ]


# -- keys ------------------------------------------------------------------------------------


FILES = [
    ("README.md", "a" * 32),
    ("src/app/core.py", "b" * 32),
    ("src/app/views/home.py", "c" * 32),
    ("src/lib/util.py", "d" * 32),
    ("docs/guide.md", "e" * 32),
]


def test_a_renamed_directory_keeps_its_key_and_only_its_ancestors_change() -> None:
    keys = directory_keys(FILES)
    assert set(keys) == {"", "src", "src/app", "src/app/views", "src/lib", "docs"}
    assert len(set(keys.values())) == len(keys)
    renamed = directory_keys(
        sorted((path.replace("src/app/", "src/application/"), digest) for path, digest in FILES)
    )
    assert renamed["src/application"] == keys["src/app"]
    assert renamed["src/application/views"] == keys["src/app/views"]
    assert renamed["src/lib"] == keys["src/lib"] and renamed["docs"] == keys["docs"]
    assert renamed["src"] != keys["src"] and renamed[""] != keys[""]


def test_a_change_below_changes_the_directory_and_its_ancestors_only() -> None:
    keys = directory_keys(FILES)
    changed = directory_keys([(path, "f" * 32 if path.endswith("home.py") else d) for path, d in FILES])
    differs = {path for path in keys if keys[path] != changed[path]}
    assert differs == {"src/app/views", "src/app", "src", ""}
    assert directory_keys(reversed(FILES)) == keys  # the order files come in does not matter


# -- writing -----------------------------------------------------------------------------------


async def test_the_model_writes_directory_lines_children_first(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    engine = await opened(root, tmp_path / "cache", options(fake))
    try:
        requests = directory_requests(fake)
        asked = asked_about(requests)
        assert asked and len(asked) == len(set(asked))
        # Each directory's request comes after every request that named one of its subdirectories.
        order = {name: number for number, request in enumerate(requests) for name in asked_about([request])}
        for name, number in order.items():
            prefix = "" if name == "./" else name
            below = [other for other in order if other != name and other.startswith(prefix)]
            assert all(order[other] < number for other in below), (name, below)
        assert "./" in order and "src/shop/payments/" in order
        # The prompt holds the children's summaries, as data.
        shop = next(r for r in requests if "### src/shop/ (" in r.body["messages"][1]["content"])
        text = shop.body["messages"][1]["content"]
        assert "- cart.py: Model summary of src/shop/cart.py." in text
        assert "- payments/: Model summary of src/shop/payments/." in text
        assert text.count("<files>") == 1 and text.rstrip().endswith("</files>")

        status = await engine.status()
        assert status.model is not None
        assert (status.model.directory_summaries, status.model.directories_waiting) == (len(asked), 0)
        assert status.model.calls == fake.calls()  # counted like the files' calls

        found = await engine.overview(GetOverviewParams(tokens=4000))
        lines = {entry.path: entry.summary for entry in found.entries if entry.type == "directory"}
        assert lines["src/shop"].startswith("Model summary of src/shop/. (python")
        assert lines["."].startswith("Model summary of ./.")
        assert "Model summary of src/shop/payments/." in found.prompt
    finally:
        await engine.close()


async def test_a_rename_costs_nothing_below_and_a_change_reaches_the_ancestors(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    cache = tmp_path / "cache"
    engine = await opened(root, cache, options(fake))
    await engine.close()
    shutil.move(root / "src/shop/payments", root / "src/shop/billing")
    fake.requests.clear()
    engine = await opened(root, cache, options(fake))
    try:
        assert asked_about(directory_requests(fake)) == ["src/shop/", "./"]  # src/shop is one line: src/shop
        found = await engine.overview(GetOverviewParams(tokens=4000))
        lines = {entry.path: entry.summary for entry in found.entries}
        assert lines["src/shop/billing"].startswith("Model summary of src/shop/payments/.")

        fake.requests.clear()
        (root / "docs/guide/setup.md").write_text("# Setting up\n\nNow with containers.\n")
        await engine.refresh(["docs/guide/setup.md"])
        await asyncio.wait_for(engine.wait_idle(), 60)
        assert asked_about(directory_requests(fake)) == ["docs/guide/", "./"]
    finally:
        await engine.close()


async def test_what_reaches_the_model_is_redacted(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    (root / "config").mkdir()
    (root / "config" / f"{PLANTED_KEY}.py").write_text('"""Settings."""\n')

    def leaky(paths: list[str], request: Request) -> dict[str, Any]:
        notes = [{"path": path, "summary": f"Uses key {PLANTED_KEY}.", "tags": ["x"]} for path in paths]
        return {"files": notes}

    fake.answer = leaky
    engine = await opened(root, tmp_path / "cache", options(fake))
    try:
        requests = directory_requests(fake)
        assert any("config/" in request.raw for request in requests)
        assert all("PLANTEDabcdefghij" not in request.raw for request in requests)
        assert any("[REDACTED]" in request.raw for request in requests)
        found = await engine.overview(GetOverviewParams(tokens=4000))
        assert "Uses key [REDACTED]" in found.prompt and "Uses key sk-" not in found.prompt  # paths are not
    finally:
        await engine.close()


async def test_the_budget_stops_directory_summaries(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    engine = await opened(root, tmp_path / "cache", {})  # structural summaries only
    try:
        usage: list[int] = []

        async def sink(day: str, calls: int, failures: int, tokens_in: int, tokens_out: int) -> None:
            usage.append(tokens_in + tokens_out)

        settings = ModelSettings(model="test-model", base_url=fake.base_url, max_retries=0, concurrency=1)
        budget = Budget(BudgetSettings(daily_tokens=1500), [], sink)
        client = ModelClient(settings, budget)
        counts = DirectoryCounts()
        try:
            result = await write_directory_summaries(
                engine._index, DirectorySummarizer(client), None, counts, busy=lambda: False, gave_up=set()
            )
        finally:
            await client.close()
        assert isinstance(result.error, BudgetSpent) and result.more
        assert 0 < fake.calls() == len(usage)
        assert counts.summarized > 0 and counts.waiting > 0
        assert budget.tokens_today == sum(usage) <= 1500  # counted, and never past the cap

        none_left = Budget(BudgetSettings(daily_tokens=0), [], sink)
        client = ModelClient(settings, none_left)
        calls = fake.calls()
        try:
            result = await write_directory_summaries(
                engine._index,
                DirectorySummarizer(client),
                None,
                DirectoryCounts(),
                busy=lambda: False,
                gave_up=set(),
            )
        finally:
            await client.close()
        assert isinstance(result.error, BudgetSpent) and fake.calls() == calls
    finally:
        await engine.close()


async def test_privacy_mode_sends_nothing(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    engine = await opened(root, tmp_path / "cache", options(fake, privacyMode=True))
    try:
        assert fake.calls() == 0
        found = await engine.overview(GetOverviewParams(tokens=4000))
        assert "Model summary" not in found.prompt
        status = await engine.status()
        assert status.model is not None and status.model.directory_summaries is None
    finally:
        await engine.close()


async def test_without_the_setting_no_directory_is_asked_about(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    engine = await opened(root, tmp_path / "cache", options(fake, directories=False))
    try:
        assert fake.calls() > 0 and not directory_requests(fake)
        found = await engine.overview(GetOverviewParams(tokens=4000))
        shop = next(entry for entry in found.entries if entry.path == "src/shop")
        assert shop.summary.startswith("Model summary of src/shop/__init__.py.")  # rolled up from it
    finally:
        await engine.close()


async def test_a_pass_steps_aside_while_files_wait_for_the_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    engine = await opened(root, tmp_path / "cache", {})

    async def sink(*usage: Any) -> None:
        pass

    client = ModelClient(
        ModelSettings(model="test-model", base_url=fake.base_url), Budget(BudgetSettings(), [], sink)
    )
    try:
        counts = DirectoryCounts()
        result = await write_directory_summaries(
            engine._index, DirectorySummarizer(client), None, counts, busy=lambda: True, gave_up=set()
        )
        assert result.error is None and result.more and fake.calls() == 0
        assert counts.summarized == 0 and counts.waiting > 0
    finally:
        await client.close()
        await engine.close()
