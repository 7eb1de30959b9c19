"""Generate the JSON Schema of the filescout protocol from its Structs.

`python -m filescout_protocol.schema [OUTPUT]` writes protocol/filescout.schema.json; a test fails
when the committed file and the Structs disagree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from filescout_protocol import types as t

REF_TEMPLATE = "#/$defs/{name}"

# method or command -> (params type, result type); None where there is no payload.
MESSAGES: dict[str, tuple[Any, Any]] = {
    t.Method.GET_FILES: (t.GetFilesParams, t.GetFilesPage),
    t.Method.FIND_RELEVANT: (t.FindRelevantParams, t.FindRelevantResult),
    t.Method.DID_ACCESS: (t.DidAccessParams, None),
    t.Method.STATUS: (t.IndexStatus, None),
    t.Method.GET_OVERVIEW: (t.GetOverviewParams, t.OverviewResult),
    t.Command.REINDEX: (None, t.ReindexResult),
    t.Command.STATUS: (None, t.StatusResult),
    t.Command.ANNOTATE: (t.AnnotateParams, list[t.FileItem]),
}
PARTIAL_RESULTS: dict[str, Any] = {
    t.Method.GET_FILES: t.FileItem,
    t.Method.FIND_RELEVANT: t.RelevantItem,
}
EXTRA_TYPES: tuple[Any, ...] = (t.Settings,)


def _name(tp: Any) -> str | None:
    if tp is None:
        return None
    args = getattr(tp, "__args__", None)
    return f"{args[0].__name__}[]" if args else tp.__name__


def generate() -> dict[str, Any]:
    roots = [
        tp
        for pair in MESSAGES.values()
        for tp in pair
        if tp is not None and not getattr(tp, "__args__", None)
    ]
    roots += list(PARTIAL_RESULTS.values()) + list(EXTRA_TYPES)
    unique = list(dict.fromkeys(roots))
    _, components = msgspec.json.schema_components(unique, ref_template=REF_TEMPLATE)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://filescout.dev/schema/protocol-v{t.PROTOCOL_VERSION}.json",
        "title": "filescout protocol",
        "description": "Payloads of the filescout JSON-RPC methods and commands. "
        "Generated from filescout_protocol.types; do not edit by hand.",
        "x-protocol-version": t.PROTOCOL_VERSION,
        "x-messages": {
            name: {
                "params": _name(params),
                "result": _name(result),
                "partialResult": _name(PARTIAL_RESULTS.get(name)),
            }
            for name, (params, result) in MESSAGES.items()
        },
        "x-errors": {code.name: code.value for code in t.ErrorCode},
        "$defs": dict(sorted(components.items())),
    }


def render() -> str:
    return json.dumps(generate(), indent=2, sort_keys=False) + "\n"


def default_path() -> Path:
    return Path(__file__).resolve().parent.parent / "filescout.schema.json"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else default_path()
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
