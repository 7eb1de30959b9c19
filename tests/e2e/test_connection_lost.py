"""End to end: an editor that vanishes while a partial result is streaming. The server must exit
promptly and quietly, whether the editor closed both pipes (it exited) or only stopped reading
(a process it started still holds the server's stdin)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import launch, wire
from harness.support import make_large_workspace

EXIT_TIMEOUT = 10.0
FILES = 400  # at one item per notification, well over a pipe's buffer


class RawClient:
    """Just enough of an editor to start a stream and then disappear: LSP framing over the
    subprocess's pipes, saying yes to every request the server makes."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(wire.encode({"jsonrpc": "2.0", **message}))
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        body = wire.read_body(self.process.stdout)
        assert body is not None, "the server closed its output"
        message = json.loads(body)
        if "method" in message and "id" in message:
            self.send({"id": message["id"], "result": None})
        return message

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while not predicate(message := self.receive()):
            pass
        return message


def is_progress(message: dict[str, Any], token: str) -> bool:
    return message.get("method") == "$/progress" and str(message["params"]["token"]) == token


def indexing_ended(message: dict[str, Any]) -> bool:
    params = message.get("params") or {}
    value = params.get("value") if message.get("method") == "$/progress" else None
    return (
        isinstance(value, dict)
        and value.get("kind") == "end"
        and str(params.get("token", "")).startswith("filescout/index")
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize("editor", ["exits", "stops-reading"])
def test_server_exits_quietly_when_the_editor_vanishes_mid_stream(tmp_path: Path, editor: str) -> None:
    root = make_large_workspace(tmp_path / "ws", FILES)
    process = launch.popen(
        launch.SERVE, launch.server_env(tmp_path / "cache"), stderr=tmp_path / "stderr.log"
    )
    client = RawClient(process)
    try:
        client.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": os.getpid(),
                    "rootUri": root.as_uri(),
                    "capabilities": {"window": {"workDoneProgress": True}},
                },
            }
        )
        client.wait_for(lambda message: message.get("id") == 1)
        client.send({"method": "initialized", "params": {}})
        client.wait_for(indexing_ended)
        client.send(
            {"id": 2, "method": "files/getFiles", "params": {"partialResultToken": "stream", "batchSize": 1}}
        )
        client.wait_for(lambda message: is_progress(message, "stream"))
        time.sleep(0.5)  # the server fills the pipe and waits in a write
        assert process.stdout is not None and process.stdin is not None
        process.stdout.close()
        if editor == "exits":
            process.stdin.close()
        started = time.monotonic()
        try:
            process.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server was still running {EXIT_TIMEOUT:.0f}s after the editor left")
        assert time.monotonic() - started < EXIT_TIMEOUT
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = (tmp_path / "stderr.log").read_text(errors="replace")
    assert process.returncode == 0, log
    assert "Traceback" not in log, log
    assert "Exception ignored" not in log, log
    assert "closed the connection" in log, log  # the stream really was cut short
