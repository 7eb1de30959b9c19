"""The server's own transport pieces, in process: the msgspec fast path for partial results must
put on the wire what pygls would, and the stdio ends must turn a vanished editor into end of
input."""

from __future__ import annotations

import io
import json
import os
import threading
from typing import Any

import msgspec
import pytest
from lsprotocol import types

from filescout.lsp.server import FilescoutServer, create_server
from filescout.lsp.stdio import ClientStdin, ClientStdout
from filescout.lsp.wire import send_partial_result
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
        os.close(write_fd)
        os.close(read_fd)


def test_stdin_returns_what_is_left_at_end_of_file() -> None:
    read_fd, write_fd = os.pipe()
    stdin = ClientStdin(read_fd)
    os.write(write_fd, b"partial")
    os.close(write_fd)
    assert stdin.readline() == b"partial"
    assert stdin.readline() == b""
    os.close(read_fd)


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
