"""Decoding what a caller sent into a protocol Struct, for every face: an error names the field
that was wrong."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from filescout.core.errors import InvalidParams

StructT = TypeVar("StructT", bound=msgspec.Struct)


def field_error(error: msgspec.ValidationError) -> str:
    """msgspec's `Expected int >= 1 - at `$.limit`` as `limit: Expected int >= 1`."""
    detail = str(error)
    if " - at `$." in detail:
        message, _, where = detail.rpartition(" - at `$.")
        detail = f"{where.rstrip('`')}: {message}"
    return detail


def decode_params(params: Any, cls: type[StructT], method: str) -> StructT:
    """Validate a request's params; the error names the offending field."""
    try:
        return msgspec.convert({} if params is None else params, cls)
    except msgspec.ValidationError as exc:
        raise InvalidParams(f"invalid params for {method}: {field_error(exc)}") from None
