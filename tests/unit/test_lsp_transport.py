"""The server's own transport pieces, in process: the msgspec fast path for partial results must
put on the wire what pygls would, the stdio ends must turn a vanished editor into end of input,
and the frame reader and message checks must refuse bad input with one error each."""

from __future__ import annotations

import asyncio
import gc
import io
import json
import os
import threading
from typing import Any

import msgspec
import pytest
from lsprotocol import types

from filescout.lsp.app import create_server
from filescout.lsp.connection import CheckedProtocol, Connection
from filescout.lsp.framing import Frame, FrameError, FrameParser
from filescout.lsp.messages import check
from filescout.lsp.partial_results import send_partial_result
from filescout.lsp.progress import ClientProgress, WorkDoneProgress
from filescout.lsp.server import FilescoutServer
from filescout.lsp.stdio import ClientStdin, ClientStdout
from filescout.rpc.jsonrpc import unpaired_surrogate
from filescout_protocol.types import FileItem

ITEMS = [
    FileItem(
        path="src/shop/cart.py",
        summary="Shopping cart: totals with discounts — über",
        tags=["cart", "discount"],
        language="python",
        kind="source",
        size=120,
        mtime=1_700_000_000_000,
        status="annotated",
        annotator="structural/1",
    ),
    FileItem(
        path="README.md",
        summary="",
        tags=[],
        language=None,
        kind="docs",
        size=9,
        mtime=1_700_000_000_001,
        status="pending",
        annotator=None,
    ),
]


class RecordingWriter:
    """pygls's synchronous writer interface, keeping every write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        pass


def split_frame(data: bytes) -> tuple[list[tuple[str, str]], bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    fields = [tuple(line.split(": ", 1)) for line in head.decode("ascii").split("\r\n")]
    return fields, body  # type: ignore[return-value]


def two_ways(server: FilescoutServer) -> tuple[bytes, bytes]:
    """The same partial result, through pygls's own send path and through the fast path."""
    writer = server.protocol.writer
    assert isinstance(writer, RecordingWriter)
    server.progress(types.ProgressParams(token="stream-1", value=msgspec.to_builtins(ITEMS)))
    send_partial_result(server, "stream-1", ITEMS)
    assert len(writer.writes) == 2, "each message must be one write"
    return writer.writes[0], writer.writes[1]


def test_fast_path_frames_partial_results_as_pygls_frames_its_messages() -> None:
    server = create_server()
    server.protocol.set_writer(RecordingWriter())  # what start_io and start_tcp do
    theirs, ours = two_ways(server)
    their_fields, their_body = split_frame(theirs)
    our_fields, our_body = split_frame(ours)
    assert [name for name, _ in our_fields] == [name for name, _ in their_fields]
    assert dict(our_fields)["Content-Type"] == dict(their_fields)["Content-Type"]
    assert int(dict(their_fields)["Content-Length"]) == len(their_body)
    assert int(dict(our_fields)["Content-Length"]) == len(our_body)  # bytes, not characters
    assert json.loads(our_body) == json.loads(their_body)


def test_unframed_transport_gets_pygls_own_encoding() -> None:
    server = create_server()
    server.protocol.set_writer(RecordingWriter(), include_headers=False)  # as for websockets
    theirs, ours = two_ways(server)
    assert not ours.startswith(b"Content-Length")
    assert json.loads(ours) == json.loads(theirs)


def test_stdio_server_takes_the_fast_path() -> None:
    """pygls must hand the stdio writer over through `set_writer`, with headers."""
    server = create_server()
    server.start_io(io.BytesIO(b""), io.BytesIO())  # end of input at once
    assert server.protocol.framed
    assert server.protocol.writer is not None


def test_stdin_reads_messages_and_ends_on_request() -> None:
    read_fd, write_fd = os.pipe()
    try:
        stdin = ClientStdin(read_fd)
        os.write(write_fd, b"Content-Length: 5\r\n\r\nhel")
        assert stdin.readline() == b"Content-Length: 5\r\n"
        assert stdin.readline() == b"\r\n"
        threading.Timer(0.1, os.write, (write_fd, b"lo")).start()
        assert stdin.read(5) == b"hello"
        stdin.end()  # the writing end is still open: only end() can stop the reader
        assert stdin.readline() == b""
        assert stdin.read(3) == b""
    finally:
        close_pipe(read_fd, write_fd)


def close_pipe(read_fd: int, write_fd: int | None) -> None:
    """Close a pipe a ClientStdin reads only once its reading thread has seen the end: a thread
    still to call `os.read` on a closed descriptor would read whatever the next test's pipe,
    given the same number, holds."""
    if write_fd is not None:
        os.close(write_fd)
    for thread in threading.enumerate():
        if thread.name == "filescout-stdin":
            thread.join(timeout=10)
    os.close(read_fd)


def test_stdin_returns_what_is_left_at_end_of_file() -> None:
    read_fd, write_fd = os.pipe()
    stdin = ClientStdin(read_fd)
    os.write(write_fd, b"partial")
    try:
        os.close(write_fd)
        assert stdin.readline() == b"partial"
        assert stdin.readline() == b""
    finally:
        close_pipe(read_fd, None)  # its writing end is closed above


def test_stdout_without_reader_drops_messages_and_reports_once() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    lost: list[Any] = []
    stream = os.fdopen(write_fd, "wb")
    stdout = ClientStdout(stream, on_lost=lambda: lost.append(True))
    for _ in range(3):
        stdout.write(b"Content-Length: 2\r\n\r\n{}")
        stdout.flush()
    assert stdout.lost
    assert lost == [True]
    stream.close()  # what was left unsent now goes to the null device: no error


