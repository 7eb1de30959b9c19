"""The filescout wire contract: every payload that crosses JSON-RPC, as msgspec Structs
(types.py), and the names a client needs before any payload (names.py).

The JSON Schema (protocol/filescout.schema.json) and PROTOCOL.md are derived from these
definitions; `python -m filescout_protocol.schema` regenerates the schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from filescout_protocol.types import (
        COMMANDS,
        METHODS,
        PROTOCOL_VERSION,
        AnnotateParams,
        BudgetSettings,
        Command,
        DidAccessParams,
        ErrorCode,
        FileItem,
        FileKind,
        FileStatus,
        FindRelevantParams,
        FindRelevantResult,
        GetFilesPage,
        GetFilesParams,
        GetOverviewParams,
        IndexPhase,
        IndexStatus,
        Method,
        ModelSettings,
        ModelStatus,
        OverviewEntry,
        OverviewResult,
        ReindexResult,
        RelevanceOptions,
        RelevantItem,
        Scope,
        Settings,
        StatusResult,
    )

__all__ = [
    "COMMANDS",
    "METHODS",
    "PROTOCOL_VERSION",
    "AnnotateParams",
    "BudgetSettings",
    "Command",
    "DidAccessParams",
    "ErrorCode",
    "FileItem",
    "FileKind",
    "FileStatus",
    "FindRelevantParams",
    "FindRelevantResult",
    "GetFilesPage",
    "GetFilesParams",
    "GetOverviewParams",
    "IndexPhase",
    "IndexStatus",
    "Method",
    "ModelSettings",
    "ModelStatus",
    "OverviewEntry",
    "OverviewResult",
    "ReindexResult",
    "RelevanceOptions",
    "RelevantItem",
    "Scope",
    "Settings",
    "StatusResult",
]


def __getattr__(name: str) -> Any:
    """The Structs are loaded at their first use, not with the package: `names.py` alone is
    what a command that asks a running server needs."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from filescout_protocol import types

    return getattr(types, name)
