"""Work a short-lived process leaves (an MCP session, an interrupted CLI command) is finished by
one detached background indexer: it holds the writer lock, exits when done, never runs beside
another, and never outlives its workspace or its index."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from filescout.door.address import door_path
from filescout.engine import handoff
from filescout.engine.roles import lock_path
from filescout.engine.settings import default_db_path
from filescout.index.lock import WriterLock
from harness.fake_openai import Action, FakeOpenAI
from harness.mcp_client import mcp_env, mcp_session
from harness.support import query_db, wait_until

pytestmark = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds processes in /proc")

FILES = 100
CLASSES = 400
"""Per file (160 KB): a batch of annotation takes longer than a session lasts."""
SESSIONS = 10
SESSION_SECONDS = 1.0
HIDDEN_COMMAND = handoff.COMMAND.encode()


def make_workspace(root: Path, *, files: int = FILES, classes: int = CLASSES) -> Path:
    """Python modules of many small classes each."""
    for n in range(files):
        path = root / f"pkg{n % 10}" / f"module_{n:03d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(
            f"class Widget{n}_{k}:\n"
            f'    """Widget {k} of module {n}: keeps a value and its history."""\n\n'
            f"    def __init__(self, value):\n        self.value_{k} = value\n        self.history = [value]\n\n"
            f"    def update_{k}(self, delta):\n        self.value_{k} += delta\n"
            f"        self.history.append(self.value_{k})\n        return self.value_{k}\n\n\n"
            f"def helper_{n}_{k}(items):\n    return [Widget{n}_{k}(item).update_{k}(1) for item in items]\n\n\n"
            for k in range(classes)
        )
        path.write_text(f'"""Module {n}."""\nimport json\nimport os\n\n{body}')
    return root


def index_of(cache: Path) -> Path:
    (found,) = cache.rglob("index.sqlite3")
    return found


def model_env(fake: FakeOpenAI) -> dict[str, str]:
    return {"FILESCOUT_MODEL": "test-model", "OPENAI_BASE_URL": fake.base_url}


def create_index(root: Path, env: dict[str, str]) -> Path:
    """An index with nothing in it yet, as a process that just opened the workspace leaves it."""
    subprocess.run(
        [sys.executable, "-m", "filescout", "status", str(root)], env=env, check=True, capture_output=True
    )
    db = default_db_path(root.resolve(), env)
    assert db.exists()
    return db


def background(
    root: Path, db: Path, env: dict[str, str], log: Path, *, starter: bool
) -> subprocess.Popen[bytes]:
    """A background indexer as closing a workspace starts one; with `starter`, this test's
    process is the one it waits for to let go of the lock."""
    args = handoff.command(root.resolve(), db, env)
    if not starter:
        args = args[: args.index("--after")]
    with log.open("ab") as errors:
        return subprocess.Popen(
            args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors
        )


def stop(processes: Iterable[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def waiting(db: Path) -> tuple[int, int]:
    """(files in the index, files that show no annotation yet)."""
    ((files, pending),) = query_db(
        db, "SELECT count(*), coalesce(sum(annotator IS NULL), 0) FROM files WHERE skip_reason IS NULL"
    )
    return int(files), int(pending)


def background_indexers(root: Path) -> list[int]:
    """The background indexers working on `root`, whoever started them."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if HIDDEN_COMMAND in words and os.fsencode(root) in words:
            found.append(int(entry))
    return found


async def no_background_indexer(root: Path, timeout: float = 30) -> None:
    await wait_until(
        lambda: not background_indexers(root), message="background indexers to exit", timeout=timeout
    )


