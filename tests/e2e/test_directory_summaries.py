"""Directory summaries written by a model: over LSP (the real server, a pytest-lsp client, a local
fake model), files/getOverview shows the model's directory lines and filescout.status counts them;
and through the team's cache on a real PostgreSQL server, a second machine with the same tree
gets every directory summary without a model call."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from filescout.annotate.directories import SYSTEM_PROMPT
from filescout.annotate.team_cache import TABLE
from filescout.engine import Hooks, Workspace
from filescout_protocol.types import GetOverviewParams
from harness.fake_openai import FakeOpenAI
from harness.postgres import PostgresDatabase
from harness.support import (
    as_dict,
    execute,
    make_workspace,
    run_git,
    start_client,
    stop_client,
    wait_for_indexing,
)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def model(fake: FakeOpenAI) -> dict[str, Any]:
    return {
        "model": "test-model",
        "baseUrl": fake.base_url,
        "maxRetries": 0,
        "timeout": 10,
        "directorySummaries": True,
    }


def directory_calls(fake: FakeOpenAI) -> int:
    with fake.lock:
        return sum(1 for request in fake.requests if request.body["messages"][0]["content"] == SYSTEM_PROMPT)


async def test_get_overview_shows_the_models_directory_lines(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    client = await start_client(root, tmp_path / "cache", init_options={"model": model(fake)})
    try:
        await wait_for_indexing(client)
        deadline = time.monotonic() + 60
        while True:
            status = as_dict(await execute(client, "filescout.status"))["model"]
            if (
                status["state"] == "idle"
                and status["queuedFiles"] == 0
                and status.get("directoriesWaiting") == 0
            ):
                break
            assert time.monotonic() < deadline, status
            await asyncio.sleep(0.1)
        assert status["directorySummaries"] > 0 and directory_calls(fake) > 0
        result = as_dict(await client.protocol.send_request_async("files/getOverview", {"tokens": 4000}))
        entries = {entry["path"]: entry for entry in result["entries"]}
        assert entries["src/shop"]["summary"].startswith("Model summary of src/shop/.")
        assert entries["src/shop/payments"]["summary"].startswith("Model summary of src/shop/payments/.")
        assert entries["."]["summary"].startswith("Model summary of ./.")
        assert "  src/shop/ — Model summary of src/shop/. (python, 4 files)" in result["prompt"]
        assert result["prompt"].endswith("</filescout-overview>")
    finally:
        await stop_client(client)


# -- the team's cache ----------------------------------------------------------------------------


@asynccontextmanager
async def machine(root: Path, cache: Path, fake: FakeOpenAI, url: str) -> AsyncIterator[Workspace]:
    options = {"model": model(fake), "sharedCache": {"url": url, "timeout": 1.0}}
    engine = await Workspace.open(
        root, options, env={"FILESCOUT_CACHE_DIR": str(cache)}, hooks=Hooks(persistent=False)
    )
    try:
        engine.start_indexing("index")
        await asyncio.wait_for(engine.wait_idle(), 120)
        yield engine
    finally:
        await engine.close()


def directory_rows(db: PostgresDatabase) -> int:
    with db.connect() as connection:
        row = connection.execute(f"SELECT count(*) FROM {TABLE} WHERE annotator LIKE '%%/d1'").fetchone()
        return int(row[0])


async def test_directory_summaries_round_trip_through_the_team_cache(
    tmp_path: Path, fake: FakeOpenAI, pg_database
) -> None:
    first = make_workspace(tmp_path / "one" / "shop", git=True)
    run_git(first, "add", "-A")
    run_git(first, "commit", "-q", "-m", "everything")
    second = tmp_path / "elsewhere" / "shop-copy"
    subprocess.run(["git", "clone", "-q", str(first), str(second)], check=True, capture_output=True)

    async with machine(first, tmp_path / "cache-one", fake, pg_database.url) as one:
        written = directory_calls(fake)
        assert written > 0
        status = await one.status()
        assert status.model is not None and status.model.directories_waiting == 0
        shared = one._scheduler.model.shared
        assert shared is not None and shared.directories_stored == status.model.directory_summaries
        assert shared.stored > 0  # the files' entries, counted apart
        lines_one = [
            entry.summary
            for entry in (await one.overview(GetOverviewParams(tokens=4000))).entries
            if entry.type == "directory"
        ]
    assert directory_rows(pg_database) == status.model.directory_summaries

    async with machine(second, tmp_path / "cache-two", fake, pg_database.url) as two:
        assert directory_calls(fake) == written  # every directory summary came from the cache
        status_two = await two.status()
        assert status_two.model is not None
        assert status_two.model.directory_summaries == status.model.directory_summaries
        shared = two._scheduler.model.shared
        assert shared is not None and shared.directory_hits == status.model.directory_summaries
        lines_two = [
            entry.summary
            for entry in (await two.overview(GetOverviewParams(tokens=4000))).entries
            if entry.type == "directory"
        ]
    assert lines_two == lines_one and any(line.startswith("Model summary of ./") for line in lines_two)
