"""JSON-RPC 2.0 checks both faces make before their protocol library sees a message: what makes
an id, an envelope or a string invalid. Imports nothing of either library, so `filescout mcp`
does not load pygls and `filescout serve` does not load the MCP SDK."""

from __future__ import annotations

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
