"""Stage 1 of findRelevant, no model: full-text search over everything the index knows, fused
with what the question names, the kind of file, and how much the user works with it.

Two BM25 rankings are combined: one over what describes a file (path words, symbols, summary,
tags; FTS5 column weights), one over its content's words. Each normalises by its own document
lengths, so a long file's content does not drown its path and symbols. The fused score is then
adjusted: files the question names (`routing.py`, `url_for`) move up; tests, docs, config and
data move down unless the question is about them; frecently used files get a small lift.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field

from filescout.relevance.filters import PathFilter
from filescout.relevance.query import Query, expression
from filescout.store import DECAY, SearchHit, Store
from filescout.text import path_words, words
from filescout_protocol.types import FileItem

STRUCTURE_WEIGHTS = (6.0, 3.0, 1.0, 2.0)  # path words, symbols, summary, tags
CONTENT_WEIGHT = 1.0
POOL = 200
SCOPED_POOL = 4000
KIND_PRIOR = {"source": 1.0, "test": 0.45, "config": 0.5, "docs": 0.35, "other": 0.45,
              "data": 0.3, "generated": 0.2, "binary": 0.0}
NAMED_FILE = 0.3
NAMED_SYMBOL = 0.15
FRECENCY = 0.15
FRECENCY_SATURATION = 4.0
COMMON_SHARE = 0.1
COMMON_FLOOR = 2000
MIN_TERMS = 2


@dataclass
class Candidate:
    item: FileItem
    score: float
    reasons: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons) or "matches the question's words"


async def _nothing() -> list[SearchHit]:
    return []


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0].lower()


def telling_terms(terms: list[str], frequency: dict[str, int], total: int) -> list[str]:
    """The terms rare enough to tell files apart. In a large index, a word in a fifth of all
    files adds little to BM25 but makes the search visit a fifth of the index; the rarest few
    always stay, and small indexes keep every term."""
    if total == 0:
        return terms
    threshold = max(COMMON_SHARE * total, COMMON_FLOOR)
    common = [term for term in terms if frequency.get(term, 0) > threshold]
    if len(terms) - len(common) >= MIN_TERMS:
        return [term for term in terms if term not in common]
    rarest = sorted(terms, key=lambda term: frequency.get(term, 0))[:MIN_TERMS]
    return [term for term in terms if term in rarest]


async def prefilter(store: Store, query: Query, *, limit: int, scope: PathFilter,
                    now: float | None = None) -> list[Candidate]:
    """The best `limit` files for `query` within `scope`, best first."""
    if not query.terms:
        return []
    total, frequency = await store.content_frequencies(query.terms)
    terms = telling_terms(query.terms, frequency, total)
    pool = POOL if scope.is_empty else SCOPED_POOL
    described_expression = expression(terms)
    content_expression = expression(terms, single_tokens=True)
    described, contents = await asyncio.gather(  # two connections: they run side by side
        store.search(described_expression, limit=pool, weights=STRUCTURE_WEIGHTS)
        if described_expression else _nothing(),
        store.search_bodies(content_expression, limit=pool) if content_expression else _nothing())
    hits: dict[str, SearchHit] = {}
    text_scores: dict[str, list[float]] = {}
    for column, found in enumerate((described, contents)):
        for hit in found:
            hits[hit.path] = hit
            text_scores.setdefault(hit.path, [0.0, 0.0])[column] = hit.rank
    now = time.time() if now is None else now
    scored: list[tuple[float, str, bool, bool]] = []
    for path, hit in hits.items():
        if not scope.matches(path):
            continue
        score = text_scores[path][0] + CONTENT_WEIGHT * text_scores[path][1]
        stem = _stem(path)
        named = len(stem) >= 3 and stem in query.names
        if named:
            score *= 1 + NAMED_FILE
        if hit.kind not in query.asks_for:
            score *= KIND_PRIOR.get(hit.kind, 0.45)
        if hit.access_rank is not None:
            recent_uses = math.exp(hit.access_rank - now * DECAY)
            score *= 1 + FRECENCY * min(recent_uses, FRECENCY_SATURATION) / FRECENCY_SATURATION
        if score > 0:
            scored.append((score, path, named, hit.access_rank is not None))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    # Symbols (for the named-symbol lift) only for the leaders; reasons only for the answer.
    leaders = scored[: limit + 10]
    facts = await store.relevance_facts([path for _, path, _, _ in leaders])
    ranked: list[tuple[float, str, bool, bool, list[str]]] = []
    for score, path, named_file, used in leaders:
        if path not in facts:
            continue
        _, symbols = facts[path]
        named = [symbol for symbol in symbols if len(symbol) >= 3 and symbol.lower() in query.names]
        ranked.append((score * (1 + NAMED_SYMBOL) if named else score, path, named_file, used, named))
    ranked.sort(key=lambda entry: (-entry[0], entry[1]))
    candidates: list[Candidate] = []
    for score, path, named_file, used, named in ranked[:limit]:
        item, symbols = facts[path]
        reasons = ["the question names this file"] if named_file else []
        reasons += ["defines " + ", ".join(named[:3])] if named else []
        reasons += ["you used it recently"] if used else []
        reasons += explain(query, item, symbols)
        if not text_scores[path][0]:
            reasons.append("its content matches the question's words")
        candidates.append(Candidate(item=item, score=score, reasons=reasons))
    return candidates


def explain(query: Query, item: FileItem, symbols: list[str]) -> list[str]:
    terms = set(query.terms)
    in_path = terms & set(path_words(item.path).split())
    described = terms & set(words(" ".join([item.summary, *item.tags, *symbols[:20]])))
    reasons = []
    if in_path:
        reasons.append("path mentions " + ", ".join(sorted(in_path)[:4]))
    if described - in_path:
        reasons.append("summary and symbols mention " + ", ".join(sorted(described - in_path)[:4]))
    return reasons
