"""The CLI runs the same engine as the server: index, list, find, status."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
from pathlib import Path

import pytest

from harness import launch, wire
from harness.support import SAMPLE_BINARY, SAMPLE_FILES, make_large_workspace, make_workspace


@pytest.fixture
def run(tmp_path: Path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "FILESCOUT_CACHE_DIR": ""}

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(launch.command(*args), env=env, capture_output=True, text=True, timeout=120)
        if check:
            assert result.returncode == 0, result.stderr
        return result

    return run


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws", git=True)


def test_index_files_find_status(run, workspace: Path) -> None:
    indexed = run("index", str(workspace))
    assert f"{len(SAMPLE_FILES) + len(SAMPLE_BINARY)} files" in indexed.stdout

    listed = run("files", str(workspace), "--json", "--no-refresh")
    items = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(item["path"] for item in items) == sorted(SAMPLE_FILES)
    assert all(item["summary"] for item in items)

    text = run("files", str(workspace), "--glob", "*.ts")
    assert text.stdout.startswith("web/checkoutForm.ts\t")
    assert len(text.stdout.splitlines()) == 1

    found = run("find", str(workspace), "refund", "a", "stripe", "charge", "--json")
    result = json.loads(found.stdout)
    assert result["items"][0]["path"] == "src/shop/payments/stripe_gateway.py"

    plain = run("find", str(workspace), "shopping cart totals", "--limit", "2").stdout.splitlines()
    assert plain[0] == "-- prefilter"
    assert plain[1].startswith("  1. src/shop/cart.py  [prefilter ")
    assert len([line for line in plain if line[:4].strip().rstrip(".").isdigit()]) <= 2

    status = json.loads(run("status", str(workspace), "--json").stdout)
    assert status["files"] == len(SAMPLE_FILES) + len(SAMPLE_BINARY)
    assert status["byStatus"] == {"annotated": len(SAMPLE_FILES), "skipped": len(SAMPLE_BINARY)}


def test_find_defaults_to_current_directory(run, workspace: Path) -> None:
    os.chdir(workspace)
    result = json.loads(run("find", "checkout address validation", "--json").stdout)
    assert result["items"][0]["path"] == "web/checkoutForm.ts"


def test_missing_workspace_is_a_clear_error(run, tmp_path: Path) -> None:
    result = run("status", str(tmp_path / "nowhere"), check=False)
    assert result.returncode == 1
    assert "is not a directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_workspace_warning_is_said_once(run, workspace: Path) -> None:
    (workspace / "filescout.toml").write_text('db_path = "elsewhere.db"\nmax_file_size = "big"\n')
    result = run("status", str(workspace))
    lines = result.stderr.splitlines()
    assert [line for line in lines if "db_path ignored" in line] == [
        "filescout: filescout.toml: db_path ignored: a workspace file cannot place the index; "
        "set dbPath in the editor settings or FILESCOUT_DB_PATH"
    ], result.stderr
    assert len([line for line in lines if "maxFileSize ignored" in line]) == 1, result.stderr


def test_a_model_endpoint_nothing_listens_on_is_said_without_waiting(tmp_path: Path, workspace: Path) -> None:
    with socket.socket() as probe:  # a port on this machine where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "FILESCOUT_CACHE_DIR": "",
        "FILESCOUT_MODEL": "test-model",
        "FILESCOUT_BASE_URL": f"http://127.0.0.1:{port}/v1",
    }
    found = subprocess.run(
        launch.command("--log-level", "info", "find", str(workspace), "shopping cart totals", "--no-model"),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[1].startswith("  1. src/shop/cart.py  ["), found.stdout
    # The command says what failed, once it fails: no retries, no pause waited out.
    assert "model annotation paused: the model endpoint is failing (Connection error: " in found.stderr
    assert "retry" not in found.stderr, found.stderr
    # Said once, without the log: the command's own line.
    quiet = subprocess.run(
        launch.command("find", str(workspace), "refunds", "--no-model"),
        env={**env, "FILESCOUT_CACHE_DIR": str(tmp_path / "other-cache")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = [line for line in quiet.stderr.splitlines() if "Connection error" in line]
    assert len(said) == 1, quiet.stderr
    assert said[0].startswith("0 files summarized; the model endpoint is failing (Connection error: ")


def test_bad_glob_is_a_clear_error(run, workspace: Path) -> None:
    result = run("files", str(workspace), "--glob", "../*.py", check=False)
    assert result.returncode == 1
    assert "reaches outside the workspace" in result.stderr


def test_index_draws_a_progress_bar_on_a_terminal(tmp_path: Path, workspace: Path) -> None:
    import pty

    leader, follower = pty.openpty()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "FILESCOUT_CACHE_DIR": ""}
    process = subprocess.Popen(
        launch.command("index", str(workspace)),
        env=env,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    assert process.wait(timeout=60) == 0
    os.close(leader)
    assert b"indexing [" in drawn and b"%" in drawn
    assert b"\r" in drawn


def test_serve_over_tcp(tmp_path: Path, workspace: Path) -> None:
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "FILESCOUT_CACHE_DIR": ""}
    server = subprocess.Popen(
        launch.command("serve", "--tcp", f"127.0.0.1:{port}"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                assert time.monotonic() < deadline, "server did not listen"
                time.sleep(0.1)
        with connection, connection.makefile("rb") as stream:
            params = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
            connection.sendall(wire.encode(wire.jsonrpc_message("initialize", params, 1)))
            body = wire.read_body(stream)
            assert body is not None, "the server closed the connection without a reply"
            reply = json.loads(body)
        assert reply["id"] == 1
        assert "filescout.reindex" in reply["result"]["capabilities"]["executeCommandProvider"]["commands"]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_output_cut_short_by_its_reader_ends_quietly(run, tmp_path: Path) -> None:
    many = make_large_workspace(tmp_path / "many", 3000)  # more output than a pipe holds
    assert run("index", str(many)).returncode == 0
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "FILESCOUT_CACHE_DIR": ""}
    command = shlex.join(launch.command("files", str(many), "--no-refresh")) + " | head -1"
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout.count("\n") == 1
