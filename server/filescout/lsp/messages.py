"""A frame's body checked against JSON-RPC 2.0 before pygls sees it.

pygls hands whatever JSON it reads to its handlers and answers a malformed message with at most
a `window/showMessage`: the client's request then waits forever. Here each body becomes one of:
a message pygls can take, an error reply (-32700 for what cannot be read, -32600 for what is not
a request, -32602 for params no handler can take), or a notification dropped with a log line.

Strings with an unpaired surrogate (`"\\ud800"` is valid JSON but not valid Unicode) are refused
here, naming the field, so that no handler meets a string it cannot encode."""

from __future__ import annotations

import logging
from collections.abc import Container
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams, JsonRpcInvalidRequest

from filescout.rpc.jsonrpc import (
    Ignored,
    Incoming,
    MsgId,
    Refusal,
    check_envelope,
    unpaired_surrogate,
    valid_id,
)

log = logging.getLogger(__name__)


Checked = Incoming | Refusal | Ignored


def check(value: Any, awaiting: Container[MsgId]) -> Checked:
    """Sort a parsed body into a message to handle, an error to reply, or nothing: the envelope
    as both faces check it, then a response matched to the server's own requests."""
    checked = check_envelope(value)
    if isinstance(checked, Incoming) and checked.method is None:
        return check_response(checked.data, awaiting)
    return checked


def check_response(value: dict[str, Any], awaiting: Container[MsgId]) -> Checked:
    """A message without a method must answer one of the server's requests. A client that
    leaves out a null `result` is still understood, so the request does not wait forever."""
    msg_id = value.get("id")
    expected = valid_id(msg_id) and msg_id in awaiting
    answers = value.get("jsonrpc") == "2.0" and ("result" in value or "error" in value)
    if not (expected or answers):
        shown = msg_id if valid_id(msg_id) else None
        return Refusal(JsonRpcInvalidRequest.CODE, "invalid request: a request needs a method", shown)
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
        return Ignored(f"a malformed error response to request {msg_id!r}")
    return Incoming(data, None, msg_id if valid_id(msg_id) else None)


def error_is_valid(error: Any) -> bool:
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and isinstance(error.get("message"), str)
        and unpaired_surrogate(error) is None
    )
