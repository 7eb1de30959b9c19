"""Partial results (LSP `partialResultToken`) and their fast path.

Batches go out as list-valued `$/progress` notifications, and the final response holds only
what was not streamed. pygls serializes every outgoing message through cattrs and the standard
json module, which walks each of 100K streamed items in Python. Partial results are plain msgspec
Structs, so the whole notification is encoded with msgspec (in C) and handed to the protocol's
writer (`protocol.writer`, set through the public `set_writer`) with the framing pygls uses for
its own messages; a unit test holds the two to the same shape."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from filescout_protocol.types import FindRelevantResult

if TYPE_CHECKING:
    from pygls.io_ import AsyncWriter, Writer

    from filescout.engine.answers import FindUpdate
    from filescout.lsp.progress import ClientProgress

_encoder = msgspec.json.Encoder()
_pending_writes: set[asyncio.Future[Any]] = set()
"""Writes of an asynchronous transport under way (kept so none is collected mid-write)."""

Token = str | int


class FramingProtocol(LanguageServerProtocol):
    """Remembers whether the transport frames messages with headers (stdio and TCP do,
    websockets do not): pygls takes it as an argument of `set_writer` and keeps it private."""

    framed = False

    def set_writer(self, writer: AsyncWriter | Writer, include_headers: bool = True) -> None:
        super().set_writer(writer, include_headers)
        self.framed = include_headers


def frame(protocol: LanguageServerProtocol, body: bytes) -> bytes:
    """An encoded message with the LSP base-protocol header, as pygls writes its own."""
    header = (
        f"Content-Length: {len(body)}\r\n"
        f"Content-Type: {protocol.CONTENT_TYPE}; charset={protocol.CHARSET}\r\n\r\n"
    )
    return header.encode("ascii") + body


def send_partial_result(server: LanguageServer, token: Token, items: Sequence[Any]) -> None:
    """One batch of a partial result; transports without framing take pygls's own path."""
    protocol = server.protocol
    writer = protocol.writer
    if writer is None or not (isinstance(protocol, FramingProtocol) and protocol.framed):
        server.progress(types.ProgressParams(token=token, value=msgspec.to_builtins(items)))
        return
    body = _encoder.encode(
        {"jsonrpc": "2.0", "method": types.PROGRESS, "params": {"token": token, "value": items}}
    )
    write_framed(protocol, body)


def write_framed(protocol: LanguageServerProtocol, body: bytes) -> None:
    """Put an encoded message on the protocol's writer, framed, as one write."""
    writer = protocol.writer
    if writer is None:
        return
    written = writer.write(frame(protocol, body))
    if inspect.isawaitable(written):
        pending = asyncio.ensure_future(written)
        _pending_writes.add(pending)
        pending.add_done_callback(_pending_writes.discard)


async def stream_batches(
    server: LanguageServer, token: Token, batches: AsyncIterator[Sequence[Any]]
) -> list[Any]:
    """Send every batch as a partial result; the final response is then empty."""
    async with contextlib.aclosing(batches) as stream:  # type: ignore[type-var]  # an async generator
        async for batch in stream:
            send_partial_result(server, token, batch)
    return []


async def stream_relevant(
    server: LanguageServer, token: Token | None, updates: AsyncIterator[FindUpdate], progress: ClientProgress
) -> FindRelevantResult:
    """Each stage's ranking as a partial result (when asked for) and a progress report; the
    answer leaves out the items when the last ranking streamed was already the final one. The
    stages are closed once the answer is in hand: what they hold (a turn among the heavy
    requests, engine/admission.py) goes back at once, not when the stream is collected."""
    streamed: list[str] = []
    async with contextlib.aclosing(updates) as stages:  # type: ignore[type-var]  # an async generator
        async for update in stages:
            if update.done:
                paths = [item.path for item in update.items]
                return update.result([] if token is not None and paths == streamed else None)
            progress.report(f"{update.stage}: {len(update.items)} files")
            if token is not None and update.items:
                send_partial_result(server, token, update.items)
                streamed = [item.path for item in update.items]
    raise AssertionError("the relevance stages ended without an answer")
