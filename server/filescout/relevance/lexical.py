"""The model-free stage of findRelevant: full-text BM25 over what the index knows of each
file (path words, symbols, summary, tags)."""

from __future__ import annotations

from filescout.relevance.filters import PathFilter
from filescout.store import Store
from filescout.text import path_words, unique_words, words
from filescout_protocol.types import FileItem, RelevantItem

# bm25() column weights: path words, symbols, summary, tags.
COLUMN_WEIGHTS = (6.0, 3.0, 1.0, 2.0)
OVERFETCH = 5


def match_expression(query: str) -> str | None:
    """An FTS5 query that ORs the query's words; each is quoted so no input is FTS syntax."""
    terms = unique_words(query)
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


def explain(query_terms: set[str], item: FileItem) -> str:
    in_path = query_terms & set(path_words(item.path).split())
    in_text = query_terms & set(words(" ".join([item.summary, *item.tags])))
    parts = []
    if in_path:
        parts.append("path mentions " + ", ".join(sorted(in_path)))
    if in_text - in_path:
        parts.append("summary mentions " + ", ".join(sorted(in_text - in_path)))
    return "; ".join(parts) or "matches the query's words"


async def lexical_stage(store: Store, query: str, *, limit: int,
                        scope: PathFilter) -> list[RelevantItem]:
    expression = match_expression(query)
    if expression is None:
        return []
    fetch = limit * OVERFETCH if scope.is_empty else max(limit * OVERFETCH, 2000)
    hits = [hit for hit in await store.search(expression, limit=fetch, weights=COLUMN_WEIGHTS)
            if scope.matches(hit.path)][:limit]
    items = await store.files_by_path([hit.path for hit in hits])
    terms = set(unique_words(query))
    return [
        RelevantItem(path=hit.path, score=round(hit.rank, 4), stage="prefilter",
                     reason=explain(terms, items[hit.path]), summary=items[hit.path].summary,
                     tags=items[hit.path].tags, language=items[hit.path].language,
                     kind=items[hit.path].kind)
        for hit in hits if hit.path in items
    ]
