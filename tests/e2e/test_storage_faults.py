"""End to end, awkward storage: file names that are not UTF-8, an index on a read-only file
system, an index on a full disk. The CLI and the server say what is wrong, in words that name
the path, and answer with what the index holds; none of them ends with a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mounts import Mounts, fill_workspace, mounts_under
from support import (
    SAMPLE_BINARY,
    SAMPLE_FILES,
    as_dict,
    execute,
    get_files_streamed,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
)


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[Mounts]:
    yield from mounts_under(tmp_path)


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "filescout", *args],
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
