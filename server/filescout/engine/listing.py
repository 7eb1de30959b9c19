"""files/getFiles: every file matching a request's filters, in its order, streamed in batches
or paged with a cursor. SQLite evaluates what it can; globs are matched here. A text query uses
the prefilter's fused two-index search, without its priors, so `rank` order is plain BM25."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

from filescout.core.errors import InvalidParams
from filescout.core.records import FileEntry
from filescout.engine.prompt import Listed, render
from filescout.engine.shown import shown
from filescout.index import FileFilter, Index
from filescout.relevance.filters import PathFilter, decode_cursor, encode_cursor
from filescout_protocol.types import FileItem, GetFilesPage, GetFilesParams

DEFAULT_PAGE_SIZE = 1000
TEXT_MATCH_LIMIT = 10_000
LISTED_KINDS = ("source", "test", "docs", "config", "data", "document", "image", "generated", "other")
"""What getFiles lists when the caller names no kinds: everything with a summary worth reading."""
MATCHING_SLICE = 0.01
"""Seconds of glob matching before the event loop serves what else came in (a cancellation too):
a listing may match every path of the index against a hundred long globs."""


def file_item(entry: FileEntry) -> FileItem:
    """The file as a client sees it: its summary and tags redacted (`shown`)."""
    return shown(
        FileItem(
            path=entry.path,
            summary=entry.shown_summary,
            tags=entry.tags,
            language=entry.language,
            kind=entry.kind,
            size=entry.size,
            mtime=entry.mtime_ns // 1_000_000,
            status=entry.status,
            annotator=entry.annotator,
        )
    )


def order_of(params: GetFilesParams) -> str:
    return params.order_by or ("rank" if params.query else "path")


class FileListing:
    def __init__(self, root: Path, index: Index) -> None:
        self._root = root
        self._index = index

    async def stream(self, params: GetFilesParams, *, current: str) -> AsyncIterator[list[FileItem]]:
        """Every matching file, in batches of `params.batch_size`."""
        if params.prompt is not None:
            raise InvalidParams(
                "prompt: a prompt-ready block comes with a page; leave out partialResultToken"
            )
        batch: list[FileItem] = []
        async for entry, _ in self._matching(params, current):
            batch.append(file_item(entry))
            if len(batch) >= params.batch_size:
                yield batch
                batch = []
        if batch:
            yield batch

    async def page(self, params: GetFilesParams, *, current: str) -> GetFilesPage:
        limit = params.limit or DEFAULT_PAGE_SIZE
        items: list[FileItem] = []
        next_cursor = None
        last_key: tuple[Any, ...] = ()
        matching = self._matching(params, current)
        try:
            async for entry, key in matching:
                if len(items) == limit:
                    next_cursor = encode_cursor(order_of(params), last_key)
                    break
                items.append(file_item(entry))
                last_key = key
        finally:
            await matching.aclose()
        page = GetFilesPage(items=items, next_cursor=next_cursor)
        if params.prompt is not None:
            listed = [Listed(item.path, item.summary) for item in items]
            more = " (more on the next page)" if next_cursor else ""
            page.prompt = render(f"Files listed{more}:", listed, tokens=params.prompt.tokens)
        return page

    async def _matching(
        self, params: GetFilesParams, current: str
    ) -> AsyncGenerator[tuple[FileEntry, tuple[Any, ...]], None]:
        """Files matching every filter of `params`, in its order, each with its position."""
        path_filter = await PathFilter.built(self._root, params.globs, params.paths)
        order = order_of(params)
        if order == "rank" and not params.query:
            raise InvalidParams("orderBy: `rank` orders by a text query; pass `query` too")
        position = decode_cursor(params.cursor, order) if params.cursor else None
        ranked = await self._text_matches(params.query) if params.query else None
        where = FileFilter(
            prefixes=path_filter.prefixes,
            kinds=tuple(params.kinds or LISTED_KINDS),
            languages=tuple(params.languages),
            statuses=tuple(params.status),
            changed_since_ns=params.changed_since * 1_000_000 if params.changed_since is not None else None,
            tags=tuple(tag.lower() for tag in params.tags),
            all_tags=params.tags_match == "all",
            ranked=tuple(ranked) if ranked is not None else None,
        )
        # A small first page answers quickly; later pages are larger, so fewer round trips.
        first_page = max(min(params.batch_size, params.limit or DEFAULT_PAGE_SIZE) + 1, 100)
        globs = path_filter.globs
        pause_at = time.monotonic() + MATCHING_SLICE
        async for page in self._index.files.listing(
            where, current=current, order=order, position=position, first_page=first_page
        ):
            for entry, key in page:
                if globs is not None:
                    if time.monotonic() > pause_at:
                        await asyncio.sleep(0)
                        pause_at = time.monotonic() + MATCHING_SLICE
                    if not globs.match(entry.path):
                        continue
                yield entry, key

    async def _text_matches(self, text: str) -> list[str]:
        """Paths whose descriptions or content match `text`, best first (BM25, no priors)."""
        # Imported by the first text query, not at startup (see Workspace.find_relevant_stream).
        from filescout.relevance.evidence import search_both
        from filescout.relevance.query import analyse

        terms = analyse(text).terms
        if not terms:
            raise InvalidParams("query: no searchable words in it")
        matches = await search_both(self._index, terms, limit=TEXT_MATCH_LIMIT)
        return sorted(matches.scores, key=lambda path: (-matches.fused(path), path))
