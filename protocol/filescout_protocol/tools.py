"""Inputs of the MCP tools (`filescout mcp`). Chat panels call these, so the fields are
snake_case, as MCP tools' arguments usually are; the answers are the same Structs the LSP face
sends (camelCase), as structured content beside a prompt-ready text block."""

from __future__ import annotations

from typing import Annotated, Final, Union

from msgspec import Meta, Struct

from filescout_protocol.types import (
    MAX_TIME_MS,
    OVERVIEW_TOKENS,
    FileKind,
    FileOrder,
    FileStatus,
    FindRelevantResult,
    GetFilesPage,
    Globs,
    OverviewEntry,
    RelativePath,
)


class Tool:
    """MCP tool names."""

    FIND_RELEVANT_FILES: Final = "find_relevant_files"
    LIST_FILES: Final = "list_files"
    INDEX_STATUS: Final = "index_status"
    REINDEX_WORKSPACE: Final = "reindex_workspace"
    ANNOTATE_FILES: Final = "annotate_files"
    WORKSPACE_OVERVIEW: Final = "workspace_overview"


TOOLS: Final = (
    Tool.FIND_RELEVANT_FILES,
    Tool.LIST_FILES,
    Tool.INDEX_STATUS,
    Tool.REINDEX_WORKSPACE,
    Tool.ANNOTATE_FILES,
    Tool.WORKSPACE_OVERVIEW,
)

PromptTokens = Annotated[
    int,
    Meta(
        ge=200,
        le=200_000,
        description="Most tokens the answer may take (counted cautiously, at 3.5 characters a "
        "token): the text shows the files that fit and a closing line names the rest; the structured "
        "content carries the same files.",
    ),
]


class _Input(Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class FindRelevantFilesInput(_Input):
    """Which files matter for a task or question about this workspace."""

    query: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=20_000,
            description="The task or question, in the user's words (an error message, a "
            "stack trace and identifiers help).",
        ),
    ]
    limit: Annotated[int, Meta(ge=1, le=100, description="Most files to return.")] = 10
    globs: Annotated[
        Globs,
        Meta(description="Only files matching these gitignore-style patterns (`*.py`, `!tests/`)."),
    ] = []
    paths: Annotated[
        list[RelativePath],
        Meta(description="Only files under these workspace-relative directories or paths."),
    ] = []
    use_model: Annotated[
        bool,
        Meta(
            description="Let the configured model judge and rank the candidates (slower, "
            "better); false: the model-free ranking only."
        ),
    ] = True
    prompt_tokens: PromptTokens = 4000


class ListFilesInput(_Input):
    """Indexed files with their summaries, filtered, one page at a time."""

    globs: Annotated[Globs, Meta(description="gitignore-style patterns to keep.")] = []
    paths: Annotated[
        list[RelativePath],
        Meta(description="Workspace-relative directories or paths to keep."),
    ] = []
    query: Annotated[
        Union[Annotated[str, Meta(min_length=1, max_length=2000)], None],
        Meta(description="Keep files whose path, symbols, summary, tags or content match."),
    ] = None
    tags: list[Annotated[str, Meta(min_length=1, max_length=100)]] = []
    kinds: Annotated[
        list[FileKind],
        Meta(description="Keep files of these kinds. Default: every kind except binary."),
    ] = []
    languages: list[Annotated[str, Meta(min_length=1, max_length=50)]] = []
    status: list[FileStatus] = []
    changed_since: Annotated[
        Union[Annotated[int, Meta(ge=0, le=MAX_TIME_MS)], None],
        Meta(
            description="Keep files modified at or after this time, ms since the epoch "
            "(at most 9223372036854)."
        ),
    ] = None
    order_by: Union[FileOrder, None] = None
    limit: Annotated[int, Meta(ge=1, le=1000, description="Page size.")] = 100
    cursor: Annotated[
        Union[str, None],
        Meta(description="`nextCursor` of the previous page."),
    ] = None
    prompt_tokens: PromptTokens = 4000


class IndexStatusInput(_Input):
    """What the index holds and what indexing is doing."""


class ReindexWorkspaceInput(_Input):
    """Rescan the workspace now (annotation of what changed continues in the background)."""


class AnnotateFilesInput(_Input):
    """Summarize these files before anything else and answer with them."""

    paths: Annotated[list[RelativePath], Meta(min_length=1, max_length=200)]
    timeout: Annotated[
        float,
        Meta(gt=0, le=600, description="Seconds to wait for the summaries."),
    ] = 30.0


class WorkspaceOverviewInput(_Input):
    """The workspace as an annotated tree within a token budget: where things are, before asking."""

    tokens: Annotated[
        int,
        Meta(
            ge=200,
            le=200_000,
            description="Most tokens the overview may take (counted cautiously, at 3.5 characters a "
            "token); the least important branches fold into `… N more files` lines.",
        ),
    ] = OVERVIEW_TOKENS
    query: Annotated[
        Union[Annotated[str, Meta(min_length=1, max_length=20_000)], None],
        Meta(description="A task or question to focus on: the branches that matter for it open first."),
    ] = None
    globs: Annotated[
        Globs,
        Meta(description="Only files matching these gitignore-style patterns (`*.py`, `!tests/`)."),
    ] = []
    paths: Annotated[
        list[RelativePath],
        Meta(description="Only the tree under these workspace-relative directories."),
    ] = []


# Answers of the tools that show files within `prompt_tokens`: the structured content carries the
# files the text shows, no more, since a client may hand either to the model.


class FindRelevantFilesOutput(FindRelevantResult):
    """The files found, as many as the text answer shows: a client may hand either to the model."""

    left_out: Annotated[
        int,
        Meta(
            ge=0,
            description="Files found but left out of this answer, text and items alike, because "
            "they did not fit in `prompt_tokens`; the text's closing line names them.",
        ),
    ] = 0


class ListFilesOutput(GetFilesPage):
    """A page of files, as many as the text answer shows: a client may hand either to the model."""

    left_out: Annotated[
        int,
        Meta(
            ge=0,
            description="Files of the page asked for that did not fit in `prompt_tokens`; the "
            "next page (`nextCursor`) starts with them.",
        ),
    ] = 0


class WorkspaceOverviewOutput(Struct, rename="camel", kw_only=True):
    """The overview's lines as records; the block itself is the text answer, not repeated here."""

    entries: Annotated[
        list[OverviewEntry],
        Meta(description="The lines of the text's tree, in order (folded lines are counted in `folded`)."),
    ]
    files: Annotated[int, Meta(ge=0, description="Files in the scope.")]
    shown: Annotated[int, Meta(ge=0, description="Files the overview names.")]
    estimated_tokens: Annotated[
        int, Meta(ge=0, description="The text's size as `tokens` counts it (3.5 characters a token).")
    ]
