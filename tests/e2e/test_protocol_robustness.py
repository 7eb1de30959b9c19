"""End to end: what a client can get wrong on the wire. Bad framing, malformed or invalid
JSON-RPC, odd strings and the LSP lifecycle's edge cases each get an error reply (never a
traceback), and the server keeps serving the messages that follow."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import launch, wire
from harness.support import make_workspace

REPLY_TIMEOUT = 20.0
FRAME_LIMIT = 16 * 1024 * 1024
PROBE = {"jsonrpc": "2.0", "method": "files/getFiles", "params": {}}

Message = dict[str, Any]


def odd_frame(body: bytes, *, length: int | None = None, newline: bytes = b"\r\n") -> bytes:
    """A frame that may declare a length its body does not have, or end its header lines with a
    bare LF: what wire.frame, which writes only well-formed frames, never makes."""
    declared = len(body) if length is None else length
    return b"Content-Length: %d%s%s%s" % (declared, newline, newline, body)


def unframed(message: Any) -> bytes:
    """A message's JSON without its header, to be framed (or not) by hand."""
    return json.dumps(message).encode()


class RawPipe:
    """Raw bytes in, parsed messages out: a thread reads the server's output into a queue, so
    a server that stops answering fails a test by timeout instead of hanging it."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.messages: queue.Queue[Message | None] = queue.Queue()
        self.seen: list[Message] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while (body := wire.read_body(stdout)) is not None:
            self.messages.put(json.loads(body))
        self.messages.put(None)

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: Message) -> None:
        self.write(wire.encode(message))

    def wait_for(self, predicate: Callable[[Message], bool], timeout: float = REPLY_TIMEOUT) -> Message:
        while True:
            try:
                message = self.messages.get(timeout=timeout)
            except queue.Empty:
                pytest.fail(f"no matching message within {timeout:.0f}s; saw {self.seen[-5:]}")
            if message is None:
                pytest.fail(f"the server closed its output; saw {self.seen[-5:]}")
            self.seen.append(message)
            if "method" in message and "id" in message:  # the server asks: say yes
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            if predicate(message):
                return message

    def reply_to(self, msg_id: Any) -> Message:
        return self.wait_for(lambda message: is_reply(message) and message.get("id") == msg_id)

    def error_reply(self) -> Message:
        return self.wait_for(lambda message: is_reply(message) and "error" in message)

    def probe(self, name: str) -> Message:
        """A request the server can answer in any state (before `initialize`: -32002)."""
        self.send({**PROBE, "id": name})
        return self.reply_to(name)

    def replies(self) -> list[Message]:
        return [message for message in self.seen if is_reply(message)]


def is_reply(message: Message) -> bool:
    return "id" in message and "method" not in message


def error_of(message: Message) -> dict[str, Any]:
    assert "error" in message, message
    error: dict[str, Any] = message["error"]
    assert "data" not in error or "traceback" not in json.dumps(error["data"]).lower(), error
    return error


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[RawPipe, Path]]:
    process = launch.popen(
        launch.SERVE, launch.server_env(tmp_path / "cache"), stderr=tmp_path / "stderr.log"
    )
    client = RawPipe(process)
    try:
        yield client, tmp_path
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
    for message in client.seen:  # whatever else happened: no reply carries a traceback
        if "error" in message:
            error_of(message)


def initialize(client: RawPipe, root: Path) -> None:
    client.send(
        {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}},
        }
    )
    assert "result" in client.reply_to("init")
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})


def exit_code(client: RawPipe) -> int:
    try:
        return client.process.wait(timeout=REPLY_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail("the server did not exit")


# Framing


def test_a_huge_content_length_is_refused_without_reading_it(server: tuple[RawPipe, Path]) -> None:
    client, _ = server
    client.write(b"Content-Length: 1000000000000\r\n\r\n" + unframed({**PROBE, "id": 1}))
    error = error_of(client.error_reply())
    assert error["code"] in (-32600, -32700)
    assert "16777216" in error["message"] or "too large" in error["message"]
    assert client.replies()[-1]["id"] is None
    assert client.process.poll() is None
    assert error_of(client.probe("after"))["code"] == -32002


def test_a_frame_over_the_limit_is_skipped_and_the_next_one_served(server: tuple[RawPipe, Path]) -> None:
    client, _ = server
    client.write(wire.encode({**PROBE, "id": "big", "params": {"glob": "x" * FRAME_LIMIT}}))
    assert error_of(client.error_reply())["code"] in (-32600, -32700)
    assert client.replies()[-1]["id"] is None
    assert error_of(client.probe("after"))["code"] == -32002
    assert [reply["id"] for reply in client.replies()] == [None, "after"]


BAD_FRAMES = {
    "negative": b"Content-Length: -5\r\n\r\n{}",
    "non-numeric": b"Content-Length: five\r\n\r\n{}",
    "missing": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
    + unframed({**PROBE, "id": 1}),
    "too small": odd_frame(unframed({**PROBE, "id": 1}), length=10),
    "too large": odd_frame(unframed({**PROBE, "id": 1}), length=len(unframed({**PROBE, "id": 1})) + 40),
    "no headers": unframed({**PROBE, "id": 1}) + b"\r\n",
}


@pytest.mark.parametrize("bad", list(BAD_FRAMES), ids=list(BAD_FRAMES))
def test_a_bad_frame_is_answered_and_the_reader_resynchronises(
    server: tuple[RawPipe, Path], bad: str
) -> None:
    client, _ = server
    client.write(BAD_FRAMES[bad])
    client.send({**PROBE, "id": "maybe-eaten"})  # a frame that is too large swallows part of it
    error = error_of(client.error_reply())
    assert error["code"] in (-32600, -32700)
    assert "id" in client.replies()[0] and client.replies()[0]["id"] is None
    assert error_of(client.probe("after"))["code"] == -32002


def test_headers_may_end_lines_with_lf_only(server: tuple[RawPipe, Path]) -> None:
    client, _ = server
    client.write(odd_frame(unframed({**PROBE, "id": "lf"}), newline=b"\n"))
    assert error_of(client.reply_to("lf"))["code"] == -32002
    body = unframed({**PROBE, "id": "mixed"})
    client.write(
        b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc\n\r\n%s" % (len(body), body)
    )
    assert error_of(client.reply_to("mixed"))["code"] == -32002
    client.probe("after")
    assert not [reply for reply in client.replies() if reply["id"] is None]


# Malformed messages: -32700 for what cannot be read, -32600 for what is not a request

MALFORMED = {
    "invalid json": (b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700),
    "invalid utf-8": (b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}', -32700),
    "deep nesting": (b"[" * 10_000 + b"]" * 10_000, -32700),
    "deep nesting in params": (
        b'{"jsonrpc": "2.0", "id": 1, "method": "files/getFiles", "params": '
        + b'{"a":' * 10_000
        + b"1"
        + b"}" * 10_000
        + b"}",
        -32700,
    ),
    "scalar": (b"42", -32600),
    "string": (b'"files/getFiles"', -32600),
    "null": (b"null", -32600),
    "batch": (unframed([{**PROBE, "id": 1}, {**PROBE, "id": 2}]), -32600),
    "empty batch": (b"[]", -32600),
}


@pytest.mark.parametrize("case", list(MALFORMED), ids=list(MALFORMED))
def test_malformed_messages_get_a_json_rpc_error(server: tuple[RawPipe, Path], case: str) -> None:
    client, _ = server
    body, code = MALFORMED[case]
    client.write(wire.frame(body))
    reply = client.error_reply()
    assert reply["id"] is None
    assert error_of(reply)["code"] == code
    assert error_of(client.probe("after"))["code"] == -32002
    assert len(client.replies()) == 2  # one error per message, even for a batch


INVALID_REQUESTS: dict[str, tuple[Message, Any]] = {
    "no jsonrpc": ({"id": 5, "method": "files/getFiles", "params": {}}, 5),
    "jsonrpc 1.0": ({"jsonrpc": "1.0", "id": 6, "method": "files/getFiles", "params": {}}, 6),
    "only an id": ({"jsonrpc": "2.0", "id": 7}, 7),
    "bare id": ({"id": "seven"}, "seven"),
    "number method": ({"jsonrpc": "2.0", "id": 8, "method": 5, "params": {}}, 8),
    "object method": ({"jsonrpc": "2.0", "id": 9, "method": {"a": 1}}, 9),
    "object id": ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "files/getFiles", "params": {}}, None),
    "array id": ({"jsonrpc": "2.0", "id": [1], "method": "files/getFiles", "params": {}}, None),
    "scalar params": ({"jsonrpc": "2.0", "id": 10, "method": "files/getFiles", "params": 3}, 10),
}


@pytest.mark.parametrize("case", list(INVALID_REQUESTS), ids=list(INVALID_REQUESTS))
def test_invalid_requests_get_minus_32600(server: tuple[RawPipe, Path], case: str) -> None:
    client, _ = server
    message, msg_id = INVALID_REQUESTS[case]
    client.send(message)
    reply = client.error_reply()
    assert reply["id"] == msg_id
    assert error_of(reply)["code"] == -32600
    assert error_of(client.probe("after"))["code"] == -32002


# Parameters the handlers cannot take: -32602 naming the field, never a traceback


def surrogate_request(msg_id: str, method: str, params: Message) -> bytes:
    """json.dumps writes a lone surrogate as the escape `\\ud800`, as a JavaScript client does."""
    return wire.encode({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})


INVALID_PARAMS: dict[str, tuple[str, Message, str]] = {
    "glob": ("files/getFiles", {"globs": ["src/\ud800*.py"]}, "globs[0]"),
    "second glob": ("files/getFiles", {"globs": ["*.py", "\udfff"]}, "globs[1]"),
    "tag": ("files/getFiles", {"tags": ["cart\udc80"]}, "tags[0]"),
    "query": ("files/findRelevant", {"query": "cart \ud83d totals"}, "query"),
    "command argument": (
        "workspace/executeCommand",
        {"command": "filescout.annotate", "arguments": [{"paths": ["src/\ud800.py"]}]},
        "arguments[0].paths[0]",
    ),
    "field name": ("files/getFiles", {"\ud800": 1}, "surrogate"),
    "empty executeCommand": ("workspace/executeCommand", {}, "command"),
}


@pytest.mark.timeout(120)
def test_bad_strings_and_params_are_invalid_params(server: tuple[RawPipe, Path]) -> None:
    client, tmp_path = server
    initialize(client, make_workspace(tmp_path / "ws", git=False))
    for case, (method, params, field) in INVALID_PARAMS.items():
        client.write(surrogate_request(case, method, params))
        error = error_of(client.reply_to(case))
        assert error["code"] == -32602, (case, error)
        assert field in error["message"], (case, error)
        if case != "empty executeCommand":
            assert "surrogate" in error["message"], (case, error)
    assert "result" in client.probe("after")  # and it still serves


# Lifecycle


@pytest.mark.timeout(120)
def test_after_shutdown_requests_are_invalid_and_exit_is_clean(server: tuple[RawPipe, Path]) -> None:
    client, tmp_path = server
    initialize(client, make_workspace(tmp_path / "ws", git=False))
    client.send({"jsonrpc": "2.0", "id": "down", "method": "shutdown"})
    assert client.reply_to("down") == {"jsonrpc": "2.0", "id": "down", "result": None}
    client.send({"jsonrpc": "2.0", "method": "files/didAccess", "params": {"paths": ["README.md"]}})
    for msg_id, method in [("late", "files/getFiles"), ("again", "shutdown"), ("init", "initialize")]:
        client.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {}})
        assert error_of(client.reply_to(msg_id))["code"] == -32600
    client.send({"jsonrpc": "2.0", "method": "exit"})
    assert exit_code(client) == 0


@pytest.mark.timeout(120)
def test_shutdown_before_initialize_is_not_initialized_and_the_server_keeps_serving(
    server: tuple[RawPipe, Path],
) -> None:
    client, tmp_path = server
    client.send({"jsonrpc": "2.0", "id": "early", "method": "shutdown"})
    assert error_of(client.reply_to("early"))["code"] == -32002
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})  # dropped
    assert error_of(client.probe("before"))["code"] == -32002
    initialize(client, make_workspace(tmp_path / "ws", git=False))
    assert "result" in client.probe("served")
    client.send({"jsonrpc": "2.0", "id": "down", "method": "shutdown"})
    assert "result" in client.reply_to("down")
    client.send({"jsonrpc": "2.0", "method": "exit"})
    assert exit_code(client) == 0


@pytest.mark.timeout(120)
def test_exit_right_behind_shutdown_lets_it_finish(server: tuple[RawPipe, Path]) -> None:
    client, tmp_path = server
    initialize(client, make_workspace(tmp_path / "ws", git=False))
    client.write(
        wire.encode({"jsonrpc": "2.0", "id": "down", "method": "shutdown"})
        + wire.encode({"jsonrpc": "2.0", "method": "exit"})
    )
    assert "result" in client.reply_to("down")
    assert exit_code(client) == 0
    log = (tmp_path / "stderr.log").read_text(errors="replace")
    assert "Traceback" not in log, log


def test_exit_without_shutdown_exits_with_1(server: tuple[RawPipe, Path]) -> None:
    client, _ = server
    client.probe("alive")
    client.send({"jsonrpc": "2.0", "method": "exit"})
    assert exit_code(client) == 1


def test_stderr_has_no_traceback_for_bad_input(server: tuple[RawPipe, Path]) -> None:
    client, tmp_path = server
    for body, _ in MALFORMED.values():
        client.write(wire.frame(body))
    client.write(b"Content-Length: 1000000000000\r\n\r\n")
    client.probe("after")
    client.process.stdin.close()  # type: ignore[union-attr]
    assert exit_code(client) == 0
    log = (tmp_path / "stderr.log").read_text(errors="replace")
    assert "Traceback" not in log, log
    assert re.search(r"too large|limit", log), log
