"""A command in a terminal asks the filescout server that keeps the workspace's index, through
its door (a Unix socket only this user can reach): the editor's server or an MCP server takes in
what changed on disk, answers as the command would have, and a command whose server is gone, or
kept no door, answers on its own."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from filescout.door.address import door_path, open_door
from filescout.door.client import Door, DoorError
from harness import launch
from harness.support import (
    SAMPLE_BINARY,
    SAMPLE_FILES,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
)

READY_TIMEOUT = 60.0
ANSWERED = "answered by the process that keeps this index"


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A cache of the test's own, and doors in a directory of the test's own (short: a socket's
    path must be)."""
    doors = Path(tempfile.mkdtemp(prefix="door-"))
    yield {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "FILESCOUT_CACHE_DIR": "",
        "XDG_RUNTIME_DIR": "",
        "TMPDIR": str(doors),
    }
    shutil.rmtree(doors, ignore_errors=True)


def cli(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        launch.command("--log-level", "info", *args), env=env, capture_output=True, text=True, timeout=120
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def paths(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [item["path"] for item in json.loads(result.stdout)["items"]]


def wait_for_log(server: subprocess.Popen[bytes], log: Path, line: str) -> None:
    """Until the server's log says `line` (it must not exit first)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while line not in log.read_text():
        assert server.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"the server never said {line!r}:\n{log.read_text()}"
        time.sleep(0.1)


def start_mcp(env: dict[str, str], workspace: Path, log: Path) -> subprocess.Popen[bytes]:
    """An MCP server on `workspace` (its stdin held open), once its door is open."""
    server = launch.popen(launch.command("--log-level", "info", "mcp", str(workspace)), env, stderr=log)
    wait_for_log(server, log, "terminal commands are answered through")
    return server


def stop_mcp(server: subprocess.Popen[bytes]) -> None:
    assert server.stdin is not None
    server.stdin.close()
    server.wait(timeout=60)


async def test_find_asks_the_editors_server_which_takes_in_changes_first(
    tmp_path: Path, env: dict[str, str]
) -> None:
    workspace = make_workspace(tmp_path / "ws", git=True)
    client = await start_client(workspace, tmp_path / "cache", env=env)
    try:
        await wait_for_indexing(client)
        door = door_path(workspace.resolve(), env)
        assert door is not None and stat.S_ISSOCK(os.lstat(door).st_mode)
        assert stat.S_IMODE(os.lstat(door.parent).st_mode) == 0o700

        asked = await asyncio.to_thread(cli, env, "find", str(workspace), "shopping cart totals", "--json")
        itself = await asyncio.to_thread(
            cli, env, "find", str(workspace), "shopping cart totals", "--json", "--no-refresh"
        )
        assert ANSWERED in asked.stderr and ANSWERED not in itself.stderr
        assert paths(asked)[0] == "src/shop/cart.py"
        assert json.loads(asked.stdout) == json.loads(itself.stdout)

        # Changes the editor was not told of: a new file (a pass), an edited one (read again).
        (workspace / "src/shop/numbat.py").write_text("def numbat_tally():\n    return 'numbat tally'\n")
        with (workspace / "src/shop/cart.py").open("a") as cart:
            cart.write("\n# quokka reconciliation\n")
        added = await asyncio.to_thread(cli, env, "find", str(workspace), "numbat tally", "--json")
        edited = await asyncio.to_thread(cli, env, "find", str(workspace), "quokka reconciliation", "--json")
        assert paths(added)[0] == "src/shop/numbat.py"
        assert paths(edited)[0] == "src/shop/cart.py"

        listed = await asyncio.to_thread(cli, env, "files", str(workspace), "--glob", "numbat*")
        assert ANSWERED in listed.stderr
        assert listed.stdout.startswith("src/shop/numbat.py\t") and len(listed.stdout.splitlines()) == 1
        text = await asyncio.to_thread(cli, env, "find", str(workspace), "shopping", "cart", "--limit", "2")
        assert text.stdout.splitlines()[0] == "-- prefilter"
        overview = await asyncio.to_thread(cli, env, "overview", str(workspace), "--json")
        assert ANSWERED in overview.stderr and "numbat.py" in json.loads(overview.stdout)["prompt"]
        status = await asyncio.to_thread(cli, env, "status", str(workspace), "--json")
        assert ANSWERED in status.stderr, status.stderr
        shown = json.loads(status.stdout)
        assert shown["role"] == "writer" and shown["files"] == len(SAMPLE_FILES) + len(SAMPLE_BINARY) + 1, (
            shown
        )
        text_status = await asyncio.to_thread(cli, env, "status", str(workspace))
        assert text_status.stdout.startswith(f"workspace  {workspace.resolve()}\n"), text_status.stdout
    finally:
        await stop_client(client)
    assert not door.exists(), "the server's shutdown left its door"


def test_the_door_refuses_what_it_cannot_answer(tmp_path: Path, env: dict[str, str]) -> None:
    workspace = make_workspace(tmp_path / "ws", git=True)
    server = start_mcp(env, workspace, tmp_path / "mcp.log")
    try:
        where = open_door(workspace.resolve(), env)
        assert where is not None
        with Door.knock(where) as door:  # type: ignore[union-attr]  # None fails the test
            with pytest.raises(DoorError) as bad_limit:
                list(door.ask("files/findRelevant", {"query": "cart", "limit": 0}, stream=True))
            assert bad_limit.value.code == -32602 and "limit" in str(bad_limit.value)
            with pytest.raises(DoorError) as unknown:
                list(door.ask("files/rename", {}, stream=False))
            assert unknown.value.code == -32601
            # The connection serves the next question after a refusal.
            answer = list(door.ask("filescout.status", {}, stream=False))
            assert answer[-1][1]["root"] == str(workspace.resolve())

        door_file = door_path(workspace.resolve(), env)
        assert door_file is not None
        for line, code in ((b"not json\n", -32700), (b"[1, 2]\n", -32600)):
            with socket.socket(socket.AF_UNIX) as raw:
                raw.connect(str(door_file))
                raw.sendall(line)
                assert json.loads(raw.makefile("rb").readline())["error"]["code"] == code
        # A client that hangs up mid-question leaves the server answering the next one.
        with socket.socket(socket.AF_UNIX) as raw:
            raw.connect(str(door_file))
            raw.sendall(
                b'{"jsonrpc": "2.0", "id": 1, "method": "files/findRelevant", "params": {"query": "cart"}}\n'
            )
        assert ANSWERED in cli(env, "find", str(workspace), "shopping cart totals").stderr
    finally:
        stop_mcp(server)


def test_a_find_through_the_door_loads_only_the_standard_library_and_the_doors_client(
    tmp_path: Path, env: dict[str, str]
) -> None:
    workspace = make_workspace(tmp_path / "ws", git=True)
    server = start_mcp(env, workspace, tmp_path / "mcp.log")
    modules = tmp_path / "modules.txt"
    try:
        asked = subprocess.run(
            launch.probed("--log-level", "info", "find", str(workspace), "shopping cart totals"),
            env={**env, "FILESCOUT_TEST_MODULES": str(modules)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        stop_mcp(server)
    assert asked.returncode == 0 and ANSWERED in asked.stderr, asked.stderr
    loaded = set(modules.read_text().split("\n"))
    assert "filescout.door.client" in loaded  # the probe saw the run
    started = subprocess.run(
        [sys.executable, "-c", "import sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()  # what the interpreter's start loads (site's .pth hooks)
    ours = {"filescout", "filescout_protocol", "__main__", "runpy"}
    foreign = sorted(
        name
        for name in loaded - set(started)
        if name and name.split(".")[0] not in sys.stdlib_module_names | ours
    )
    assert foreign == [], f"a find through the door loaded {foreign}"
    heavy = {"asyncio", "sqlite3", "filescout.engine", "filescout_protocol.types", "filescout.relevance"}
    assert sorted(heavy & loaded) == []


def test_a_door_left_by_a_killed_server_is_passed_by_replaced_and_swept(
    tmp_path: Path, env: dict[str, str]
) -> None:
    workspace = make_workspace(tmp_path / "ws", git=True)
    server = start_mcp(env, workspace, tmp_path / "first.log")
    server.send_signal(signal.SIGKILL)
    server.wait(timeout=30)
    door = door_path(workspace.resolve(), env)
    assert door is not None and door.exists()  # nothing removed it

    alone = cli(env, "find", str(workspace), "shopping cart totals", "--json")
    assert ANSWERED not in alone.stderr and paths(alone)[0] == "src/shop/cart.py"

    server = start_mcp(env, workspace, tmp_path / "second.log")
    asked = cli(env, "find", str(workspace), "shopping cart totals", "--json")
    assert ANSWERED in asked.stderr and paths(asked) == paths(alone)
    server.send_signal(signal.SIGKILL)
    server.wait(timeout=30)
    assert door.exists()

    # A server opening a door to another workspace takes away the doors no one listens on.
    long_ago = time.time() - 3600
    os.utime(door, (long_ago, long_ago))
    other = make_workspace(tmp_path / "other", git=True)
    server = start_mcp(env, other, tmp_path / "third.log")
    stop_mcp(server)
    assert not door.exists()


def test_no_door_where_others_could_enter_and_the_command_reads_the_servers_index(
    tmp_path: Path, env: dict[str, str]
) -> None:
    shared = Path(env["TMPDIR"]) / f"filescout-{os.getuid()}"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)  # whatever the umask: another user could enter it
    workspace = make_workspace(tmp_path / "ws", git=True)
    log = tmp_path / "mcp.log"
    server = launch.popen(launch.command("--log-level", "info", "mcp", str(workspace)), env, stderr=log)
    try:
        wait_for_log(server, log, "no door for terminal commands")
        wait_for_log(server, log, "scan:")
        assert list(shared.iterdir()) == []
        # Written after the server's pass: only a refresh of this process's own would find it.
        (workspace / "src/shop/numbat.py").write_text("def numbat_tally():\n    return 'numbat tally'\n")

        answered = cli(env, "find", str(workspace), "shopping cart totals", "--json")
        unseen = cli(env, "find", str(workspace), "numbat tally", "--json")
    finally:
        stop_mcp(server)
    told = (
        f"another filescout process (pid {server.pid}) is indexing this workspace; answering from its index"
    )
    assert told in answered.stderr and ANSWERED not in answered.stderr
    assert paths(answered)[0] == "src/shop/cart.py"
    assert "src/shop/numbat.py" not in paths(unseen)


def test_the_door_passes_to_the_next_server_when_its_keeper_exits(
    tmp_path: Path, env: dict[str, str]
) -> None:
    workspace = make_workspace(tmp_path / "ws", git=True)
    first = start_mcp(env, workspace, tmp_path / "first.log")
    second_log = tmp_path / "second.log"
    second = launch.popen(
        launch.command("--log-level", "info", "mcp", str(workspace)), env, stderr=second_log
    )
    try:
        wait_for_log(second, second_log, "another filescout process keeps the door")
        assert ANSWERED in cli(env, "find", str(workspace), "shopping cart totals").stderr
        stop_mcp(first)
        # The second server takes the door when the first lets go of it, and answers.
        wait_for_log(second, second_log, "terminal commands are answered through")
        asked = cli(env, "find", str(workspace), "shopping cart totals", "--json")
        assert ANSWERED in asked.stderr and paths(asked)[0] == "src/shop/cart.py"
    finally:
        if first.poll() is None:
            stop_mcp(first)
        stop_mcp(second)
    door = door_path(workspace.resolve(), env)
    assert door is not None and not door.exists()
