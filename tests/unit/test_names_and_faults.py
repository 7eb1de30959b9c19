"""The engine in-process against awkward file systems: file names that are not UTF-8, an index on
a read-only file system, an index on a full disk. None of them may stop the engine: it indexes
what it can, serves what it has, and says what went wrong."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from filescout.core.errors import InvalidParams, ReadOnly, WorkspaceUnavailable
from filescout.engine import Hooks, Workspace
from filescout.index.annotations import Annotations
from filescout.index.catalogue import FileFilter, covering_prefixes
from filescout.scan.tree import printable, split_undecodable
from filescout_protocol.types import FindRelevantParams, GetFilesParams
from harness.support import SAMPLE_BINARY, SAMPLE_FILES, make_workspace, run_git
from mounts import Mounts, fill_workspace, mounts_under

BAD_NAMES = (b"bad\xff.py", b"caf\xe9/menu.py", b"src/shop/\xc3\x28.md")


def write_bytes_path(root: Path, relative: bytes, data: bytes) -> None:
    """Create a file by its raw name, as another program on the machine might have."""
    absolute = os.fsencode(root) + b"/" + relative
    os.makedirs(os.path.dirname(absolute), exist_ok=True)
    fd = os.open(absolute, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


async def listed(engine: Workspace) -> list[str]:
    return [item.path for batch in [b async for b in engine.stream_files(GetFilesParams())] for item in batch]


@pytest.mark.parametrize("git", [True, False], ids=["git", "walk"])
async def test_names_that_are_not_utf8_are_left_out_with_a_warning(
    tmp_path: Path, git: bool, caplog: pytest.LogCaptureFixture
) -> None:
    root = make_workspace(tmp_path / "ws", git=git)
    for name in BAD_NAMES:
        write_bytes_path(root, name, b"print('hello')\n")
    if git:
        run_git(root, "add", "-A")
        run_git(root, "commit", "-q", "-m", "odd names")
        write_bytes_path(root, b"untracked\xfe.txt", b"notes\n")  # listed by git as untracked
    caplog.set_level(logging.WARNING, logger="filescout")
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}, hooks=Hooks())
    try:
        await engine.start_indexing("index")
        await engine.wait_idle()
        status = await engine.status()
        assert engine.last_error is None
        assert status.phase == "idle"
        assert sorted(await listed(engine)) == sorted(SAMPLE_FILES)
        assert status.files == len(SAMPLE_FILES) + len(SAMPLE_BINARY)
        assert status.skipped_names == len(BAD_NAMES) + git
        warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
        named = [message for message in warnings if "not valid UTF-8" in message]
        assert len(named) == 1, warnings
        assert "bad\\xff.py" in named[0] and "caf\\xe9/menu.py" in named[0]

        # The next pass finds the same names: they are counted again, not logged again.
        caplog.clear()
        await engine.start_indexing("index")
        await engine.wait_idle()
        assert (await engine.status()).skipped_names == len(BAD_NAMES) + git
        assert not [record for record in caplog.records if "not valid UTF-8" in record.getMessage()]

        # Such a name handed to the engine directly is refused, naming the field.
        with pytest.raises(InvalidParams, match=r"paths\[0\].*not valid Unicode"):
            await engine.refresh([os.fsdecode(os.fsencode(root) + b"/bad\xff.py")])
        assert sorted(await listed(engine)) == sorted(SAMPLE_FILES)
    finally:
        await engine.close()


def test_printable_names_show_raw_bytes_as_escapes() -> None:
    assert printable(os.fsdecode(b"caf\xe9/menu.py")) == "caf\\xe9/menu.py"
    assert printable("café/ok.py") == "café/ok.py"
    good, bad = split_undecodable(["a.py", os.fsdecode(b"b\xff.py"), "c/é.py"])
    assert good == ["a.py", "c/é.py"] and bad == [os.fsdecode(b"b\xff.py")]


def test_covering_prefixes_drop_what_another_prefix_contains() -> None:
    assert covering_prefixes(["src/app", "src", "src-old", "docs/a/b", "docs/a", "x/y"]) == [
        "docs/a",
        "src",
        "src-old",
        "x/y",
    ]
    assert covering_prefixes([]) == []
    assert FileFilter(prefixes=tuple(f"d{index}" for index in range(2000))).sql("any")[0]


# -- storage faults ------------------------------------------------------------------------


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[Mounts]:
    yield from mounts_under(tmp_path)


def storage_env(tmp_path: Path, store: Path) -> dict[str, str]:
    return {
        "FILESCOUT_DB_PATH": str(store / "idx" / "index.sqlite3"),
        "FILESCOUT_CACHE_DIR": str(tmp_path / "c"),
    }


async def index_once(root: Path, env: dict[str, str]) -> None:
    engine = await Workspace.open(root, env=env, hooks=Hooks())
    try:
        await engine.start_indexing("index")
        await engine.wait_idle()
        assert engine.last_error is None
    finally:
        await engine.close()


def full_disk_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if "is full" in record.getMessage()]


async def test_an_index_on_a_read_only_file_system_is_served_without_the_lock(
    tmp_path: Path, mounts: Mounts
) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    store = mounts.tmpfs("store", "8m")
    env = storage_env(tmp_path, store)
    await index_once(root, env)
    mounts.read_only(store)

    engine = await Workspace.open(root, env=env, hooks=Hooks())
    try:
        db_path = env["FILESCOUT_DB_PATH"]
        assert engine.role == "reader" and engine.writer_pid is None
        assert engine.unwritable is not None and db_path in engine.unwritable
        assert "read-only file system" in engine.unwritable
        assert engine.unwritable in engine.warnings
        assert sorted(await listed(engine)) == sorted(SAMPLE_FILES)
        found = await engine.find_relevant(FindRelevantParams(query="shopping cart discount", limit=3))
        assert found.items[0].path == "src/shop/cart.py"
        status = await engine.status()
        assert status.role == "reader" and status.writer_pid is None
        assert status.files == len(SAMPLE_FILES) + len(SAMPLE_BINARY)
        with pytest.raises(ReadOnly, match="cannot be written"):
            await engine.reindex()
        await engine.touch(["src/shop/cart.py"])  # remembered in memory, never written
        assert engine.start_indexing("index").cancelled()
    finally:
        await engine.close()


async def test_no_index_on_a_read_only_file_system_is_a_clear_error(tmp_path: Path, mounts: Mounts) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    store = mounts.tmpfs("store", "1m")
    mounts.read_only(store)
    with pytest.raises(WorkspaceUnavailable, match="Read-only file system"):
        await Workspace.open(root, env=storage_env(tmp_path, store), hooks=Hooks())


async def test_a_full_disk_stops_indexing_says_so_once_and_keeps_serving(
    tmp_path: Path, mounts: Mounts, caplog: pytest.LogCaptureFixture
) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    store = mounts.tmpfs("store", "512k")
    env = storage_env(tmp_path, store)
    await index_once(root, env)
    fill_workspace(root)
    caplog.set_level(logging.INFO, logger="filescout")

    engine = await Workspace.open(root, env=env, hooks=Hooks())
    try:
        db_path = env["FILESCOUT_DB_PATH"]
        await asyncio.gather(engine.start_indexing("index"), return_exceptions=True)
        await engine.wait_idle()
        assert engine.phase == "failed"
        assert engine.last_error is not None and "full" in engine.last_error and db_path in engine.last_error
        status = await engine.status()
        assert status.last_error == engine.last_error
        assert sorted(await listed(engine)) == sorted(SAMPLE_FILES)  # what the index held before

        with pytest.raises(WorkspaceUnavailable, match="full"):
            await engine.reindex()
        new_file = root / "src" / "shop" / "orders.py"
        new_file.write_text('"""Orders."""\n' + "# order line\n" * 4000)
        await engine.refresh([str(new_file)])
        found = await engine.find_relevant(FindRelevantParams(query="shopping cart discount", limit=3))
        assert found.items[0].path == "src/shop/cart.py"

        said = full_disk_records(caplog)
        assert len(said) == 1, [record.getMessage() for record in said]
        assert said[0].levelno == logging.ERROR and said[0].exc_info is None
        assert not [record for record in caplog.records if record.exc_info], "no traceback"
    finally:
        await engine.close()


async def test_a_full_disk_while_annotating_is_recorded_and_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def disk_full(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Annotations, "save", disk_full)
    root = make_workspace(tmp_path / "ws", git=False)
    caplog.set_level(logging.INFO, logger="filescout")
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "c")}, hooks=Hooks())
    try:
        await engine.start_indexing("index")
        await engine.wait_idle()
        assert engine.last_error is not None and "full" in engine.last_error
        assert str((await engine.status()).db_path) in engine.last_error
        assert sorted(await listed(engine)) == sorted(SAMPLE_FILES)  # listed, still pending
        await engine.touch(["src/shop/cart.py"])  # another drain, the same fault
        await engine.wait_idle()
        said = full_disk_records(caplog)
        assert len(said) == 1 and said[0].exc_info is None
        assert not [record for record in caplog.records if record.exc_info], "no traceback"
    finally:
        await engine.close()