async def test_ten_one_second_sessions_leave_every_file_annotated(tmp_path: Path) -> None:
    """A client that starts the server for each call (an inspector, a script) closes it a second
    later, while the first scan's annotation is still under way."""
    root = make_workspace(tmp_path / "ws")
    cache, stderr = tmp_path / "cache", tmp_path / "stderr"
    env = mcp_env(cache)
    try:
        for n in range(SESSIONS):
            async with mcp_session(root, cache, stderr) as session:
                began = time.monotonic()
                result = await session.call_tool("find_relevant_files", {"query": f"helper value unit {n}"})
                assert not result.is_error
                await asyncio.sleep(max(0.0, SESSION_SECONDS - (time.monotonic() - began)))
        db = index_of(cache)
        await wait_until(lambda: waiting(db) == (FILES, 0), message="every file annotated", timeout=60)
        await no_background_indexer(root)
        status = subprocess.run(
            [sys.executable, "-m", "filescout", "status", "--json", str(root)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert status.returncode == 0, status.stderr
        assert '"byStatus":{"annotated":100}' in status.stdout
        assert "Traceback" not in stderr.read_text()
    finally:
        await no_background_indexer(root)


async def test_background_indexers_started_together_leave_the_work_to_one(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", files=30)
    env = mcp_env(tmp_path / "cache")
    db = create_index(root, env)
    closing = WriterLock(lock_path(db))  # the process that hands its work on, letting go of it
    assert closing.try_acquire()
    logs = [tmp_path / f"background-{n}.log" for n in range(4)]
    processes = [background(root, db, env, log, starter=True) for log in logs]
    try:
        await wait_until(
            lambda: sum(process.poll() is not None for process in processes) == 3,
            message="all but one to leave",
            timeout=60,
        )
        (kept,) = [process for process in processes if process.poll() is None]
        for process, log in zip(processes, logs, strict=True):
            if process is not kept:
                assert process.returncode == 0
                assert "finishes the work on" in log.read_text() and " writes " not in log.read_text()
        assert waiting(db) == (0, 0)  # it waits while the lock is held, and writes nothing
        closing.release()
        await wait_until(lambda: kept.poll() is not None, message="the work to be done", timeout=120)
        assert kept.returncode == 0 and waiting(db) == (30, 0)
        text = logs[processes.index(kept)].read_text()
        assert f"background indexer {kept.pid} writes" in text and "(30 annotated)" in text
    finally:
        closing.release()
        stop(processes)


async def test_a_background_indexer_leaves_the_index_to_a_process_that_keeps_the_lock(tmp_path: Path) -> None:
    """An editor's server, or a session started meanwhile, writes the index: it does the work."""
    root = make_workspace(tmp_path / "ws", files=5, classes=2)
    env = mcp_env(tmp_path / "cache")
    db = create_index(root, env)
    editor = WriterLock(lock_path(db))
    assert editor.try_acquire()
    log = tmp_path / "background.log"
    process = background(root, db, env, log, starter=False)
    try:
        await wait_until(
            lambda: process.poll() is not None, message="the background indexer to leave", timeout=60
        )
        assert process.returncode == 0 and waiting(db) == (0, 0)
        assert (
            f"filescout process {os.getpid()} writes this index and finishes the work itself"
            in log.read_text()
        )
        assert (
            handoff.background_lock_path(db).exists()
            and WriterLock(handoff.background_lock_path(db)).try_acquire()
        )
    finally:
        editor.release()
        stop([process])


@pytest.mark.parametrize(
    ("end", "said"),
    [
        ("workspace deleted", "stops: the workspace folder"),
        ("index folder deleted", "stops: the index folder"),
        ("index deleted", "stops: the index "),
        ("SIGTERM", "stopped"),
        ("workspace deleted while it waits for the lock", "stops: the workspace folder"),
    ],
)
async def test_a_background_indexer_never_outlives_its_workspace_or_index(
    tmp_path: Path, end: str, said: str
) -> None:
    """Busy (on a model that does not answer) or waiting, it stops within seconds."""
    root = make_workspace(tmp_path / "ws", files=20, classes=5)
    fake = FakeOpenAI().start()
    fake.per_kind["annotate"] = Action(delay=120)
    env = mcp_env(tmp_path / "cache", **model_env(fake))
    db = create_index(root, env)
    holder = WriterLock(lock_path(db))
    log = tmp_path / "background.log"
    process: subprocess.Popen[bytes] | None = None
    try:
        if "waits" in end:
            assert holder.try_acquire()
            process = background(root, db, env, log, starter=True)
            await asyncio.sleep(2.0)
        else:
            process = background(root, db, env, log, starter=True)
            await wait_until(lambda: fake.calls("annotate") > 0, message="model calls", timeout=60)
        assert process.poll() is None
        if end == "SIGTERM":
            process.send_signal(signal.SIGTERM)
        elif end == "index deleted":
            db.unlink()
        else:
            shutil.rmtree(db.parent if end == "index folder deleted" else root)
        await wait_until(
            lambda: process.poll() is not None, message="the background indexer to stop", timeout=10
        )
        assert process.returncode == 0
        assert said in log.read_text()
    finally:
        holder.release()
        if process is not None:
            stop([process])
        fake.stop()


async def test_a_command_run_while_a_background_indexer_works_is_answered_by_it(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", files=20, classes=5)
    fake = FakeOpenAI().start()
    fake.per_kind["annotate"] = Action(delay=120)  # it keeps working while the commands run
    doors = Path(tempfile.mkdtemp(prefix="door-"))  # short: a socket's path must be
    env = {**mcp_env(tmp_path / "cache", **model_env(fake)), "TMPDIR": str(doors)}
    db = create_index(root, env)
    log = tmp_path / "background.log"
    door = door_path(root.resolve(), env, create=True)
    assert door is not None
    process = background(root, db, env, log, starter=False)
    try:
        await wait_until(lambda: door.exists(), message="the background indexer's door", timeout=60)
        (root / "pkg0" / "numbat.py").write_text("def numbat_tally():\n    return 'numbat tally'\n")
        found = subprocess.run(
            [
                sys.executable,
                "-m",
                "filescout",
                "--log-level",
                "info",
                "find",
                str(root),
                "numbat tally",
                "--json",
                "--no-model",  # the model's one slot is taken by the annotation that hangs
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert found.returncode == 0, found.stderr
        # Asked through its door, it took in the new file first; a reader of its index would not.
        assert "answered by the process that keeps this index" in found.stderr, found.stderr
        items = json.loads(found.stdout)["items"]
        assert items and items[0]["path"] == "pkg0/numbat.py", log.read_text()
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        await wait_until(
            lambda: process.poll() is not None, message="the background indexer to stop", timeout=10
        )
        assert not door.exists(), "the background indexer left its door"
    finally:
        stop([process])
        fake.stop()
        shutil.rmtree(doors, ignore_errors=True)


async def test_an_interrupted_index_command_is_finished_in_the_background(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", files=20, classes=5)
    fake = FakeOpenAI().start()
    fake.per_kind["annotate"] = Action(delay=120)  # until the command is interrupted
    cache = tmp_path / "cache"
    env = mcp_env(cache, **model_env(fake))
    try:
        with (tmp_path / "stderr").open("wb") as errors:
            command = subprocess.Popen(
                [sys.executable, "-m", "filescout", "index", str(root)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                # Ctrl-C's own action, whatever this run inherited: a runner started in the
                # background of a shell ignores SIGINT, and so would the command.
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
        await wait_until(lambda: fake.calls("annotate") > 0, message="model calls", timeout=60)
        del fake.per_kind["annotate"]
        command.send_signal(signal.SIGINT)
        await wait_until(lambda: command.poll() is not None, message="the command to end", timeout=30)
        assert command.returncode == 130
        db = index_of(cache)
        await wait_until(
            lambda: query_db(db, "SELECT count(*) FROM files WHERE annotator LIKE 'model:%'") == [(20,)],
            message="every file summarized by the model",
            timeout=60,
        )
        await no_background_indexer(root)
        assert "done in" in handoff.log_path(db).read_text()
    finally:
        fake.stop()
        await no_background_indexer(root)
