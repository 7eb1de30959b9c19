"""JSON-RPC 2.0 checks both faces make before their protocol library sees a message: what makes
an id, an envelope or a string invalid. Imports nothing of either library, so `filescout mcp`
does not load pygls and `filescout serve` does not load the MCP SDK."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

MsgId = int | str


@dataclass(frozen=True)
class Refusal:
    """A message answered with an error instead of being handled."""

    code: int
    message: str
    msg_id: MsgId | None = None


@dataclass(frozen=True)
class Ignored:
    """A message that gets no answer: blank, or a notification or response no one can handle."""

    reason: str


@dataclass
class Incoming:
    """A well-formed message: a request (id and method), a notification (method only) or a
    response to one of the server's own requests (id only, `method` None)."""

    data: dict[str, Any]
    method: str | None = None
    msg_id: MsgId | None = None
    is_request: bool = False


def parse(body: bytes | str) -> Any | Refusal:
    """The message's JSON value, or -32700: not UTF-8, not JSON, or nested too deeply to read."""
    try:
        return json.loads(body.decode("utf-8") if isinstance(body, bytes) else body)
    except UnicodeDecodeError as exc:
        return Refusal(PARSE_ERROR, f"parse error: the message is not valid UTF-8 ({exc.reason})")
    except RecursionError:
        return Refusal(PARSE_ERROR, "parse error: the message is nested too deeply")
    except ValueError as exc:
        return Refusal(PARSE_ERROR, f"parse error: {exc}")


def check_envelope(value: Any, *, id_must_encode: bool = False) -> Incoming | Refusal | Ignored:
    """Sort a parsed message: a request or notification whose envelope and strings are sound,
    a response (to be matched by the face: `method` None), an error to reply, or nothing. The
    same rules on both faces; `id_must_encode` for a face whose library cannot write an id
    holding an unpaired surrogate back (the MCP SDK), which then refuses it up front."""
    if isinstance(value, list):
        return Refusal(INVALID_REQUEST, "invalid request: batches are not supported")
    if not isinstance(value, dict):
        return Refusal(INVALID_REQUEST, "invalid request: a message must be a JSON object")
    msg_id = value.get("id")
    usable = valid_id(msg_id) and not (
        id_must_encode and isinstance(msg_id, str) and unpaired_surrogate(msg_id) is not None
    )
    if "id" in value and not usable:
        return Refusal(INVALID_REQUEST, "invalid request: id must be an integer or a string")
    if "method" not in value:
        return Incoming(value, None, msg_id)
    is_request = "id" in value
    problem = envelope_problem(value)
    if problem is None and unpaired_surrogate(value["method"]) is not None:
        problem = "the method contains an unpaired surrogate"
    if problem is not None:
        if is_request:
            return Refusal(INVALID_REQUEST, f"invalid request: {problem}", msg_id)
        return Ignored(f"invalid notification: {problem}")
    method: str = value["method"]
    where = unpaired_surrogate(value.get("params"))
    if where is not None:
        message = f"invalid params for {method}: {where}: contains an unpaired surrogate"
        return Refusal(INVALID_PARAMS, message, msg_id) if is_request else Ignored(message)
    return Incoming(value, method, msg_id if is_request else None, is_request)


def valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def envelope_problem(value: dict[str, Any]) -> str | None:
    """What makes a request or notification invalid, if anything."""
    if value.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(value["method"], str):
        return "method must be a string"
    if value.get("params") is not None and not isinstance(value["params"], (dict, list)):
        return "params must be an object or an array"
    return None


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
