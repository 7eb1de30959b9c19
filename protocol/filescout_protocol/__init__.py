"""The filescout wire contract: every payload that crosses JSON-RPC, as msgspec Structs.

The JSON Schema (protocol/filescout.schema.json) and PROTOCOL.md are derived from these
definitions; `python -m filescout_protocol.schema` regenerates the schema.
"""

from __future__ import annotations

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
    IndexPhase,
    IndexStatus,
    Method,
    ModelSettings,
    ModelStatus,
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
    "IndexPhase",
    "IndexStatus",
    "Method",
    "ModelSettings",
    "ModelStatus",
    "ReindexResult",
    "RelevanceOptions",
    "RelevantItem",
    "Scope",
    "Settings",
    "StatusResult",
]
