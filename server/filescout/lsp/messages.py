"""A frame's body checked against JSON-RPC 2.0 before pygls sees it.

pygls hands whatever JSON it reads to its handlers and answers a malformed message with at most
a `window/showMessage`: the client's request then waits forever. Here each body becomes one of:
a message pygls can take, an error reply (-32700 for what cannot be read, -32600 for what is not
a request, -32602 for params no handler can take), or a notification dropped with a log line.

Strings with an unpaired surrogate (`"\\ud800"` is valid JSON but not valid Unicode) are refused
here, naming the field, so that no handler meets a string it cannot encode."""

from __future__ import annotations

import json
import logging
from collections.abc import Container, Iterator
from dataclasses import dataclass
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcParseError

log = logging.getLogger(__name__)

MsgId = int | str


@dataclass(frozen=True)
class Reply:
    """An error to answer with instead of handling the message."""

    code: int
    message: str
    msg_id: MsgId | None = None


@dataclass(frozen=True)
class Dropped:
    """A notification (or stray response) that cannot be handled and gets no answer."""

    reason: str


@dataclass
class Incoming:
    """A well-formed message: a request (id and method), a notification (method only) or a
    response to one of the server's own requests (id only)."""

    data: dict[str, Any]
    method: str | None = None
    msg_id: MsgId | None = None
    is_request: bool = False


Checked = Incoming | Reply | Dropped


def parse(body: bytes) -> Any | Reply:
    """The body's JSON value, or -32700: not UTF-8, not JSON, or nested too deeply to read."""
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return Reply(JsonRpcParseError.CODE, f"parse error: the message is not valid UTF-8 ({exc.reason})")
    except RecursionError:
        return Reply(JsonRpcParseError.CODE, "parse error: the message is nested too deeply")
    except ValueError as exc:
        return Reply(JsonRpcParseError.CODE, f"parse error: {exc}")


def valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def check(value: Any, awaiting: Container[MsgId]) -> Checked:
    """Sort a parsed body into a message to handle, an error to reply, or nothing."""
    if isinstance(value, list):
        return Reply(JsonRpcInvalidRequest.CODE, "invalid request: batches are not supported")
    if not isinstance(value, dict):
        return Reply(JsonRpcInvalidRequest.CODE, "invalid request: a message must be a JSON object")
    msg_id = value.get("id")
    if "method" not in value:
        return check_response(value, awaiting)
    if "id" in value and not valid_id(msg_id):
        return Reply(JsonRpcInvalidRequest.CODE, "invalid request: id must be an integer or a string")
    problem = envelope_problem(value)
    is_request = "id" in value
    if problem is not None:
        if is_request:
            return Reply(JsonRpcInvalidRequest.CODE, f"invalid request: {problem}", msg_id)
        return Dropped(f"invalid notification: {problem}")
    method: str = value["method"]
    where = unpaired_surrogate(value.get("params"))
    if where is not None:
        message = f"invalid params for {method}: {where}: contains an unpaired surrogate"
        return Reply(JsonRpcInvalidParams.CODE, message, msg_id) if is_request else Dropped(message)
    return Incoming(value, method, msg_id if is_request else None, is_request)


def envelope_problem(value: dict[str, Any]) -> str | None:
    """What makes a request or notification invalid, if anything."""
    if value.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(value["method"], str):
        return "method must be a string"
    if value.get("params") is not None and not isinstance(value["params"], (dict, list)):
        return "params must be an object or an array"
    return None


def check_response(value: dict[str, Any], awaiting: Container[MsgId]) -> Checked:
    """A message without a method must answer one of the server's requests. A client that
    leaves out a null `result` is still understood, so the request does not wait forever."""
    msg_id = value.get("id")
    expected = valid_id(msg_id) and msg_id in awaiting
    answers = value.get("jsonrpc") == "2.0" and ("result" in value or "error" in value)
    if not (expected or answers):
        shown = msg_id if valid_id(msg_id) else None
        return Reply(JsonRpcInvalidRequest.CODE, "invalid request: a request needs a method", shown)
    data = {**value, "jsonrpc": "2.0"}
    if "error" not in data:
        data.setdefault("result", None)
        where = unpaired_surrogate(data["result"])
        if where is not None:  # the waiting request fails instead of meeting the bad string
            reason = f"the client's result: {where}: contains an unpaired surrogate"
            data = {
                "jsonrpc": "2.0",
                "id": msg_id,
                "error": {"code": JsonRpcInvalidParams.CODE, "message": reason},
            }
    elif not error_is_valid(data["error"]):
        return Dropped(f"a malformed error response to request {msg_id!r}")
    return Incoming(data, None, msg_id if valid_id(msg_id) else None)


def error_is_valid(error: Any) -> bool:
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and isinstance(error.get("message"), str)
        and unpaired_surrogate(error) is None
    )


def unpaired_surrogate(value: Any) -> str | None:
    """Where in `value` a string (or a field name) holds an unpaired surrogate, as a path such as
    `arguments[0].paths[1]`; None when every string is proper Unicode."""
    for path, text in strings(value):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return path or "params"
    return None


def strings(value: Any) -> Iterator[tuple[str, str]]:
    """Every string in a JSON value with its path, field names included. Iterative: the value
    may be as deep as the JSON reader allows."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            yield path, item
        elif isinstance(item, dict):
            for key, child in item.items():
                child_path = f"{path}.{key}" if path else key
                yield (f"a field name in {path or 'params'}", key)
                stack.append((child_path, child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
