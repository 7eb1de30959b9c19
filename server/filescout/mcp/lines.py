"""The lines an MCP client writes, checked against JSON-RPC 2.0 before the MCP SDK reads them.

The SDK's stdio transport drops a line it cannot validate with nothing but a debug log line: a
request whose params are not an object, whose id is fractional or holds a lone surrogate, or
whose strings hold one then waits for ever, and text that is not JSON gets no -32700. Here each
line is read (at most MAX_LINE_CHARS of it: a longer one is skipped unread, as the LSP face skips
a frame over its limit), checked, and either handed to the SDK as it is or answered with the
error it deserves, through the SDK's own writer so that replies never interleave."""

from __future__ import annotations

import io
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import IO, Any, Protocol

import anyio
import anyio.from_thread
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError

from filescout.rpc.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    Ignored,
    Incoming,
    Refusal,
    check_envelope,
    parse,
)

log = logging.getLogger(__name__)

MAX_LINE_CHARS = 16 * 1024 * 1024
"""The longest line the server reads (16 Mi characters), the LSP face's frame limit."""
SKIP_CHUNK = 1024 * 1024
JSON_WHITESPACE = " \t\r\n"
"""What may stand around a JSON value. `str.strip()` takes the separators U+001C to U+001F for
blanks too, and a line of them would go unanswered."""


def check_line(line: str) -> Refusal | Ignored | None:
    """What to do with one line; None when the SDK can take it as it is. The envelope is checked
    as on the LSP face (`rpc.jsonrpc.check_envelope`); then what only the SDK refuses."""
    if not line.strip(JSON_WHITESPACE):
        return Ignored("a blank line")
    value = parse(line)
    if isinstance(value, Refusal):
        return value
    checked = check_envelope(value, id_must_encode=True)
    if not isinstance(checked, Incoming):
        return checked
    if checked.method is None:
        return check_response(line, checked.data)
    refusal = sdk_problem(line, checked)
    if refusal is None or checked.is_request:
        return refusal
    return Ignored(f"invalid notification: {refusal.message}")


def sdk_problem(line: str, message: Incoming) -> Refusal | None:
    """Why the SDK cannot take a request (or notification) whose envelope is sound, if it cannot:
    params that are not an object, or a line its own reader refuses."""
    method = message.method
    if isinstance(message.data.get("params"), list):
        return Refusal(
            INVALID_PARAMS, f"invalid params for {method}: params must be an object", message.msg_id
        )
    reason = sdk_refusal(line)
    if reason is not None:
        return Refusal(INVALID_PARAMS, f"invalid params for {method}: {reason}", message.msg_id)
    return None


def check_response(line: str, value: dict[str, Any]) -> Refusal | Ignored | None:
    """A message without a method answers one of the server's requests, or is invalid."""
    msg_id = value.get("id")
    if msg_id is None or ("result" not in value and "error" not in value):
        return Refusal(INVALID_REQUEST, "invalid request: a request needs a method", msg_id)
    reason = sdk_refusal(line)
    return None if reason is None else Ignored(f"a malformed response to request {msg_id!r}: {reason}")


def sdk_refusal(line: str) -> str | None:
    """Why the SDK's own reader would drop the line (its JSON reader has limits of its own,
    such as how deep a value may nest), if it would."""
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        return str(first["msg"])
    return None


class CheckedStdin(io.TextIOWrapper):
    """The client's input as the SDK reads it, a line at a time, with every line checked first:
    refused lines are answered through `answer` and never reach the SDK."""

    def __init__(self, buffer: IO[bytes], answer: Callable[[Refusal], None]) -> None:
        super().__init__(buffer, encoding="utf-8", errors="replace")
        self._answer = answer

    def readline(self, size: int = -1, /) -> str:  # type: ignore[override]  # as typeshed's TextIOWrapper
        while True:
            line = super().readline(MAX_LINE_CHARS + 1)
            if not line:
                return line
            if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
                self._skip_rest_of_line()
                verdict: Refusal | Ignored | None = Refusal(
                    INVALID_REQUEST,
                    f"message too large: a line is over the limit of {MAX_LINE_CHARS} characters",
                )
            else:
                verdict = check_line(line)
            if verdict is None:
                return line
            if isinstance(verdict, Refusal):
                self._answer(verdict)
            else:
                log.info("ignored a line from the client: %s", verdict.reason)

    def _skip_rest_of_line(self) -> None:
        while (chunk := super().readline(SKIP_CHUNK)) and not chunk.endswith("\n"):
            pass


class Writer(Protocol):
    async def send(self, item: SessionMessage) -> None: ...


class Answers:
    """Refusals from the reading thread, sent through the SDK's writer once there is one."""

    def __init__(self) -> None:
        self._writer: Writer | None = None
        self._ready = anyio.Event()

    def attach(self, writer: Writer) -> None:
        self._writer = writer
        self._ready.set()

    def from_thread(self, refusal: Refusal) -> None:
        anyio.from_thread.run(self.send, refusal)

    async def send(self, refusal: Refusal) -> None:
        log.warning("answered a line with error %d: %s", refusal.code, refusal.message)
        await self._ready.wait()
        assert self._writer is not None
        error = ErrorData(code=refusal.code, message=refusal.message)
        try:
            await self._writer.send(
                SessionMessage(JSONRPCError(jsonrpc="2.0", id=refusal.msg_id, error=error))
            )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.info("could not answer a refused line: the connection is closing")


def claim_stdin() -> IO[bytes]:
    """The client's input on a private descriptor, with fd 0 reading the null device so that no
    child process (git) can take the client's bytes: what the SDK does when it reads stdin."""
    try:
        private = os.dup(0)
        null = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return sys.stdin.buffer
    try:
        os.dup2(null, 0)
    except OSError:
        os.close(private)
        return sys.stdin.buffer
    finally:
        os.close(null)
    return os.fdopen(private, "rb")


@asynccontextmanager
async def checked_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport, reading the client's lines through `CheckedStdin`."""
    answers = Answers()
    stdin = CheckedStdin(claim_stdin(), answers.from_thread)
    async with stdio_server(stdin=anyio.wrap_file(stdin)) as (read, write):
        answers.attach(write)
        yield read, write
