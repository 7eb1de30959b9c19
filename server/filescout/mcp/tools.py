"""The MCP tools. Each decodes its arguments into a protocol Struct, makes one call on the
engine, and answers with the result as structured content plus a text block a chat panel can
put into its prompt as it is."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from filescout.engine import Workspace
from filescout.engine.prompt import Listed, estimate_tokens, render
from filescout_protocol.tools import (
    AnnotateFilesInput,
    FindRelevantFilesInput,
    FindRelevantFilesOutput,
    IndexStatusInput,
    ListFilesInput,
    ListFilesOutput,
    ReindexWorkspaceInput,
    Tool,
    WorkspaceOverviewInput,
    WorkspaceOverviewOutput,
)
from filescout_protocol.types import (
    FindRelevantParams,
    FindRelevantResult,
    GetFilesPage,
    GetFilesParams,
    GetOverviewParams,
    PromptOptions,
    ReindexResult,
    RelevanceOptions,
    Scope,
    StatusResult,
)

NEXT_PAGE_TOKENS = 40
"""Kept for the line after the block that says how to get the next page (more when the cursor
in it turns out longer)."""
FIT_ATTEMPTS = 3
"""Tries at a page whose text, with its closing line, fits in `prompt_tokens`."""
ENTRY = re.compile(r"^(\d+)\. ", re.MULTILINE)
"""A file's first line in a prompt-ready block (`engine.prompt.render`): its rank and its path.
No other line of a block starts so: headings start with a word, a file's summary and reason
with blanks, the closing line with a count and a word."""
Report = Callable[[float, "float | None", str], Awaitable[None]]
"""(progress so far, total if known, message) -> sent to the client, if it asked for progress"""
Answer = tuple[msgspec.Struct, str]
"""(structured content, text content)"""
Run = Callable[[Workspace, Any, Report], Awaitable[Answer]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input: type[msgspec.Struct]
    output: type[msgspec.Struct]
    read_only: bool
    run: Run
    arguments: ArgumentNames = field(default_factory=lambda: ArgumentNames({}))


class ArgumentNames:
    """Error texts in a tool's own terms. The engine's errors name the fields of the requests
    it takes (`scope.paths[0]`, `orderBy`); the tool's caller knows only the tool's arguments
    (`paths[0]`, `order_by`)."""

    def __init__(self, engine_names: Mapping[str, str]) -> None:
        """`engine_names`: the engine's name for an argument → the argument's name. Only names
        that cannot be words of a message's prose (dotted, camelCase)."""
        self._names = dict(engine_names)
        alternatives = "|".join(re.escape(name) for name in sorted(self._names, key=len, reverse=True))
        # A quoted value is what the caller sent, kept as it is; a name outside one is replaced.
        self._pattern = (
            re.compile(rf"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|(?<![\w.])({alternatives})(?!\w)""")
            if alternatives
            else None
        )

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda match: match.group(1) or self._names[match.group(2)], text)


def shown_in(block: str) -> int:
    """How many files a prompt-ready block shows (the first ones of its list, in order)."""
    shown = 0
    for match in ENTRY.finditer(block):
        if int(match.group(1)) != shown + 1:
            break
        shown += 1
    return shown


async def find_relevant_files(engine: Workspace, args: FindRelevantFilesInput, report: Report) -> Answer:
    scope = Scope(globs=args.globs, paths=args.paths) if args.globs or args.paths else None
    params = FindRelevantParams(
        query=args.query,
        limit=args.limit,
        scope=scope,
        options=None if args.use_model else RelevanceOptions(use_model=False),
        prompt=PromptOptions(tokens=args.prompt_tokens),
    )
    step = 0
    async with contextlib.aclosing(engine.find_relevant_stream(params)) as updates:  # type: ignore[type-var]  # an async generator
        async for update in updates:
            if update.done:
                return found_within(update.result())
            step += 1
            await report(step, None, f"{update.stage}: {len(update.items)} files")
    raise AssertionError("the relevance stages ended without an answer")


def found_within(result: FindRelevantResult) -> Answer:
    """The answer cut to the files its text shows. The text is the prompt-ready block; the
    structured content does not repeat it."""
    text = result.prompt or ""
    shown = shown_in(text) if text else len(result.items)
    found = FindRelevantFilesOutput(
        items=result.items[:shown],
        stages=result.stages,
        degraded=result.degraded,
        message=result.message,
        left_out=len(result.items) - shown,
    )
    return found, text


async def list_files(engine: Workspace, args: ListFilesInput, report: Report) -> Answer:
    """A page within `prompt_tokens`: when its text cannot show every file, the page is cut
    where the text ends (asked for again, as many files as were shown) so that its cursor leads
    on to the first file left out."""
    reserve = NEXT_PAGE_TOKENS
    for _ in range(FIT_ATTEMPTS):
        page, asked = await _page_within(engine, args, max(args.prompt_tokens - reserve, NEXT_PAGE_TOKENS))
        left_out = asked - len(page.items)
        text = page.prompt or ""
        if page.next_cursor:
            cut = f" ({left_out} of this page did not fit in {args.prompt_tokens} tokens)" if left_out else ""
            text += f'\nMore files{cut}: call list_files again with cursor "{page.next_cursor}".'
        over = estimate_tokens(text) - args.prompt_tokens
        if over <= 0:
            break
        reserve += over
    files = ListFilesOutput(items=page.items, next_cursor=page.next_cursor, left_out=left_out)
    return files, text


