"""A fast path for large partial results.

pygls serializes every outgoing message through cattrs and the standard json module, which
walks each of 100K streamed items in Python. Partial results are plain msgspec Structs, so this
encodes the whole `$/progress` message with msgspec (in C) and hands the bytes to pygls's own
writer, with the same LSP framing."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Any

import msgspec
from lsprotocol import types
from pygls.lsp.server import LanguageServer

_encoder = msgspec.json.Encoder()


def send_partial_result(server: LanguageServer, token: str | int, items: Sequence[Any]) -> None:
    protocol = server.protocol
    writer = protocol.writer
    if writer is None or not protocol._include_headers:  # noqa: SLF001 - e.g. websockets
        server.progress(types.ProgressParams(token=token, value=msgspec.to_builtins(items)))
        return
    body = _encoder.encode({"jsonrpc": "2.0", "method": "$/progress",
                            "params": {"token": token, "value": items}})
    header = (f"Content-Length: {len(body)}\r\n"
              f"Content-Type: {protocol.CONTENT_TYPE}; charset={protocol.CHARSET}\r\n\r\n").encode()
    written = writer.write(header + body)
    if inspect.isawaitable(written):
        asyncio.ensure_future(written)
