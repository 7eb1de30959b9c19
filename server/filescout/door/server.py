"""The door's server side: a long-running face (`filescout serve`, `filescout mcp`) listens on
the workspace's door and answers the queries a terminal command asks (findRelevant, getFiles,
getOverview, and the status command's result) with one call each on the engine, as the LSP
handlers do (protocol/PROTOCOL.md, "The door").

Before a query the engine takes in what changed on disk since it last looked (a terminal
command expects the answer of a refreshed index, and nothing told this process of changes made
outside its editor). Each connection is this user's alone: the door is in a directory only
they can enter, and on Linux the peer's uid is checked too. A client that hangs up cancels its
question."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

from filescout.core.errors import FilescoutError, InvalidParams, ReadOnly, WorkspaceUnavailable
from filescout.door.address import SUFFIX, door_path, doors_directory
from filescout.engine import Workspace
from filescout.rpc.jsonrpc import INVALID_PARAMS, Incoming, Refusal, check_envelope, parse
from filescout.rpc.params import decode_params
from filescout_protocol.types import (
    Command,
    ErrorCode,
    FindRelevantParams,
    GetFilesParams,
    GetOverviewParams,
    Method,
)

log = logging.getLogger(__name__)

STALE_AFTER = 60.0
"""How old a socket no one listens on must be before a server opening its own door removes it."""
TURN_INTERVAL = 2.0
"""How often a process waiting for the door (another one keeps it) looks whether it is gone..."""
PROBES_EVERY = 15
"""...and, every this many looks, whether its keeper still listens (one that was killed left
its socket behind)."""
LINE_LIMIT = 4 * 1024 * 1024
"""The longest request line read (a question, scopes and globs: far less)."""
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
PROGRESS = "$/progress"

_encoder = msgspec.json.Encoder()
Send = Callable[[Any], Awaitable[None]]


class Door:
    """The door to one engine's workspace, kept while the face that opened it runs. One process
    keeps a workspace's door at a time, the first to open it; the others wait for their turn
    and take it when that one exits (an editor's second window, a server started while a
    background indexer finishes)."""

    def __init__(self, engine: Workspace, path: Path) -> None:
        self._engine = engine
        self.path = path
        self._server: asyncio.AbstractServer | None = None
        self._inode = 0
        self._waiting: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, engine: Workspace, env: Mapping[str, str] = os.environ) -> Door | None:
        """The engine's door, listening, or waiting for its turn while another live process
        keeps it; None when no door can be kept here."""
        path = door_path(engine.root, env, create=True)
        if path is None:
            private = doors_directory(env, create=False) is not None
            why = "its path is too long" if private else "no private directory"
            log.info("no door for terminal commands: %s", why)
            return None
        door = cls(engine, path)
        if not await door._listen():
            door._waiting = asyncio.ensure_future(door._wait_for_turn())
        return door

    async def _listen(self) -> bool:
        """Listen on the door unless a live process keeps it; the check and the bind are one
        step among processes (a lock beside the socket), so two never both think it theirs."""
        with _turnstile(self.path) as ours:
            if not ours or _answers(self.path):
                log.info("another filescout process keeps the door to this workspace")
                return False
            _sweep(self.path.parent)
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # left by a process that did not close it (killed)
            try:
                self._server = await asyncio.start_unix_server(
                    self._connected, os.fspath(self.path), limit=LINE_LIMIT
                )
                self._inode = os.stat(self.path).st_ino
            except OSError as exc:  # the directory went away, say
                log.info("no door for terminal commands: %s", exc)
                self._server = None
                return False
        log.info("terminal commands are answered through %s", self.path)
        return True

    async def _wait_for_turn(self) -> None:
        """Take the door once the process that keeps it is gone (its socket removed, or no one
        listening on it)."""
        looks = 0
        while True:
            await asyncio.sleep(TURN_INTERVAL)
            looks += 1
            gone = not self.path.exists() or (looks % PROBES_EVERY == 0 and not _answers(self.path))
            if gone and await self._listen():
                return

    async def close(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()
            self._waiting = None
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        self.remove()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 1.0)

    def remove(self) -> None:
        """Take the socket away (also when the event loop is gone), unless another process's
        replaced it meanwhile."""
        with contextlib.suppress(OSError):
            if self._inode and os.stat(self.path).st_ino == self._inode:
                self.path.unlink()
        self._inode = 0

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if not _same_user(writer):
                log.warning("a connection to the door from another user was refused")
                return
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        except Exception:
            log.exception("the door's connection failed")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Requests one after the other; the client hanging up cancels the one under way."""

        async def send(message: Any) -> None:
            writer.write(_encoder.encode(message) + b"\n")
            await writer.drain()

        line = await _read_request(reader, send)
        while line:
            answer = asyncio.ensure_future(self._answer(line, send))
            following = asyncio.ensure_future(_read_request(reader, send))
            try:
                await asyncio.wait({answer, following}, return_when=asyncio.FIRST_COMPLETED)
                hung_up = following.done() and (following.exception() or not following.result())
                if hung_up and not answer.done():
                    answer.cancel()  # the question is dropped
                with contextlib.suppress(asyncio.CancelledError):
                    await answer
                line = await following
            finally:
                answer.cancel()
                following.cancel()

    async def _answer(self, line: bytes, send: Send) -> None:
        parsed = parse(line)
        message = parsed if isinstance(parsed, Refusal) else check_envelope(parsed)
        if isinstance(message, Refusal):
            await send(_error(message.msg_id, message.code, message.message))
            return
        if not isinstance(message, Incoming) or not message.is_request:
            return  # a notification or a response: nothing to answer
        params = message.data.get("params")
        try:
            result = await self._dispatch(message.method or "", params, send)
        except InvalidParams as exc:
            await send(_error(message.msg_id, INVALID_PARAMS, str(exc)))
        except WorkspaceUnavailable as exc:
            await send(_error(message.msg_id, ErrorCode.WORKSPACE_UNAVAILABLE, str(exc)))
        except ReadOnly as exc:
            await send(_error(message.msg_id, ErrorCode.READ_ONLY, str(exc)))
        except FilescoutError as exc:
            await send(_error(message.msg_id, INTERNAL_ERROR, str(exc)))
        except _UnknownMethod as exc:
            await send(_error(message.msg_id, METHOD_NOT_FOUND, f"method not found: {exc}"))
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a defect: say so, keep serving
            log.exception("%s through the door failed", message.method)
            await send(_error(message.msg_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
        else:
            await send({"jsonrpc": "2.0", "id": message.msg_id, "result": result})

    async def _dispatch(self, method: str, params: Any, send: Send) -> Any:
        engine = self._engine
        if method == Method.FIND_RELEVANT:
            find: FindRelevantParams = decode_params(params, FindRelevantParams, method)
            await engine.catch_up()
            return await _relevant(engine, find, send)
        if method == Method.GET_FILES:
            files: GetFilesParams = decode_params(params, GetFilesParams, method)
            await engine.catch_up()
            if files.partial_result_token is None:
                return await engine.files_page(files)
            return await _streamed(engine.stream_files(files), files.partial_result_token, send)
        if method == Method.GET_OVERVIEW:
            overview: GetOverviewParams = decode_params(params, GetOverviewParams, method)
            await engine.catch_up()
            return await engine.overview(overview)
        if method == Command.STATUS:
            return await engine.status()
        raise _UnknownMethod(method)


class _UnknownMethod(Exception):
    pass


async def _read_request(reader: asyncio.StreamReader, send: Send) -> bytes:
    """The next request line; b"" when the client hung up (or sent a line too long to read,
    which it is told of first)."""
    try:
        return await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError:
        return b""
    except asyncio.LimitOverrunError:
        await send(_error(None, INVALID_PARAMS, f"a request is longer than {LINE_LIMIT} bytes"))
        return b""


async def _relevant(engine: Workspace, params: FindRelevantParams, send: Send) -> Any:
    """Each stage's ranking as a partial result when asked for; the answer holds every item of
    the final ranking. (The LSP face leaves out a final ranking it streamed already, which
    leaves an empty final ranking after a streamed one ambiguous: a terminal prints the answer.)"""
    token = params.partial_result_token
    async with contextlib.aclosing(engine.find_relevant_stream(params)) as stages:  # type: ignore[type-var]
        async for update in stages:
            if update.done:
                return update.result()
            if token is not None and update.items:
                await send(_partial(token, update.items))
    raise AssertionError("the relevance stages ended without an answer")


async def _streamed(batches: AsyncIterator[list[Any]], token: str | int, send: Send) -> list[Any]:
    async with contextlib.aclosing(batches) as stream:  # type: ignore[type-var]  # an async generator
        async for batch in stream:
            await send(_partial(token, batch))
    return []


def _partial(token: str | int, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": PROGRESS, "params": {"token": token, "value": value}}


def _error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": int(code), "message": message}}


def _sweep(directory: Path) -> None:
    """Take away the doors of servers that were killed (to every workspace): sockets no one
    listens on, older than `STALE_AFTER` (a door is bound a moment before it listens)."""
    now = time.time()
    for found in directory.glob(f"*{SUFFIX}"):
        with contextlib.suppress(OSError):
            info = found.lstat()
            if stat.S_ISSOCK(info.st_mode) and now - info.st_mtime > STALE_AFTER and not _answers(found):
                found.unlink()


@contextlib.contextmanager
def _turnstile(path: Path) -> Iterator[bool]:
    """Whether this process may take the door now: True while it holds the lock beside the
    socket (another process opening it at the same moment holds it otherwise)."""
    try:
        import fcntl  # a door is a Unix socket: where there is none, nothing else opens one either
    except ImportError:
        yield True
        return
    try:
        handle = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(handle)  # lets go of the lock


def _answers(path: Path) -> bool:
    """Whether a live process listens on the socket at `path`."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(os.fspath(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def _same_user(writer: asyncio.StreamWriter) -> bool:
    """Whether the peer runs as this user (Linux tells; elsewhere the directory's mode does)."""
    peer = writer.get_extra_info("socket")
    credentials = getattr(socket, "SO_PEERCRED", None)
    if peer is None or credentials is None:
        return True
    _, uid, _ = struct.unpack("3i", peer.getsockopt(socket.SOL_SOCKET, credentials, struct.calcsize("3i")))
    return bool(uid == os.getuid())
