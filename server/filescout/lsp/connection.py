"""One editor's connection, on stdio or TCP: frames in (framing.py), each checked
(messages.py), LSP's lifecycle applied, and what is left handed to pygls through
`handle_message`; every refusal is answered.

It replaces pygls's own reading loop, which answers nothing it cannot parse. The lifecycle rules
are LSP's: before `initialize`, requests get -32002 and notifications are dropped; once
`shutdown` has arrived, requests get -32600 and notifications are dropped; `exit` ends the
connection with 0 after `shutdown` and 1 without."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import Executor, Future
from typing import Any

import attrs
import cattrs
from cattrs.errors import ClassValidationError
from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, lsp_method

from filescout.lsp.framing import Frame, FrameError, FrameParser, read_frame
from filescout.lsp.messages import Checked, Ignored, Incoming, MsgId, Refusal, check
from filescout.lsp.partial_results import FramingProtocol, write_framed
from filescout.lsp.stdio import READ_CHUNK
from filescout.rpc.jsonrpc import parse, valid_id
from filescout_protocol.types import ErrorCode

log = logging.getLogger(__name__)

INTERNAL_ERROR_MESSAGE_LIMIT = 200
SEE_LOG = "details in the server's log"
SHUTDOWN_GRACE = 10.0


class CheckedProtocol(FramingProtocol):
    """pygls's protocol with what the connection needs to know: the converter (to structure
    checked messages), the ids of the server's own requests still unanswered (to recognise their
    responses), and replies to internal errors that keep the traceback in the log."""

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self.converter = converter
        self.awaiting: set[MsgId] = set()
        self._watched: dict[MsgId, asyncio.Event] = {}

    def watch_reply(self, msg_id: MsgId) -> asyncio.Event:
        """An event set once the reply to this request has been sent."""
        return self._watched.setdefault(msg_id, asyncio.Event())

    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Callable[[Any], None] | None = None,
        msg_id: MsgId | None = None,
    ) -> Future[Any]:
        msg_id = str(uuid.uuid4()) if msg_id is None else msg_id
        self.awaiting.add(msg_id)
        return super().send_request(method, params, callback, msg_id)

    def _execute_handler(
        self,
        msg_id: MsgId,
        handler: Callable[..., Any],
        callback: Callable[[Future[Any]], None],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls files each handler's future under a message id, but only a request's reply
        takes it out again: a notification's (and each step of a built-in handler's) would stay
        for the life of the connection, some 3 KB for every didOpen, didChange or didSave. So
        the futures already done are dropped before each new one is filed (a sweep rather than
        a done-callback: pygls cancels these futures while iterating over them at shutdown)."""
        futures = self._request_futures
        for done in [key for key, future in futures.items() if future.done()]:
            del futures[done]
        super()._execute_handler(msg_id, handler, callback, args, kwargs)

    def _run_generator(
        self, future: Future[Any] | None, *, gen: Generator[Any, Any, Any], result_future: Future[Any]
    ) -> None:
        """A built-in handler (a command's, say) waits for the task it handed the work to; once
        the request is cancelled pygls drops that task's outcome unread, and asyncio logs a
        failed one's traceback. Read here: the client asked for no answer."""
        if result_future.cancelled() and future is not None and future.done() and not future.cancelled():
            future.exception()
        super()._run_generator(future, gen=gen, result_future=result_future)

    def _handle_response(
        self, msg_id: MsgId, result: Any | None = None, error: types.ResponseError | None = None
    ) -> None:
        """An answer to a request the server no longer waits for (the task that sent it was
        cancelled, say by `shutdown` closing the workspace) is dropped: pygls would set the
        result of the cancelled future and log `InvalidStateError: CANCELLED`."""
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            del self._request_futures[msg_id]
            log.debug("dropped the answer to request %s, which nobody waits for any more", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls's own, cancelling what is still under way from a copy of the futures: cancelling
        one runs its callbacks at once, which take futures out of the dict being walked (a
        `shutdown` that came while `initialize` was under way failed with a RuntimeError)."""
        current_id = self.msg_id
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    def _send_response(
        self, msg_id: MsgId, result: Any | None = None, error: types.ResponseError | None = None
    ) -> None:
        """pygls puts the traceback of an unexpected exception in the reply's `data`; it has
        already logged it, so the client gets a short message instead."""
        if error is not None and error.code == JsonRpcInternalError.CODE and error.data is not None:
            first_line = error.message.splitlines()[0] if error.message else "unexpected error"
            error = types.ResponseError(
                code=error.code,
                message=f"internal error: {first_line[:INTERNAL_ERROR_MESSAGE_LIMIT]} ({SEE_LOG})",
            )
        super()._send_response(msg_id, result, error)
        if (replied := self._watched.pop(msg_id, None)) is not None:
            replied.set()


FrameSource = Callable[[], Awaitable[Frame | None]]


class Connection:
    """Serves frames from `next_frame` on the event loop, one at a time, in order."""

    def __init__(self, protocol: CheckedProtocol, next_frame: FrameSource) -> None:
        self.protocol = protocol
        self._next_frame = next_frame
        self.initialize_received = False
        self.shutdown_received = False
        self._shutdown_replied: asyncio.Event | None = None

    async def run(self) -> int:
        """Serve until `exit` (its exit code) or the end of input (0)."""
        while (frame := await self._next_frame()) is not None:
            if isinstance(frame, FrameError):
                self.reply(Refusal(frame.code, frame.message))
                continue
            value = parse(frame)
            exit_code = self.receive(
                value if isinstance(value, Refusal) else check(value, self.protocol.awaiting)
            )
            if exit_code is not None:
                await self.finish_shutdown()
                return exit_code
        return 0

    async def finish_shutdown(self) -> None:
        """An `exit` right behind `shutdown` waits (briefly) for the engine to close, rather
        than cancel the closing half-way."""
        if self._shutdown_replied is not None:
            try:
                await asyncio.wait_for(self._shutdown_replied.wait(), SHUTDOWN_GRACE)
            except asyncio.TimeoutError:
                log.warning("exit before shutdown finished (waited %.0f s)", SHUTDOWN_GRACE)

    def receive(self, checked: Checked) -> int | None:
        """Serve one message; an exit code when it was `exit`."""
        if isinstance(checked, Incoming) and checked.method == types.EXIT and not checked.is_request:
            return 0 if self.shutdown_received else 1
        if isinstance(checked, Incoming):
            checked = self.admit(checked)
        outcome = self.deliver(checked) if isinstance(checked, Incoming) else checked
        if isinstance(outcome, Refusal):
            self.reply(outcome)
        elif isinstance(outcome, Ignored):
            log.info("ignored a message from the client: %s", outcome.reason)
        return None

    def admit(self, message: Incoming) -> Checked:
        """LSP's lifecycle: what may arrive before `initialize` and after `shutdown`."""
        method, request = message.method, message.is_request
        if method is None:
            self.protocol.awaiting.discard(message.msg_id or "")
            # After `shutdown` nothing waits for an answer: pygls would warn of a request.
            return Ignored("a response after shutdown") if self.shutdown_received else message
        if self.shutdown_received:
            if request:
                return Refusal(JsonRpcInvalidRequest.CODE, f"{method}: shutting down", message.msg_id)
            return Ignored(f"{method} after shutdown")
        if not self.initialize_received and method != types.INITIALIZE:
            if request:
                return Refusal(ErrorCode.SERVER_NOT_INITIALIZED, "server not initialized", message.msg_id)
            return Ignored(f"{method} before initialize")
        if method == types.INITIALIZE and self.initialize_received:
            return Refusal(JsonRpcInvalidRequest.CODE, "initialize may be sent only once", message.msg_id)
        return message

    def deliver(self, message: Incoming) -> Checked | None:
        """Structure the message as pygls's handlers expect it and hand it over."""
        structured = self.structure(message)
        if isinstance(structured, (Refusal, Ignored)):
            return structured
        if message.method == types.INITIALIZE:
            self.initialize_received = True
        elif message.method == types.SHUTDOWN:
            self.shutdown_received = True
            self._shutdown_replied = self.protocol.watch_reply(message.msg_id or "")
        try:
            self.protocol.handle_message(structured)
        except Exception:  # pygls answers handlers' errors itself; this is a fault of its own
            log.exception("could not handle %s", message.method or "a response")
            if message.is_request:
                return Refusal(JsonRpcInternalError.CODE, f"internal error ({SEE_LOG})", message.msg_id)
        return None

    def structure(self, message: Incoming) -> Any:
        """The message as the attrs class pygls dispatches on; -32602 when its params do not fit
        the LSP type of its method."""
        if message.method is None:
            try:
                return self.protocol.structure_message(message.data)  # pygls knows the result's type
            except Exception as exc:
                return Ignored(f"a malformed response to request {message.msg_id!r}: {describe(exc)}")
        kind = self.protocol.get_message_type(message.method)
        if message.is_request and kind is not None and is_notification(kind):
            problem = f"invalid request: {message.method} is a notification; send it without an id"
            return Refusal(JsonRpcInvalidRequest.CODE, problem, message.msg_id)
        if message.method == types.CANCEL_REQUEST and not cancels_an_id(message.data.get("params")):
            return Ignored("invalid params for $/cancelRequest: id must be an integer or a string")
        generic = JsonRPCRequestMessage if message.is_request else JsonRPCNotification
        kind = kind or generic
        try:
            return self.protocol.converter.structure(message.data, kind)
        except Exception as exc:  # whatever the converter raises, the params did not fit
            problem = f"invalid params for {message.method}: {describe(exc)}"
        if message.is_request:
            return Refusal(JsonRpcInvalidParams.CODE, problem, message.msg_id)
        return Ignored(problem)

    def reply(self, reply: Refusal) -> None:
        level = logging.INFO if reply.code == ErrorCode.SERVER_NOT_INITIALIZED else logging.WARNING
        log.log(level, "answered a message with error %d: %s", reply.code, reply.message)
        error = {"code": int(reply.code), "message": reply.message}
        body = json.dumps({"jsonrpc": "2.0", "id": reply.msg_id, "error": error})
        write_framed(self.protocol, body.encode("utf-8"))


def is_notification(kind: type[Any]) -> bool:
    """Whether an LSP message type is a notification (it has no id): one sent with an id would
    get no reply from pygls, so the client would wait for ever."""
    return attrs.has(kind) and "id" not in attrs.fields_dict(kind)


def cancels_an_id(params: Any) -> bool:
    """The converter lets any JSON through as the id to cancel; pygls then looks it up in a
    dict, and a list or an object there raises."""
    return isinstance(params, dict) and valid_id(params.get("id"))


def describe(exc: Exception) -> str:
    """A converter's error as `field: problem`, without the traceback."""
    if not isinstance(exc, ClassValidationError):
        return str(exc) or type(exc).__name__
    problems = []
    for line in cattrs.transform_error(exc):
        problem, _, where = line.rpartition(" @ ")
        field = where.removeprefix("$").removeprefix(".params").lstrip(".") or "params"
        problems.append(f"{field}: {problem}")
    return "; ".join(problems)


def threaded_frames(read_chunk: Callable[[], bytes], executor: Executor) -> FrameSource:
    """Frames from a blocking source (stdin), read in a worker thread. Frames already read (a
    burst arrives in one chunk) are taken at once: a trip through the thread would make each
    wait a turn of the event loop, behind every step of the requests served before it."""
    parser = FrameParser()

    def next_frame() -> Awaitable[Frame | None]:
        loop = asyncio.get_running_loop()
        if (frame := parser.next()) is not None:  # the thread reads only while this awaits it
            buffered: asyncio.Future[Frame | None] = loop.create_future()
            buffered.set_result(frame)
            return buffered
        return loop.run_in_executor(executor, read_frame, parser, read_chunk)

    return next_frame


def stream_frames(reader: asyncio.StreamReader) -> FrameSource:
    """Frames from an asyncio stream (a TCP connection)."""
    parser = FrameParser()

    async def next_frame() -> Frame | None:
        while (frame := parser.next()) is None:
            chunk = await reader.read(READ_CHUNK)
            if not chunk:
                return None
            parser.feed(chunk)
        return frame

    return next_frame


def serve_stdio(protocol: CheckedProtocol, read_chunk: Callable[[], bytes], executor: Executor) -> int:
    """Run one connection on a new event loop; its exit code."""
    try:
        return asyncio.run(Connection(protocol, threaded_frames(read_chunk, executor)).run())
    except KeyboardInterrupt:
        return 0


async def serve_tcp(protocol: CheckedProtocol, host: str, port: int) -> int:
    """Listen on host:port and serve the first client to connect; its exit code."""
    finished: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def serve_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if finished.done() or protocol.writer is not None:
            writer.close()  # one editor per server, as on stdio
            return
        protocol.set_writer(writer)
        code = await Connection(protocol, stream_frames(reader)).run()
        if not finished.done():
            finished.set_result(code)

    listener = await asyncio.start_server(serve_client, host, port)
    async with listener:
        log.info("serving on %s", ", ".join(str(sock.getsockname()) for sock in listener.sockets))
        return await finished
