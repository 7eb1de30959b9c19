"""When closing a workspace hands its work on to a background indexer, and how the background
indexers of one index settle which of them goes on (the processes themselves are driven in
tests/e2e/test_background_indexer.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from filescout.cli import build_parser
from filescout.engine import Workspace, handoff
from filescout.engine.background_indexer import _last_look
from filescout.engine.roles import lock_path
from filescout.index.lock import WriterLock
from harness.fake_openai import FakeOpenAI
from harness.support import make_large_workspace, make_workspace


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, Path]]:
    """What closing hands on, instead of starting processes."""
    calls: list[tuple[Path, Path]] = []
    monkeypatch.setattr(
        handoff, "start_background_indexer", lambda root, db_path, env: calls.append((root, db_path))
    )
    return calls


async def test_closing_mid_pass_hands_the_work_on(tmp_path: Path, started: list[tuple[Path, Path]]) -> None:
    root = make_large_workspace(tmp_path / "ws", 300)
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")})
    engine.start_indexing("index")
    status = await engine.status()
    await engine.close(hand_off=True)
    assert started == [(root.resolve(), Path(status.db_path))]


async def test_nothing_is_handed_on_when_nothing_is_left(
    tmp_path: Path, started: list[tuple[Path, Path]]
) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    env = {"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}
    engine = await Workspace.open(root, env=env)
    engine.start_indexing("index")
    await engine.wait_idle()
    await engine.close(hand_off=True)  # done
    engine = await Workspace.open(root, env=env)
    engine.start_indexing("index")
    await engine.close()  # a face that does not hand on (an editor's server)
    assert started == []


async def test_files_a_question_turned_up_are_not_work_left(
    tmp_path: Path, started: list[tuple[Path, Path]]
) -> None:
    """Both drains start on them after the answer, just before a command closes."""
    root = make_workspace(tmp_path / "ws", git=False)
    fake = FakeOpenAI().start()
    try:
        env = {
            "FILESCOUT_CACHE_DIR": str(tmp_path / "cache"),
            "FILESCOUT_MODEL": "m",
            "OPENAI_BASE_URL": fake.base_url,
        }
        engine = await Workspace.open(root, env=env)
        engine.start_indexing("index")
        await engine.wait_idle()
        assert (await engine.status()).by_status == {"annotated": 10, "skipped": 1}
        await engine.touch(["src/shop/cart.py", "README.md"])
        assert any(task is not None and not task.done() for task in engine._scheduler.tasks)
        await engine.close(hand_off=True)
        assert started == []
    finally:
        fake.stop()


async def test_a_reader_hands_nothing_on(tmp_path: Path, started: list[tuple[Path, Path]]) -> None:
    root = make_large_workspace(tmp_path / "ws", 300)
    env = {"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}
    writer = await Workspace.open(root, env=env)
    try:
        reader = await Workspace.open(root, env=env)
        assert reader.role == "reader"
        writer.start_indexing("index")
        await reader.close(hand_off=True)
        assert started == []
    finally:
        await writer.close()


@pytest.mark.parametrize(
    ("value", "on"), [("", True), ("1", True), ("0", False), ("off", False), ("No", False)]
)
def test_the_background_indexer_can_be_switched_off(value: str, on: bool) -> None:
    assert handoff.enabled({handoff.OPT_OUT: value}) is on


def test_switched_off_or_without_a_workspace_nothing_starts(tmp_path: Path) -> None:
    db = tmp_path / "index" / "index.sqlite3"
    db.parent.mkdir()
    assert handoff.start_background_indexer(tmp_path, db, {handoff.OPT_OUT: "0"}) is None
    assert handoff.start_background_indexer(tmp_path / "gone", db, {}) is None
    assert not handoff.log_path(db).exists()


def test_the_command_is_filescout_itself_and_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    args = handoff.command(Path("/ws"), Path("/cache/index.sqlite3"), {})
    assert args[:3] == [sys.executable, "-m", "filescout"]
    parsed = build_parser().parse_args(args[3:])
    assert parsed.command == handoff.COMMAND and parsed.path == "/ws"
    assert parsed.index == "/cache/index.sqlite3" and parsed.log_level == "info"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["-h"])
    assert handoff.COMMAND not in capsys.readouterr().out


def test_the_log_is_kept_small(tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite3"
    log = handoff.log_path(db)
    log.write_bytes(b"x" * (handoff.LOG_LIMIT + 1))
    with handoff._open_log(log) as stream:
        stream.write(b"new\n")
    assert log.read_bytes() == b"new\n"
    assert log.with_name(log.name + ".1").stat().st_size == handoff.LOG_LIMIT + 1


class Indexers:
    """Locks as two background indexers and a writer of one index hold them (flock: two
    opens of one file conflict within a process as between processes)."""

    def __init__(self, tmp_path: Path) -> None:
        db = tmp_path / "index.sqlite3"
        self.own = WriterLock(handoff.background_lock_path(db))
        self.newer = WriterLock(handoff.background_lock_path(db))
        self.writer = WriterLock(lock_path(db))
        self.other = WriterLock(lock_path(db))


def test_the_last_look_takes_the_lock_the_writer_let_go_of(tmp_path: Path) -> None:
    locks = Indexers(tmp_path)
    assert locks.own.try_acquire()
    assert _last_look(locks.writer, locks.own) is locks.writer
    assert not locks.newer.try_acquire() and not locks.other.try_acquire()


def test_the_last_look_leaves_the_work_to_a_newer_background_indexer(tmp_path: Path) -> None:
    locks = Indexers(tmp_path)
    assert locks.own.try_acquire()
    own_release = locks.own.release

    def release_to_newer() -> None:  # a newer one started by the writer takes it at once
        own_release()
        assert locks.newer.try_acquire()

    locks.own.release = release_to_newer  # type: ignore[method-assign]
    assert _last_look(locks.writer, locks.own) is None
    assert locks.other.try_acquire()  # let go of: the newer one takes it


def test_the_last_look_leaves_a_kept_lock_alone(tmp_path: Path) -> None:
    locks = Indexers(tmp_path)
    assert locks.own.try_acquire() and locks.other.try_acquire()
    assert _last_look(locks.writer, locks.own) is None
    assert locks.newer.try_acquire()  # and the background lock is free for the next one
