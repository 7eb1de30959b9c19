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
import time
from dataclasses import dataclass, field

from filescout.index import Index
from filescout.index.access import current_score
from filescout.records import FileEntry, SearchHit
from filescout.relevance.filters import PathFilter
from filescout.relevance.query import Query, expression
from filescout.text import path_words, words

STRUCTURE_WEIGHTS = (6.0, 3.0, 1.0, 2.0)  # path words, symbols, summary, tags
CONTENT_WEIGHT = 1.0
POOL = 200
SCOPED_POOL = 4000
KIND_PRIOR = {
    "source": 1.0,
    "test": 0.45,
    "config": 0.5,
    "docs": 0.35,
    "other": 0.45,
    "data": 0.3,
    "generated": 0.2,
    "binary": 0.0,
}
NAMED_FILE = 0.3
NAMED_SYMBOL = 0.15
FRECENCY = 0.15
FRECENCY_SATURATION = 4.0
COMMON_SHARE = 0.1
COMMON_FLOOR = 2000
MIN_TERMS = 2


@dataclass
class Candidate:
    item: FileEntry
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


@dataclass
class TextMatches:
    """Hits of the two full-text searches, by path, with each search's BM25 score."""

    hits: dict[str, SearchHit] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)
    """path -> [description score, content score]"""

    def fused(self, path: str) -> float:
        described, content = self.scores[path]
        return described + CONTENT_WEIGHT * content


async def search_both(index: Index, terms: list[str], *, limit: int) -> TextMatches:
    """Both full-text searches for `terms`, side by side (two connections), after dropping
    terms too common to tell files apart."""
    matches = TextMatches()
    if not terms:
        return matches
    total, frequency = await index.contents.frequencies(terms)
    telling = telling_terms(terms, frequency, total)
    described_expression = expression(telling)
    content_expression = expression(telling, single_tokens=True)
    described, contents = await asyncio.gather(
        index.descriptions.search(described_expression, limit=limit, weights=STRUCTURE_WEIGHTS)
        if described_expression
        else _nothing(),
        index.contents.search(content_expression, limit=limit) if content_expression else _nothing(),
    )
    for column, found in enumerate((described, contents)):
        for hit in found:
            matches.hits[hit.path] = hit
            matches.scores.setdefault(hit.path, [0.0, 0.0])[column] = hit.rank
    return matches


async def prefilter(
    index: Index, query: Query, *, limit: int, scope: PathFilter, current: str, now: float | None = None
) -> list[Candidate]:
    """The best `limit` files for `query` within `scope`, best first. `current` is the
    annotator whose annotations count as up to date."""
    if not query.terms:
        return []
    matches = await search_both(index, query.terms, limit=POOL if scope.is_empty else SCOPED_POOL)
    hits, text_scores = matches.hits, matches.scores
    now = time.time() if now is None else now
    scored: list[tuple[float, str, bool, bool]] = []
    for path, hit in hits.items():
        if not scope.matches(path):
            continue
        score = matches.fused(path)
        stem = _stem(path)
        named = len(stem) >= 3 and stem in query.names
        if named:
            score *= 1 + NAMED_FILE
        if hit.kind not in query.asks_for:
            score *= KIND_PRIOR.get(hit.kind, 0.45)
        if hit.access_rank is not None:
            recent_uses = current_score(hit.access_rank, now)
            score *= 1 + FRECENCY * min(recent_uses, FRECENCY_SATURATION) / FRECENCY_SATURATION
        if score > 0:
            scored.append((score, path, named, hit.access_rank is not None))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    # Symbols (for the named-symbol lift) only for the leaders; reasons only for the answer.
    leaders = scored[: limit + 10]
    facts = await index.files.entries_with_symbols([path for _, path, _, _ in leaders], current=current)
    ranked: list[tuple[float, str, bool, bool, list[str]]] = []
    for score, path, named_file, used in leaders:
        if path not in facts:
            continue
        _, symbols = facts[path]
        defined = [symbol for symbol in symbols if len(symbol) >= 3 and symbol.lower() in query.names]
        ranked.append((score * (1 + NAMED_SYMBOL) if defined else score, path, named_file, used, defined))
    ranked.sort(key=lambda entry: (-entry[0], entry[1]))
    candidates: list[Candidate] = []
    for score, path, named_file, used, defined in ranked[:limit]:
        item, symbols = facts[path]
        reasons = ["the question names this file"] if named_file else []
        reasons += ["defines " + ", ".join(defined[:3])] if defined else []
        reasons += ["you used it recently"] if used else []
        reasons += explain(query, item, symbols)
        if not text_scores[path][0]:
            reasons.append("its content matches the question's words")
        candidates.append(Candidate(item=item, score=score, reasons=reasons))
    return candidates


def explain(query: Query, item: FileEntry, symbols: list[str]) -> list[str]:
    terms = set(query.terms)
    in_path = terms & set(path_words(item.path).split())
    described = terms & set(words(" ".join([item.summary, *item.tags, *symbols[:20]])))
    reasons = []
    if in_path:
        reasons.append("path mentions " + ", ".join(sorted(in_path)[:4]))
    if described - in_path:
        reasons.append("summary and symbols mention " + ", ".join(sorted(described - in_path)[:4]))
    return reasons
