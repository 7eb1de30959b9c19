"""The filescout wire contract: every payload that crosses JSON-RPC, as msgspec Structs.

The JSON Schema (protocol/filescout.schema.json) and PROTOCOL.md are derived from these
definitions; `python -m filescout_protocol.schema` regenerates the schema.
"""

from __future__ import annotations

from filescout_protocol.types import (
    COMMANDS,
    AnnotateParams,
    BudgetSettings,
    ModelSettings,
    ModelStatus,
    RelevanceOptions,
    METHODS,
    PROTOCOL_VERSION,
    Command,
    ErrorCode,
    FileItem,
    FileKind,
    FileStatus,
    FindRelevantParams,
    FindRelevantResult,
    GetFilesPage,
    GetFilesParams,
    IndexPhase,
    IndexStatus,
    Method,
    RelevantItem,
    ReindexResult,
    Scope,
    Settings,
    StatusResult,
    DidAccessParams,
)

__all__ = [
    "COMMANDS",
    "AnnotateParams",
    "BudgetSettings",
    "ModelSettings",
    "ModelStatus",
    "RelevanceOptions",
    "METHODS",
    "PROTOCOL_VERSION",
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
    "IndexPhase",
    "IndexStatus",
    "Method",
    "RelevantItem",
    "ReindexResult",
    "Scope",
    "Settings",
    "StatusResult",
]
