"""End to end: the index damaged under a running server (data pages overwritten with garbage, the
header and schema intact; a table of the schema dropped). Every request keeps answering, the
editor is told once, the damaged file is moved aside and the index rebuilt; a restart finds a
sound index and moves nothing. A second server on the same index never moves the writer's file:
it says what it met and reads the rebuilt index once it is there."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from harness.support import (
    SAMPLE_BINARY,
    SAMPLE_FILES,
    TestClient,
    as_dict,
    ended,
    execute,
    make_workspace,
    progress_tokens,
    start_client,
    stop_client,
    wait_for_indexing,
    wait_until,
)
from index_damage import aside_copies, drop_table, make_readers_look_again, overwrite_pages

QUESTION = {"query": "where is the shopping cart discount applied", "limit": 3}
WORKSPACE_UNAVAILABLE = -32010


async def status_of(client: TestClient) -> dict[str, Any]:
    return as_dict(await execute(client, "filescout.status"))


async def answers_correctly(client: TestClient) -> None:
    """What a healthy index of the sample workspace answers, once its pass is over."""
    done: list[dict[str, Any]] = []

    async def idle() -> bool:
        status = await status_of(client)
        done[:] = [status]
        return status["phase"] == "idle" and status["byStatus"].get("annotated") == len(SAMPLE_FILES)

    for _ in range(600):
        if await idle():
            break
        await asyncio.sleep(0.1)
    assert done[0]["byStatus"] == {"annotated": len(SAMPLE_FILES), "skipped": len(SAMPLE_BINARY)}, done
    assert done[0]["lastError"] is None
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {}))
    assert sorted(item["path"] for item in page["items"]) == sorted(SAMPLE_FILES)
    found = as_dict(await client.protocol.send_request_async("files/findRelevant", QUESTION))
    assert found["items"][0]["path"] == "src/shop/cart.py"


def damage_said(client: TestClient) -> list[str]:
    return [message.message for message in client.messages if "damaged" in message.message]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "index" / "index.sqlite3"


@pytest.fixture
def env(db: Path) -> dict[str, str]:
    return {"FILESCOUT_DB_PATH": str(db), "FILESCOUT_TAKEOVER_INTERVAL": "0.2"}


@pytest.mark.parametrize("damage", ["pages", "dropped table"])
async def test_damage_under_a_running_server_is_said_once_and_rebuilt_while_it_answers(
    tmp_path: Path, db: Path, env: dict[str, str], damage: str
) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    client = await start_client(root, tmp_path / "cache", env=env)
    try:
        await wait_for_indexing(client)
        passes = len(progress_tokens(client, "filescout/index"))
        if damage == "pages":
            overwrite_pages(db)
            make_readers_look_again(db)
        else:
            drop_table(db, "files_fts")

        status, page, found, reindexed = await asyncio.gather(
            status_of(client),
            client.protocol.send_request_async("files/getFiles", {}),
            client.protocol.send_request_async("files/findRelevant", QUESTION),
            execute(client, "filescout.reindex"),
        )

        assert status["role"] == "writer"
        assert sorted(item["path"] for item in as_dict(page)["items"]) == sorted(SAMPLE_FILES)
        assert as_dict(found)["items"][0]["path"] == "src/shop/cart.py"
        assert as_dict(reindexed)["files"] == len(SAMPLE_FILES) + len(SAMPLE_BINARY)
        await wait_until(lambda: bool(damage_said(client)), message="the damage said")
        said = damage_said(client)
        assert len(said) == 1 and str(db) in said[0] and "rebuilt" in said[0], said
        assert aside_copies(db) == ["index.sqlite3.damaged"]
        await answers_correctly(client)
        rebuilds = progress_tokens(client, "filescout/index")[passes:]  # a pass with its progress
        assert len(rebuilds) == 1 and ended(client, rebuilds[0])
    finally:
        await stop_client(client)

    client = await start_client(root, tmp_path / "cache", env=env)
    try:
        await wait_for_indexing(client)
        await answers_correctly(client)
        await wait_until(
            lambda: any("quick check of the index: ok" in m.message for m in client.log_messages),
            message="the quick check after the first pass",
        )
        assert damage_said(client) == []
        assert aside_copies(db) == ["index.sqlite3.damaged"]
    finally:
        await stop_client(client)


async def test_a_second_server_leaves_the_writers_file_and_reads_the_rebuilt_one(
    tmp_path: Path, db: Path, env: dict[str, str]
) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    writer = await start_client(root, tmp_path / "cache", env=env)
    reader: TestClient | None = None
    try:
        await wait_for_indexing(writer)
        reader = await start_client(root, tmp_path / "cache", env=env)
        assert (await status_of(reader))["role"] == "reader"
        overwrite_pages(db)
        make_readers_look_again(db)

        with pytest.raises(JsonRpcException) as caught:
            await reader.protocol.send_request_async("files/getFiles", {})
        assert caught.value.code == WORKSPACE_UNAVAILABLE and "damaged" in caught.value.message
        assert f"pid {writer._server.pid}" in caught.value.message
        await wait_until(lambda: bool(damage_said(reader)), message="the reader saying what it met")
        assert aside_copies(db) == []  # the writer's file is the writer's to move

        await status_of(writer)  # the writer meets the damage and rebuilds
        await answers_correctly(writer)
        assert aside_copies(db) == ["index.sqlite3.damaged"]
        await answers_correctly(reader)
        assert (await status_of(reader))["role"] == "reader"
        assert len(damage_said(reader)) == 1 and len(damage_said(writer)) == 1
    finally:
        if reader is not None:
            await stop_client(reader)
        await stop_client(writer)
