"""The wire contract: Structs, committed JSON Schema, and validation messages agree."""

from __future__ import annotations

import json
from typing import get_args

import msgspec
import pytest

from filescout.core.errors import InvalidParams
from filescout.rpc.params import decode_params
from filescout_protocol import names as wire_names
from filescout_protocol import schema, types


def test_committed_schema_matches_structs() -> None:
    committed = json.loads(schema.default_path().read_text(encoding="utf-8"))
    assert committed == schema.generate(), (
        "protocol/filescout.schema.json is stale: run `python -m filescout_protocol.schema`"
    )


def test_the_names_a_client_needs_first_are_the_structs_own() -> None:
    """names.py holds what a command needs before it loads the Structs (door/): the file kinds
    must be FileKind's, and the package must not load the Structs until one is asked for."""
    assert get_args(types.FileKind) == wire_names.FILE_KINDS
    assert types.Method is wire_names.Method and types.OVERVIEW_TOKENS == wire_names.OVERVIEW_TOKENS
    import filescout_protocol

    assert filescout_protocol.FileItem is types.FileItem
    with pytest.raises(AttributeError):
        filescout_protocol.NoSuchThing  # noqa: B018 - the lookup is the test


def test_every_method_and_command_is_in_the_schema() -> None:
    generated = schema.generate()
    assert set(generated["x-messages"]) == set(types.METHODS) | set(types.COMMANDS)
    for names in generated["x-messages"].values():
        for name in names.values():
            assert name is None or name.removesuffix("[]") in generated["$defs"]


def test_wire_names_are_camel_case() -> None:
    item = types.GetFilesParams(batch_size=10, partial_result_token="t")
    assert msgspec.to_builtins(item)["batchSize"] == 10
    assert msgspec.to_builtins(item)["partialResultToken"] == "t"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "x"}, "limit"),
        ({"batchSize": 0}, "batchSize"),
        ({"nope": 1}, "nope"),
        ({"globs": "*.py"}, "globs"),
        ({"globs": [""]}, "globs[0]"),
    ],
)
def test_decode_errors_name_the_field(params: dict, field: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        decode_params(params, types.GetFilesParams, "files/getFiles")
    message = str(caught.value)
    assert message.startswith("invalid params for files/getFiles: ")
    assert field in message


def test_protocol_doc_mentions_every_method_and_field() -> None:
    doc = (schema.default_path().parent / "PROTOCOL.md").read_text(encoding="utf-8")
    for name in [*types.METHODS, *types.COMMANDS]:
        assert f"`{name}`" in doc, name
    for definition in schema.generate()["$defs"].values():
        for field in definition.get("properties", {}):
            assert f"`{field}`" in doc, f"{definition['title']}.{field} is not documented"