async def _page_within(engine: Workspace, args: ListFilesInput, tokens: int) -> tuple[GetFilesPage, int]:
    """The page whose text shows every file of it, and how many files the page asked for held.
    Each look asks for fewer files than the one before, down to one file (left out too when
    even its path does not fit: its cursor then leads past it, and the text names it)."""
    limit = args.limit
    asked: int | None = None
    while True:
        page = await engine.files_page(_files_params(args, limit, tokens))
        asked = len(page.items) if asked is None else asked
        shown = shown_in(page.prompt or "")
        if shown >= len(page.items) or limit == 1:
            break
        limit = max(shown, 1)  # the index may change meanwhile: look at what comes back
    page.items = page.items[:shown]
    return page, asked


def _files_params(args: ListFilesInput, limit: int, tokens: int) -> GetFilesParams:
    return GetFilesParams(
        globs=args.globs,
        paths=args.paths,
        query=args.query,
        tags=args.tags,
        kinds=args.kinds,
        languages=args.languages,
        status=args.status,
        changed_since=args.changed_since,
        order_by=args.order_by,
        limit=limit,
        cursor=args.cursor,
        prompt=PromptOptions(tokens=tokens),
    )


async def index_status(engine: Workspace, args: IndexStatusInput, report: Report) -> Answer:
    status = await engine.status()
    return status, describe_status(status)


async def reindex_workspace(engine: Workspace, args: ReindexWorkspaceInput, report: Report) -> Answer:
    result = await engine.reindex()
    text = (
        f"Rescanned {result.files} files in {result.elapsed_ms} ms: {result.added} new, "
        f"{result.changed} changed, {result.removed} removed ({result.renamed} renamed); "
        "summaries of what changed follow in the background."
    )
    return result, text


async def annotate_files(engine: Workspace, args: AnnotateFilesInput, report: Report) -> Answer:
    items = await engine.annotate_now(args.paths, timeout=args.timeout)
    listed = [Listed(item.path, item.summary, f"status: {item.status}") for item in items]
    text = render("Files summarized:", listed, tokens=200_000)  # at most 200 files: they all fit
    return GetFilesPage(items=items, next_cursor=None), text


async def workspace_overview(engine: Workspace, args: WorkspaceOverviewInput, report: Report) -> Answer:
    """The tree as its block; the structured content carries the same lines as records."""
    overview = await engine.overview(
        GetOverviewParams(tokens=args.tokens, query=args.query, globs=args.globs, paths=args.paths)
    )
    lines = WorkspaceOverviewOutput(
        entries=overview.entries,
        files=overview.files,
        shown=overview.shown,
        estimated_tokens=overview.estimated_tokens,
    )
    return lines, overview.prompt


def describe_status(status: StatusResult) -> str:
    counts = ", ".join(f"{count} {name}" for name, count in sorted(status.by_status.items()))
    lines = [
        f"Workspace {status.root}: {status.files} files ({counts or 'none yet'}); indexing is "
        f"{status.phase}; summaries by {status.annotator}; last full scan {status.last_scan or 'never'}.",
    ]
    if status.role == "reader":
        lines.append(f"Another filescout process (pid {status.writer_pid}) indexes this workspace.")
    if status.model is not None and status.model.state != "off":
        lines.append(
            f"Model: {status.model.state}" + (f" ({status.model.message})" if status.model.message else "")
        )
    if status.last_error:
        lines.append(f"Last error: {status.last_error}")
    return "\n".join(lines)


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        Tool.FIND_RELEVANT_FILES,
        "Find relevant files",
        "The files of this workspace that matter for a task or question, best first, each with a "
        "summary and the reason it was chosen. Pass the user's request as it is (error messages, "
        "stack traces and identifiers help). Answers from a local index in milliseconds; with a "
        "model configured, the model judges the candidates too.",
        FindRelevantFilesInput,
        FindRelevantFilesOutput,
        True,
        find_relevant_files,
        ArgumentNames(
            {
                "scope.paths": "paths",
                "scope.globs": "globs",
                "options.useModel": "use_model",
                "useModel": "use_model",
                "prompt.tokens": "prompt_tokens",
            }
        ),
    ),
    ToolSpec(
        Tool.LIST_FILES,
        "List files",
        "Indexed files with their one-line summaries and tags, filtered by globs, directories, "
        "a text query, tags, kinds, languages or change time; one page at a time.",
        ListFilesInput,
        ListFilesOutput,
        True,
        list_files,
        ArgumentNames(
            {
                "orderBy": "order_by",
                "changedSince": "changed_since",
                "prompt.tokens": "prompt_tokens",
            }
        ),
    ),
    ToolSpec(
        Tool.WORKSPACE_OVERVIEW,
        "Workspace overview",
        "The workspace as an indented tree within a token budget: each directory with what it is "
        "for, its main languages and how many files it holds, each file with its summary; the most "
        "important branches (import graph, history, use) open, the rest folded into counts. Call it "
        "first to learn the lay of the land; pass `query` to open the branches that matter for a task.",
        WorkspaceOverviewInput,
        WorkspaceOverviewOutput,
        True,
        workspace_overview,
    ),
    ToolSpec(
        Tool.INDEX_STATUS,
        "Index status",
        "How many files the index holds, how many are summarized, and what indexing is doing.",
        IndexStatusInput,
        StatusResult,
        True,
        index_status,
    ),
    ToolSpec(
        Tool.REINDEX_WORKSPACE,
        "Reindex workspace",
        "Rescan the workspace for new, changed and deleted files now.",
        ReindexWorkspaceInput,
        ReindexResult,
        False,
        reindex_workspace,
    ),
    ToolSpec(
        Tool.ANNOTATE_FILES,
        "Summarize files",
        "Summarize these files before any others and answer with their summaries.",
        AnnotateFilesInput,
        GetFilesPage,
        False,
        annotate_files,
    ),
)
