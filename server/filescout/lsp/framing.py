"""LSP's base-protocol framing (`Content-Length` headers, then a body), read defensively.

pygls's reader trusts the header: a huge length makes it allocate the whole body, and a header it
cannot parse (negative, not a number, missing, LF line endings) leaves it waiting for a frame
that never comes, deaf for the rest of the connection. This parser bounds every frame, says what
was wrong with a bad one, and then resynchronises on the next `Content-Length:` header, so one
bad frame costs one error reply. It holds no I/O of its own: `feed` it bytes, ask it for `next`."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pygls.exceptions import JsonRpcInvalidRequest, JsonRpcParseError

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 16 * 1024 * 1024
"""The largest body the server reads (16 MiB); a larger frame is skipped unread."""
MAX_HEADER_LINE = 8192
MAX_HEADERS = 32
_HEADER = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*\r?\n")
_NEXT_FRAME = re.compile(rb"content-length:", re.IGNORECASE)
_DIGITS = re.compile(rb"[0-9]{1,12}")


@dataclass(frozen=True)
class FrameError:
    """A frame that was refused: the error to answer it with (its id is unknown, so null)."""

    code: int
    message: str


Frame = bytes | FrameError


class FrameParser:
    """Turns a byte stream into bodies and errors. Between frames it is either reading headers
    or, after a bad frame, skipping to the next `Content-Length:` it can find."""

    def __init__(self, limit: int = MAX_FRAME_BYTES) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._headers: dict[bytes, bytes] = {}
        self._length: int | None = None  # set while a body is being read
        self._skipping = False
        self.skipped = 0  # bytes thrown away since the last resynchronisation began

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def inside_frame(self) -> bool:
        """Whether end of input now would cut a message short."""
        return bool(self._buffer.strip() or self._headers or self._length is not None)

    def next(self) -> Frame | None:
        """The next body or error, or None until more bytes arrive."""
        while True:
            if self._skipping and not self._skip():
                return None
            if self._length is not None:
                return self._body()
            outcome = self._header_line()
            if outcome is not True:
                return outcome

    def _body(self) -> bytes | None:
        assert self._length is not None
        if len(self._buffer) < self._length:
            return None
        body = bytes(self._buffer[: self._length])
        del self._buffer[: self._length]
        self._length = None
        return body

    def _header_line(self) -> FrameError | Literal[True] | None:
        """Consume one header line: True to go on, None for more bytes, or an error."""
        end = self._buffer.find(b"\n", 0, MAX_HEADER_LINE)
        if end < 0:
            if len(self._buffer) < MAX_HEADER_LINE:
                return None
            del self._buffer[:1]  # so that skipping cannot stop at this same header again
            return self._reject(JsonRpcParseError.CODE, "a message header line is too long")
        line = bytes(self._buffer[: end + 1])
        match = _HEADER.fullmatch(line)
        if match is None and line.strip():
            # Not consumed: the next frame's header may follow the rest of a short body on this line.
            what = "bytes that are not a message header" if not self._headers else "a malformed header"
            return self._reject(JsonRpcParseError.CODE, f"expected a Content-Length header, got {what}")
        del self._buffer[: end + 1]
        if match is None:
            return self._end_of_headers() if self._headers else True  # blank lines between frames
        name, value = match.group(1).lower(), match.group(2)
        if self._headers.get(name, value) != value or len(self._headers) >= MAX_HEADERS:
            return self._reject(JsonRpcParseError.CODE, "conflicting or too many message headers")
        self._headers[name] = value
        return True

    def _end_of_headers(self) -> FrameError | Literal[True]:
        value = self._headers.pop(b"content-length", None)
        self._headers.clear()
        if value is None:
            return self._reject(JsonRpcParseError.CODE, "the message has no Content-Length header")
        if not _DIGITS.fullmatch(value):
            if re.fullmatch(rb"[0-9]+", value):
                return self._too_large(value.decode("ascii"))
            shown = value[:40].decode("ascii", "replace")
            return self._reject(JsonRpcParseError.CODE, f"invalid Content-Length: {shown!r}")
        length = int(value)
        if length > self._limit:
            return self._too_large(str(length))
        self._length = length
        return True

    def _too_large(self, length: str) -> FrameError:
        shown = length if len(length) <= 20 else f"{length[:20]}..."
        return self._reject(
            JsonRpcInvalidRequest.CODE,
            f"message too large: Content-Length {shown} is over the limit of {self._limit} bytes",
        )

    def _reject(self, code: int, message: str) -> FrameError:
        """Refuse the frame being read and skip what is left of it."""
        self._headers.clear()
        self._skipping = True
        self.skipped = 0
        return FrameError(code, message)

    def _skip(self) -> bool:
        """Drop bytes up to the next `Content-Length:`; whether it was found. Keeps only a
        header's length of what it drops, so a huge frame never sits in memory."""
        match = _NEXT_FRAME.search(self._buffer)
        if match is None:
            keep = len(_NEXT_FRAME.pattern) - 1
            drop = max(len(self._buffer) - keep, 0)
            del self._buffer[:drop]
            self.skipped += drop
            return False
        del self._buffer[: match.start()]
        self.skipped += match.start()
        self._skipping = False
        if self.skipped:
            log.info("skipped %d bytes to the next message", self.skipped)
        return True


def read_frame(parser: FrameParser, read_chunk: Callable[[], bytes]) -> Frame | None:
    """The next frame from a blocking source; None at end of input."""
    while (frame := parser.next()) is None:
        chunk = read_chunk()
        if not chunk:
            if parser.inside_frame():
                log.info("the input ended inside a message")
            return None
        parser.feed(chunk)
    return frame