def test_stdout_other_errors_still_raise() -> None:
    class Full(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: Any) -> int:
            raise OSError(28, "No space left on device")

    stdout = ClientStdout(Full(), on_lost=lambda: pytest.fail("not a lost connection"))
    with pytest.raises(OSError):
        stdout.write(b"x")


# Framing and the checks before pygls


def frames_of(parser: FrameParser, data: bytes, chunk: int) -> list[Frame]:
    out: list[Frame] = []
    for start in range(0, len(data), chunk):
        parser.feed(data[start : start + chunk])
        while (frame := parser.next()) is not None:
            out.append(frame)
    return out


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_frames_split_anywhere_read_the_same(chunk: int) -> None:
    data = b"Content-Length: 2\r\n\r\n{}content-length:3\nContent-Type: x\n\n[1]\r\n\r\nContent-Length: 1\r\n\r\n1"
    assert frames_of(FrameParser(), data, chunk) == [b"{}", b"[1]", b"1"]


@pytest.mark.parametrize(
    "bad",
    [
        b"Content-Length: -1\r\n\r\n{}",
        b"Content-Length: 1e3\r\n\r\n{}",
        b"Content-Type: x\r\n\r\n{}",
        b"{}\r\n",
    ],
)
def test_a_bad_frame_is_one_error_then_the_next_frame(bad: bytes) -> None:
    frames = frames_of(FrameParser(), bad + b"Content-Length: 2\r\n\r\n{}", 5)
    assert [type(frame) for frame in frames] == [FrameError, bytes]
    assert frames[-1] == b"{}"


def test_an_oversized_frame_is_skipped_unread() -> None:
    parser = FrameParser(limit=100)
    body = b'{"x": "' + b"a" * 10_000 + b'"}'
    frames = frames_of(
        parser, b"Content-Length: %d\r\n\r\n%s" % (len(body), body) + b"Content-Length: 2\r\n\r\n{}", 512
    )
    assert frames[0] == FrameError(
        -32600, "message too large: Content-Length 10009 is over the limit of 100 bytes"
    )
    assert frames[1:] == [b"{}"]
    huge = frames_of(FrameParser(), b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n", 64)
    assert [frame.code for frame in huge if isinstance(frame, FrameError)] == [-32600]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"glob": ["a", "b\ud800"]}, "glob[1]"),
        ({"arguments": [{"paths": ["\udfff"]}]}, "arguments[0].paths[0]"),
        ({"\ud800": 1}, "a field name in params"),
        ({"query": "fine \U0001f600"}, None),
    ],
)
def test_unpaired_surrogates_are_found_by_path(value: Any, expected: str | None) -> None:
    assert unpaired_surrogate(value) == expected


def test_an_internal_error_reply_carries_no_traceback() -> None:
    server = create_server()
    writer = RecordingWriter()
    server.protocol.set_writer(writer)
    server.feature("test/fails")(lambda ls, params: 1 / 0)
    assert isinstance(server.protocol, CheckedProtocol)
    connection = Connection(server.protocol, next_frame=lambda: asyncio.sleep(0))
    connection.initialize_received = True
    message = {"jsonrpc": "2.0", "id": 3, "method": "test/fails", "params": {}}
    connection.receive(check(message, set()))
    (reply,) = [json.loads(split_frame(data)[1]) for data in writer.writes]
    assert reply["id"] == 3
    assert reply["error"]["code"] == -32603
    assert "ZeroDivisionError" in reply["error"]["message"]
    assert "data" not in reply["error"] or not reply["error"]["data"]


def test_work_done_progress_tokens_are_released_when_they_end() -> None:
    """pygls keeps a future per token that began; one per indexing pass and per request that
    brought a token would pile up for the life of the connection."""
    server = create_server()
    server.protocol.set_writer(RecordingWriter())
    for index in range(3):
        client = ClientProgress(server, f"client-{index}", "finding relevant files")
        client.end()
        progress = WorkDoneProgress(server, f"filescout/index/{index}")
        progress.begin("indexing")
        assert not progress.is_cancelled()
        progress.end("done")
    assert server.work_done_progress.tokens == {}


async def test_a_cancelled_command_that_fails_leaves_no_exception_unread() -> None:
    """pygls runs a command as a built-in handler that waits for the command's own task; once the
    request was cancelled it dropped that task's outcome unread, and asyncio logged the
    exception's traceback for the client's cancellation."""
    server = create_server()
    writer = RecordingWriter()
    server.protocol.set_writer(writer)
    assert isinstance(server.protocol, CheckedProtocol)
    connection = Connection(server.protocol, next_frame=lambda: asyncio.sleep(0))
    connection.initialize_received = True
    unread: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: unread.append(context))
    status = {"command": "filescout.status"}  # fails: no workspace was opened
    connection.receive(
        check({"jsonrpc": "2.0", "id": 7, "method": "workspace/executeCommand", "params": status}, set())
    )
    connection.receive(check({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}}, set()))
    for _ in range(5):
        await asyncio.sleep(0)
    connection.receive(check({"jsonrpc": "2.0", "id": 8, "method": "files/getFiles", "params": {}}, set()))
    for _ in range(5):
        await asyncio.sleep(0)
    gc.collect()  # the unread task is gone: asyncio reports what nobody read
    assert unread == []
    replies = [json.loads(split_frame(data)[1]) for data in writer.writes]
    assert [reply["error"]["code"] for reply in replies if reply.get("id") == 7] == [-32800]
