"""End to end, awkward storage: file names that are not UTF-8, an index on a read-only file
system, an index on a full disk, an index folder or file the server may not write, an index
path that is not filescout's, a write-ahead log deleted under a running server. The CLI and the
server say what is wrong, in words that name the path, and answer with what the index holds;
none of them ends with a traceback, and none moves or writes a file of the workspace."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from filescout_protocol.types import ErrorCode
from harness import launch
from harness.support import (
    SAMPLE_BINARY,
    SAMPLE_FILES,
    SERVER_COMMAND,
    TestClient,
    as_dict,
    execute,
    file_item,
    get_files_streamed,
    make_workspace,
    query_db,
    start_client,
    stop_client,
    wait_for_indexing,
)
from mounts import Mounts, fill_workspace, mounts_under
from storage import tree_digest, without_file_access_override


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[Mounts]:
    yield from mounts_under(tmp_path)


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        launch.command(*args),
        env={**os.environ, "FILESCOUT_CACHE_DIR": "", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_raw_name(root: Path, name: bytes) -> None:
    fd = os.open(os.fsencode(root) + b"/" + name, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, b"print('odd name')\n")
    finally:
        os.close(fd)


@pytest.mark.parametrize("git", [True, False], ids=["git", "walk"])
def test_cli_indexes_past_names_that_are_not_utf8(tmp_path: Path, git: bool) -> None:
    root = make_workspace(tmp_path / "ws", git=git)
    write_raw_name(root, b"bad\xff.py")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    indexed = cli(env, "index", str(root))
    assert indexed.returncode == 0, indexed.stderr
    assert "bad\\xff.py" in indexed.stderr and "not valid UTF-8" in indexed.stderr
    assert "Traceback" not in indexed.stderr
    status = json.loads(cli(env, "status", str(root), "--json").stdout)
    assert status["files"] == len(SAMPLE_FILES) + len(SAMPLE_BINARY)
    assert status["skippedNames"] == 1


@pytest.mark.asyncio
async def test_server_reports_names_that_are_not_utf8_in_status(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=True)
    write_raw_name(root, b"caf\xe9.py")
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        batches, _ = await get_files_streamed(client, "names-1")
        assert sorted(item["path"] for batch in batches for item in batch) == sorted(SAMPLE_FILES)
        status = as_dict(await execute(client, "filescout.status"))
        assert status["skippedNames"] == 1 and status["lastError"] is None
        logged = "\n".join(message.message for message in client.log_messages)
        assert "caf\\xe9.py" in logged
    finally:
        await stop_client(client)


def test_cli_answers_from_an_index_on_a_read_only_file_system(tmp_path: Path, mounts: Mounts) -> None:
    root = make_workspace(tmp_path / "ws", git=True)
    store = mounts.tmpfs("store", "8m")
    db_path = store / "idx" / "index.sqlite3"
    env = {"FILESCOUT_DB_PATH": str(db_path)}
    assert cli(env, "index", str(root)).returncode == 0
    mounts.read_only(store)

    found = cli(env, "find", str(root), "shopping cart totals", "--no-refresh", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["items"][0]["path"] == "src/shop/cart.py"
    assert f"the index at {db_path} cannot be written (read-only file system)" in found.stderr
    listed = cli(env, "files", str(root))  # a refresh that cannot write answers all the same
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == len(SAMPLE_FILES)
    assert "another filescout process" not in listed.stderr
    status = json.loads(cli(env, "status", str(root), "--json").stdout)
    assert status["role"] == "reader" and status["writerPid"] is None
    for result in (found, listed):
        assert "Traceback" not in result.stderr


def test_cli_says_which_disk_is_full(tmp_path: Path, mounts: Mounts) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    store = mounts.tmpfs("store", "512k")
    db_path = store / "idx" / "index.sqlite3"
    env = {"FILESCOUT_DB_PATH": str(db_path)}
    assert cli(env, "index", str(root)).returncode == 0
    fill_workspace(root)

    indexed = cli(env, "index", str(root))
    assert indexed.returncode == 1
    assert f"the disk holding the index is full ({db_path})" in indexed.stderr
    assert "Traceback" not in indexed.stderr
    listed = cli(env, "files", str(root), "--no-refresh")
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == len(SAMPLE_FILES)


# -- where the index may be, and what its storage allows ------------------------------------


async def listed_paths(client: TestClient) -> set[str]:
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {"limit": 1000}))
    return {item["path"] for item in page["items"]}


async def db_path_of(client: TestClient) -> Path:
    return Path(as_dict(await execute(client, "filescout.status"))["dbPath"])


def shown(client: TestClient) -> list[str]:
    return [message.message for message in client.messages]


async def kill(client: TestClient) -> None:
    server = client._server
    assert server is not None
    server.kill()
    await server.wait()
    await client.stop()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("source", "target"),
    [("filescout.toml", "."), ("filescout.toml", ".git/index"), ("editor", "."), ("editor", ".git/index")],
)
async def test_an_index_path_into_the_workspace_moves_and_writes_nothing(
    tmp_path: Path, source: str, target: str
) -> None:
    root = make_workspace(tmp_path / "ws", git=True)
    options = None
    if source == "filescout.toml":
        (root / "filescout.toml").write_text(f'db_path = "{target}"\n')
    else:
        options = {"dbPath": target}
    (tmp_path / "cache").mkdir()
    before, around = tree_digest(root), sorted(tmp_path.iterdir())
    client = await start_client(root, tmp_path / "cache", init_options=options)
    try:
        await wait_for_indexing(client)
        assert set(SAMPLE_FILES) <= await listed_paths(client)
        assert (await db_path_of(client)).is_relative_to(tmp_path / "cache")
        said = "db_path ignored" if source == "filescout.toml" else "left untouched"
        assert len([message for message in shown(client) if said in message]) == 1, shown(client)
    finally:
        await stop_client(client)
    assert tree_digest(root) == before
    assert sorted(tmp_path.iterdir()) == around


async def index_then_stop(root: Path, cache: Path) -> Path:
    client = await start_client(root, cache)
    try:
        await wait_for_indexing(client)
        return await db_path_of(client)
    finally:
        await stop_client(client)


@pytest.mark.asyncio
@pytest.mark.parametrize("locked", ["folder", "file"])
async def test_an_index_it_may_not_write_is_served_as_it_is(tmp_path: Path, locked: str) -> None:
    """The cache folder at 0500 with the lock file left from the last run, or the index file at
    0400, for a server that file permissions apply to."""
    command = without_file_access_override(SERVER_COMMAND, tmp_path)
    root = make_workspace(tmp_path / "ws", git=False)
    db = await index_then_stop(root, tmp_path / "cache")
    assert db.with_name("index.sqlite3.lock").exists()
    locked_path = db.parent if locked == "folder" else db
    locked_path.chmod(0o500 if locked == "folder" else 0o400)
    try:
        client = await start_client(root, tmp_path / "cache", command=command)
        try:
            assert await listed_paths(client) == set(SAMPLE_FILES)
            status = as_dict(await execute(client, "filescout.status"))
            assert status["role"] == "reader" and status["writerPid"] is None
            said = [m for m in shown(client) if f"the index at {db} cannot be written" in m]
            assert len(said) == 1 and "permission denied" in said[0], shown(client)
            with pytest.raises(JsonRpcException) as refused:
                await execute(client, "filescout.reindex")
            assert refused.value.code == ErrorCode.READ_ONLY and "cannot be written" in str(refused.value)
        finally:
            await stop_client(client)
    finally:
        locked_path.chmod(0o700 if locked == "folder" else 0o600)


@pytest.mark.asyncio
async def test_a_deleted_log_keeps_no_other_process_out_and_loses_nothing(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    cache, env = tmp_path / "cache", {"FILESCOUT_TAKEOVER_INTERVAL": "0.2"}
    writer = await start_client(root, cache, env=env)
    await wait_for_indexing(writer)
    db = await db_path_of(writer)
    Path(f"{db}-wal").unlink()

    reader = await start_client(root, cache, env=env)
    try:
        assert await listed_paths(reader) == set(SAMPLE_FILES)
        assert as_dict(await execute(reader, "filescout.status"))["role"] == "reader"
        (root / "src" / "shop" / "orders.py").write_text('"""Orders: placing and cancelling them."""\n')
        await execute(writer, "filescout.reindex")
        for _ in range(500):  # what the writer writes now, the reader sees
            if await file_item(reader, "src/shop/orders.py") is not None:
                break
            await asyncio.sleep(0.02)
        assert await file_item(reader, "src/shop/orders.py") is not None
    finally:
        await stop_client(reader)
    await kill(writer)
    paths = {row[0] for row in query_db(db, "SELECT path FROM files")}
    assert paths >= {*SAMPLE_FILES, "src/shop/orders.py"}


@pytest.mark.asyncio
async def test_an_index_whose_log_was_deleted_before_a_kill_is_rebuilt_and_said(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    cache = tmp_path / "cache"
    first = await start_client(root, cache, env={"FILESCOUT_TAKEOVER_INTERVAL": "600"})
    await wait_for_indexing(first)
    db = await db_path_of(first)
    Path(f"{db}-wal").unlink()
    await kill(first)  # before it could notice: what its log held is gone

    second = await start_client(root, cache)
    try:
        await wait_for_indexing(second)
        lost = [m for m in shown(second) if "write-ahead log" in m and str(db) in m]
        assert len(lost) == 1 and "rebuilt" in lost[0], shown(second)
        assert await listed_paths(second) == set(SAMPLE_FILES)
    finally:
        await stop_client(second)


@pytest.mark.asyncio
async def test_a_reader_that_may_not_write_the_index_does_not_take_it_over(tmp_path: Path) -> None:
    command = without_file_access_override(SERVER_COMMAND, tmp_path)
    root = make_workspace(tmp_path / "ws", git=False)
    cache, env = tmp_path / "cache", {"FILESCOUT_TAKEOVER_INTERVAL": "0.2"}
    writer = await start_client(root, cache, env=env)
    await wait_for_indexing(writer)
    db = await db_path_of(writer)
    reader = await start_client(root, cache, env=env, command=command)
    try:
        db.chmod(0o400)  # from now on, only the writer's privileges can write it
        await stop_client(writer)
        said = f"the index at {db} cannot be written (permission denied)"
        for _ in range(500):
            if any(said in message for message in shown(reader)):
                break
            await asyncio.sleep(0.02)
        assert len([m for m in shown(reader) if said in m]) == 1, shown(reader)
        status = as_dict(await execute(reader, "filescout.status"))
        assert status["role"] == "reader" and status["writerPid"] is None
        assert await listed_paths(reader) == set(SAMPLE_FILES)
        with pytest.raises(JsonRpcException) as refused:
            await execute(reader, "filescout.reindex")
        assert refused.value.code == ErrorCode.READ_ONLY
    finally:
        await stop_client(reader)
        db.chmod(0o600)
