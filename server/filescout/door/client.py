"""Asking a workspace's door: one JSON-RPC request on a local socket, its partial results and
its response, each one line of JSON (the messages LSP uses for the same methods).

Standard library only, so a command that finds a door costs the interpreter's start and little
more. `address.open_door` finds the socket, `Door.knock` connects to it; either gives None when
no process keeps a door to the workspace (none was opened, or the process that opened it is
gone): the command then answers on its own."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

PROGRESS = "$/progress"
PARTIAL_TOKEN = "door"
CONNECT_TIMEOUT = 2.0


class DoorError(Exception):
    """The door answered with an error: `code` is JSON-RPC's, `message` says what was wrong."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class DoorClosed(Exception):
    """The process behind the door went away before it answered."""


class Door:
    """A connection to the process that keeps a workspace's door."""

    def __init__(self, connection: socket.socket) -> None:
        self._connection = connection
        self._lines = connection.makefile("rb")
        self._next_id = 0

    @classmethod
    def knock(cls, path: Path) -> Door | None:
        """A connection to the door at `path` (`address.open_door`), or None when no one
        listens there."""
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(CONNECT_TIMEOUT)
        try:
            connection.connect(os.fspath(path))
        except OSError:  # left by a process that was killed, or one too busy to let anyone in
            connection.close()
            return None
        connection.settimeout(None)  # an answer takes what the question takes; ^C ends it
        return cls(connection)

    def ask(self, method: str, params: Mapping[str, Any], *, stream: bool) -> Iterator[tuple[bool, Any]]:
        """The request's partial results (with `stream`, for a method that streams) as
        (False, value), then its result as (True, value). Raises DoorError for an error
        response and DoorClosed when the connection ends first."""
        self._next_id += 1
        request = {
            "jsonrpc": "2.0",
            "id": self._next_id,
            "method": method,
            "params": {**params, "partialResultToken": PARTIAL_TOKEN} if stream else params,
        }
        try:
            self._connection.sendall(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
        except OSError as exc:
            raise DoorClosed(str(exc)) from None
        while True:
            line = self._read_line()
            message = json.loads(line)
            if message.get("method") == PROGRESS:
                yield False, message["params"]["value"]
            elif message.get("id") == self._next_id:
                if "error" in message:
                    raise DoorError(message["error"]["code"], message["error"]["message"])
                yield True, message["result"]
                return

    def _read_line(self) -> bytes:
        try:
            line = self._lines.readline()
        except OSError as exc:
            raise DoorClosed(str(exc)) from None
        if not line.endswith(b"\n"):
            raise DoorClosed("the connection ended before the answer")
        return line

    def close(self) -> None:
        self._lines.close()
        self._connection.close()

    def __enter__(self) -> Door:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
