"""The two ends of the stdio connection, made so that losing the editor ends the server quietly.

An editor that goes away closes the pipe the server writes to, but the pipe the server reads
from may stay open: a process the editor started can inherit and hold it. pygls would then log a
traceback for every message it fails to send and keep waiting for input forever. Here a write to
a closed pipe is dropped, logged once, and ends the input as if the editor had closed it, so the
server stops the way it does after end of file (and serve() stops the engine's threads)."""

from __future__ import annotations

import errno
import logging
import os
import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import BinaryIO

log = logging.getLogger(__name__)

READ_CHUNK = 65536
# A pipe with no reader: EPIPE; on Windows, a write to it may fail with EINVAL instead.
DISCONNECT_ERRNOS = frozenset(
    {errno.EPIPE, errno.ECONNRESET} | ({errno.EINVAL} if os.name == "nt" else set())
)


def is_disconnect(error: OSError) -> bool:
    """Whether a failed write means the reading end is gone (not, say, a full disk)."""
    return isinstance(error, ConnectionError) or error.errno in DISCONNECT_ERRNOS


class ClientStdin:
    """stdin for the frame reader (connection.py) that `end()` can close from any thread.

    A daemon thread moves bytes from the descriptor (`os.read`, which holds no Python lock) into
    a queue; the reader's thread takes them from there (`read_chunk`, or `readline` and `read`
    as pygls's own reader would). So a read still blocked on a pipe that
    someone holds open neither stops the reader from ending nor the process from exiting."""

    def __init__(self, fd: int) -> None:
        self._chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._buffer = bytearray()
        self._at_end = False
        threading.Thread(target=self._pump, args=(fd,), name="filescout-stdin", daemon=True).start()

    def _pump(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError:
                chunk = b""
            self._chunks.put(chunk)
            if not chunk:
                return

    def end(self) -> None:
        """Make the reader see end of file once it has consumed what already arrived."""
        self._chunks.put(b"")

    def _fill(self) -> bool:
        if self._at_end:
            return False
        chunk = self._chunks.get()
        if not chunk:
            self._at_end = True
            return False
        self._buffer += chunk
        return True

    def _take(self, size: int) -> bytes:
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    def read_chunk(self) -> bytes:
        """Whatever has arrived (waiting for at least one byte), or b"" at end of input."""
        if not self._buffer:
            self._fill()
        return self._take(len(self._buffer))

    def readline(self) -> bytes:
        while (newline := self._buffer.find(b"\n")) < 0 and self._fill():
            pass
        return self._take(len(self._buffer) if newline < 0 else newline + 1)

    def read(self, size: int) -> bytes:
        while len(self._buffer) < size and self._fill():
            pass
        return self._take(size)


class ClientStdout:
    """stdout for pygls's writer: once the editor has closed the pipe, messages are dropped and
    `on_lost` runs (once) instead of a BrokenPipeError reaching pygls, which would log it with
    a traceback for this message and for every later one."""

    def __init__(self, stream: BinaryIO, on_lost: Callable[[], None]) -> None:
        self._stream = stream
        self._on_lost = on_lost
        self.lost = False

    def write(self, data: bytes) -> int:
        if not self.lost:
            try:
                return self._stream.write(data)
            except OSError as error:
                if not is_disconnect(error):
                    raise
                self._lose(error)
        return len(data)

    def flush(self) -> None:
        if not self.lost:
            try:
                self._stream.flush()
            except OSError as error:
                if not is_disconnect(error):
                    raise
                self._lose(error)

    def close(self) -> None:
        if not self.lost:
            self._stream.close()

    def _lose(self, error: OSError) -> None:
        self.lost = True  # first: the log line below is also forwarded to the editor
        self._discard_unsent()
        log.warning("the editor closed the connection (%s); shutting down", error.strerror)
        self._on_lost()

    def _discard_unsent(self) -> None:
        """Point the descriptor at the null device, so that the bytes left in the stream's buffer
        do not raise again when the interpreter flushes stdout at exit."""
        try:
            fd = self._stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
        except (AttributeError, OSError, ValueError):
            return
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)


def chunk_reader(stream: ClientStdin | BinaryIO) -> Callable[[], bytes]:
    """A blocking read of whatever has arrived, for the frame reader: `read1` on a buffered
    stream, so that a short message is not held back waiting for a full chunk."""
    if isinstance(stream, ClientStdin):
        return stream.read_chunk
    read1 = getattr(stream, "read1", None)
    return partial(read1 if read1 is not None else stream.read, READ_CHUNK)
