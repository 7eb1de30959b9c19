"""A pygls converter that speaks msgspec: Structs go out as plain JSON, and params of
filescout's own methods stay plain dicts until the handler decodes them with msgspec (which
gives precise, field-naming validation errors)."""

from __future__ import annotations

from typing import Any

import cattrs
import msgspec
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, default_converter


def _is_struct(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, msgspec.Struct)


def _keep_params(obj: dict[str, Any], cls: type) -> Any:
    obj.setdefault("params", None)
    return cls(**obj)


def converter_factory() -> cattrs.Converter:
    converter = default_converter()
    converter.register_structure_hook(JsonRPCRequestMessage, _keep_params)
    converter.register_structure_hook(JsonRPCNotification, _keep_params)
    converter.register_unstructure_hook_func(_is_struct, msgspec.to_builtins)
    converter.register_structure_hook_func(_is_struct, lambda obj, cls: msgspec.convert(obj, cls))
    return converter
