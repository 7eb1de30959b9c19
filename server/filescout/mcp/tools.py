"""The MCP tools. Each decodes its arguments into a protocol Struct, makes one call on the
engine, and answers with the result as structured content plus a text block a chat panel can
put into its prompt as it is."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from filescout.engine import Workspace
from filescout.engine.prompt import Listed, render
from filescout_protocol.tools import (
    AnnotateFilesInput,
    FindRelevantFilesInput,
    IndexStatusInput,
    ListFilesInput,
    ReindexWorkspaceInput,
    Tool,
)
from filescout_protocol.types import (
    FindRelevantParams,
    FindRelevantResult,
    GetFilesPage,
    GetFilesParams,
    PromptOptions,
    ReindexResult,
    RelevanceOptions,
    Scope,
    StatusResult,
)

NEXT_PAGE_TOKENS = 40
"""Kept for the line after the block that says how to get the next page."""
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
    async for update in engine.find_relevant_stream(params):
        if update.done:
            result = update.result()
            return result, result.prompt or ""
        step += 1
        await report(step, None, f"{update.stage}: {len(update.items)} files")
    raise AssertionError("the relevance stages ended without an answer")


async def list_files(engine: Workspace, args: ListFilesInput, report: Report) -> Answer:
    page = await engine.files_page(
        GetFilesParams(
            globs=args.globs,
            paths=args.paths,
            query=args.query,
            tags=args.tags,
            kinds=args.kinds,
            languages=args.languages,
            status=args.status,
            changed_since=args.changed_since,
            order_by=args.order_by,
            limit=args.limit,
            cursor=args.cursor,
            prompt=PromptOptions(tokens=args.prompt_tokens - NEXT_PAGE_TOKENS),
        )
    )
    text = page.prompt or ""
    if page.next_cursor:
        text += f'\nMore files: call list_files again with cursor "{page.next_cursor}".'
    return page, text


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
    text = render("Files summarized:", listed, tokens=200_000)
    return GetFilesPage(items=items, next_cursor=None, prompt=text), text


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
        FindRelevantResult,
        True,
        find_relevant_files,
    ),
    ToolSpec(
        Tool.LIST_FILES,
        "List files",
        "Indexed files with their one-line summaries and tags, filtered by globs, directories, "
        "a text query, tags, kinds, languages or change time; one page at a time.",
        ListFilesInput,
        GetFilesPage,
        True,
        list_files,
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
