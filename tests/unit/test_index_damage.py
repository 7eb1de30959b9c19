"""The engine in-process on an index damaged underneath it: data pages overwritten with garbage
(the header and schema intact), or a table of the schema dropped. The damage is found at open or
by whichever statement meets it, said once, the damaged file is moved aside, and the index is
rebuilt from the workspace while every operation keeps answering. SQLite's quick check, once the
first pass is over, finds what no operation reads. A repair that cannot be done is said once, and
every operation answers why. A second process on the same index never moves the writer's file: it
reads the rebuilt one once it is there."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from filescout.core.errors import WorkspaceUnavailable
from filescout.engine import Hooks, Workspace
from filescout.engine.faults import index_damage
from filescout_protocol.types import (
    FindRelevantParams,
    FindRelevantResult,
    GetFilesPage,
    GetFilesParams,
    ReindexResult,
    StatusResult,
)
from harness.support import SAMPLE_BINARY, SAMPLE_FILES, make_workspace
from index_damage import aside_copies, drop_table, make_readers_look_again, overwrite_pages
from mounts import Mounts, mounts_under

QUESTION = FindRelevantParams(query="where is the shopping cart discount applied", limit=3)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"FILESCOUT_DB_PATH": str(tmp_path / "index" / "index.sqlite3")}


@pytest.fixture
def db(env: dict[str, str]) -> Path:
    return Path(env["FILESCOUT_DB_PATH"])


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws", git=False)


async def open_indexed(root: Path, env: dict[str, str]) -> Workspace:
    engine = await Workspace.open(root, env=env, hooks=Hooks())
    engine.start_indexing("index")
    await engine.wait_idle()
    return engine


@pytest_asyncio.fixture
async def indexed(root: Path, env: dict[str, str]) -> AsyncIterator[Workspace]:
    engine = await open_indexed(root, env)
    try:
        yield engine
    finally:
        await engine.close()


async def listed(engine: Workspace) -> list[str]:
    return [item.path for batch in [b async for b in engine.stream_files(GetFilesParams())] for item in batch]


def rebuilt_said(caplog: pytest.LogCaptureFixture, engine: Workspace | None = None) -> list[str]:
    """What the user is told of a rebuild: the warnings logged while serving, and those found
    at open, which the engine hands its face to show (`Workspace.warnings`)."""
    logged = [
        record.getMessage()
        for record in caplog.records
        if record.levelno >= logging.WARNING and "rebuil" in record.getMessage()
    ]
    return logged + [warning for warning in (engine.warnings if engine else []) if "rebuil" in warning]


async def answers_correctly(engine: Workspace) -> None:
    """What a healthy index of the sample workspace answers."""
    await engine.wait_idle()
    assert sorted(await listed(engine)) == sorted(SAMPLE_FILES)
    status = await engine.status()
    assert status.by_status == {"annotated": len(SAMPLE_FILES), "skipped": len(SAMPLE_BINARY)}
    assert status.phase == "idle" and status.last_error is None
    assert (await engine.find_relevant(QUESTION)).items[0].path == "src/shop/cart.py"


async def every_operation_at_once(
    engine: Workspace,
) -> tuple[StatusResult, GetFilesPage, FindRelevantResult, ReindexResult]:
    """status, getFiles, findRelevant and reindex side by side, as an editor may send them."""
    return await asyncio.gather(
        engine.status(),
        engine.files_page(GetFilesParams(limit=100)),
        engine.find_relevant(QUESTION),
        engine.reindex(),
    )


async def test_pages_damaged_while_serving_are_said_once_moved_aside_and_rebuilt(
    indexed: Workspace, db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="filescout")
    overwrite_pages(db)
    make_readers_look_again(db)

    status, page, found, reindexed = await every_operation_at_once(indexed)

    assert status.role == "writer"
    assert sorted(item.path for item in page.items) == sorted(SAMPLE_FILES)
    assert found.items[0].path == "src/shop/cart.py"
    assert reindexed.files == len(SAMPLE_FILES) + len(SAMPLE_BINARY)
    said = rebuilt_said(caplog)
    assert len(said) == 1, said
    assert str(db) in said[0] and "damaged" in said[0]
    assert len(aside_copies(db)) == 1
    await answers_correctly(indexed)


async def test_a_table_dropped_while_serving_is_found_by_the_question_that_needs_it(
    indexed: Workspace, db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="filescout")
    drop_table(db, "files_fts")

    found = await indexed.find_relevant(QUESTION)

    assert found.items[0].path == "src/shop/cart.py"
    said = rebuilt_said(caplog)
    assert len(said) == 1 and "files_fts" in said[0], said
    assert len(aside_copies(db)) == 1
    await answers_correctly(indexed)


@pytest.mark.parametrize("damage", ["pages", "dropped table"])
async def test_damage_done_while_closed_is_rebuilt_at_the_next_open_and_only_then(
    root: Path, env: dict[str, str], db: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    await (await open_indexed(root, env)).close()
    if damage == "pages":
        overwrite_pages(db)
    else:
        drop_table(db, "files_fts")
    caplog.set_level(logging.WARNING, logger="filescout")

    engine = await Workspace.open(root, env=env, hooks=Hooks())
    try:
        engine.start_indexing("index")
        # Each answers (an index found damaged at open is new: it answers as its pass fills it).
        status, _, _, reindexed = await every_operation_at_once(engine)
        assert status.role == "writer"
        assert reindexed.files == len(SAMPLE_FILES) + len(SAMPLE_BINARY)
        await answers_correctly(engine)
    finally:
        await engine.close()
    assert len(rebuilt_said(caplog, engine)) == 1, rebuilt_said(caplog, engine)
    assert len(aside_copies(db)) == 1

    caplog.clear()
    engine = await open_indexed(root, env)  # the rebuilt index is sound: nothing moves again
    try:
        await answers_correctly(engine)
        await engine._repair.checked()  # the check after the first pass found nothing
    finally:
        await engine.close()
    assert rebuilt_said(caplog, engine) == []
    assert len(aside_copies(db)) == 1


async def test_damage_no_operation_reads_is_found_by_the_check_after_the_first_pass(
    root: Path, env: dict[str, str], db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await (await open_indexed(root, env)).close()
    overwrite_pages(db, ["definitions", "definitions_fts_data", "definitions_fts_idx"])
    caplog.set_level(logging.WARNING, logger="filescout")

    engine = await open_indexed(root, env)
    try:
        deadline = time.monotonic() + 30
        while not aside_copies(db):
            assert time.monotonic() < deadline, "the damage was never found"
            await asyncio.sleep(0.05)
        await answers_correctly(engine)
    finally:
        await engine.close()
    said = rebuilt_said(caplog)
    assert len(said) == 1 and "damaged" in said[0], said


async def test_a_reader_never_moves_the_writers_file_and_reads_the_rebuilt_one(
    indexed: Workspace, root: Path, env: dict[str, str], db: Path
) -> None:
    reader = await Workspace.open(root, env=env, hooks=Hooks())
    try:
        assert reader.role == "reader"
        assert sorted(await listed(reader)) == sorted(SAMPLE_FILES)
        overwrite_pages(db)
        make_readers_look_again(db)

        with pytest.raises(WorkspaceUnavailable, match="damaged"):
            await reader.files_page(GetFilesParams())
        with pytest.raises(WorkspaceUnavailable, match="damaged"):
            await reader.status()
        assert aside_copies(db) == []  # the writer's file is the writer's to move

        await indexed.status()  # the writer meets the damage and rebuilds
        await answers_correctly(indexed)
        assert len(aside_copies(db)) == 1
        assert sorted(await listed(reader)) == sorted(SAMPLE_FILES)
        assert (await reader.find_relevant(QUESTION)).items[0].path == "src/shop/cart.py"
        assert (await reader.status()).files == len(SAMPLE_FILES) + len(SAMPLE_BINARY)
    finally:
        await reader.close()


def open_files_of(db: Path) -> list[str]:
    """What this process holds open of the index and its log files."""
    held = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(str(db)):
            held.append(target)
    return held


@pytest.mark.parametrize("delay", [0.0, 0.001, 0.005, 0.02, 0.1])
async def test_closing_while_the_check_starts_or_runs_leaves_nothing_open(
    root: Path, env: dict[str, str], db: Path, delay: float
) -> None:
    """The check runs in the background once the first pass is over; closing the workspace at
    any moment of it (opening its connection, or reading) must close that connection too: an
    index left open cannot be unmounted or made read-only, and keeps its log files."""
    engine = await open_indexed(root, env)
    await asyncio.sleep(delay)
    await engine.close()
    assert open_files_of(db) == []


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[Mounts]:
    yield from mounts_under(tmp_path)


def fill_up(folder: Path) -> None:
    """Write until the file system holding `folder` has no room left. Unbuffered: a buffer
    would keep what the last, short write left over, and closing would fail to write it."""
    with open(folder / "filler", "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass


async def test_a_repair_that_fails_is_said_once_and_every_operation_answers_why(
    root: Path, tmp_path: Path, mounts: Mounts, caplog: pytest.LogCaptureFixture
) -> None:
    store = mounts.tmpfs("store", "2m")
    db = store / "idx" / "index.sqlite3"
    engine = await open_indexed(root, {"FILESCOUT_DB_PATH": str(db)})
    try:
        overwrite_pages(db)
        make_readers_look_again(db)
        fill_up(store)  # no room for a new index
        caplog.set_level(logging.WARNING, logger="filescout")

        for operation in (engine.status, lambda: engine.files_page(GetFilesParams()), engine.status):
            with pytest.raises(WorkspaceUnavailable, match=r"is not rebuilt.*until filescout restarts"):
                await operation()
        said = [record for record in caplog.records if "is not rebuilt" in record.getMessage()]
        assert len(said) == 1 and said[0].levelno == logging.ERROR and str(db) in said[0].getMessage()
    finally:
        await engine.close()


@pytest.mark.parametrize(
    ("error", "damage"),
    [
        (sqlite3.DatabaseError("database disk image is malformed"), True),
        (sqlite3.DatabaseError("file is not a database"), True),
        (sqlite3.OperationalError("no such table: files_fts"), True),
        (sqlite3.OperationalError("no such table: main.body_fts_data"), True),
        (sqlite3.OperationalError("no such table: customers"), False),  # not the schema's
        (sqlite3.OperationalError("database is locked"), False),
        (sqlite3.OperationalError("database or disk is full"), False),
        (OSError("malformed"), False),
    ],
)
def test_damage_is_what_sqlite_calls_corrupt_or_a_table_of_the_schema_gone(
    error: BaseException, damage: bool
) -> None:
    assert (index_damage(error) is not None) is damage
