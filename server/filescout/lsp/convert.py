"""A pygls converter that speaks msgspec: Structs go out as plain JSON, and params of
filescout's own methods stay plain dicts until the handler decodes them with msgspec (which
gives precise, field-naming validation errors)."""

from __future__ import annotations

import collections.abc
import typing
from typing import Any

import cattrs
import msgspec
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, default_converter


def _is_struct(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, msgspec.Struct)


def _keep_params(obj: dict[str, Any], cls: type) -> Any:
    obj.setdefault("params", None)
    return cls(**obj)


def _is_array(cls: Any) -> bool:
    return typing.get_origin(cls) in (list, collections.abc.Sequence)


def _strict_arrays(converter: cattrs.Converter) -> Any:
    """An array field takes a JSON array only: cattrs would take any iterable, so an object
    became the list of its keys and a string the list of its characters."""

    def structure(obj: Any, cls: Any) -> list[Any]:
        if not isinstance(obj, list):
            raise TypeError(f"expected an array, got {type(obj).__name__}")
        (item,) = typing.get_args(cls) or (Any,)
        return [converter.structure(value, item) for value in obj]

    return structure


def converter_factory() -> cattrs.Converter:
    converter = default_converter()
    converter.register_structure_hook_func(_is_array, _strict_arrays(converter))
    converter.register_structure_hook(JsonRPCRequestMessage, _keep_params)
    converter.register_structure_hook(JsonRPCNotification, _keep_params)
    converter.register_unstructure_hook_func(_is_struct, msgspec.to_builtins)
    converter.register_structure_hook_func(_is_struct, lambda obj, cls: msgspec.convert(obj, cls))
    return converter
