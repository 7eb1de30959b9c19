"""Stage 1 of findRelevant, no model: full-text search over everything the index knows, fused
with what the question names, the kind of file, and how much the user works with it.

Two BM25 rankings are combined: one over what describes a file (path words, symbols, summary,
tags; FTS5 column weights), one over its content's words. Each normalises by its own document
lengths, so a long file's content does not drown its path and symbols. The fused score is then
adjusted: files the question names (`src/app/routing.py`, `routing.py`, `app.routing`, a stack
frame, `fix(routing):`) move up, and so do the files that define a symbol it mentions
(`url_for`, `RouteMap`), more than the files that merely use it (mentions.py tells mentions from
ordinary words); tests, docs, config and data move down unless the question is about them or
names them; frecently used files get a small lift.

Two more signals: definitions are searched on their own and rolled up to their files (a large
file with one function about the question is not drowned by its other words; definitions.py),
and the files the leaders import, or are imported by, gain a small share of their scores
(graph.py).

How much the content counts beside the description, the definitions' lift, the kind priors and
the history's votes are weights (weights.py): the defaults, or those fitted on the repository's
own past commits where they ranked its newest commits better (fit.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from filescout.core.records import DefinitionHit, FileEntry, SearchHit
from filescout.core.words import IDENTIFIER, path_words, words
from filescout.index import Index
from filescout.index.access import current_score
from filescout.relevance import definitions as defined_here
from filescout.relevance import graph
from filescout.relevance.filters import PathFilter
from filescout.relevance.mentions import (
    Mentions,
    Naming,
    defined,
    name_files,
    unmatched_names,
    written_folders,
)
from filescout.relevance.past_commits import lift_by_history, past_votes
from filescout.relevance.query import Query, expression
from filescout.relevance.signals import Signals
from filescout.relevance.weights import DEFAULT, KIND_PRIOR, Weights, current_weights
from filescout.scan.classify import SOURCE_LANGUAGES, is_vendored

STRUCTURE_WEIGHTS = (6.0, 3.0, 1.0, 2.0)  # path words, symbols, summary, tags
POOL = 200
SCOPED_POOL = 4000
VENDORED_PRIOR = 0.3
"""Code copied in from other projects (`vendor/`, `third_party/`) sits below the workspace's own,
as data does, unless the question is about dependencies: a Go repository that vendors its
modules holds more of their files than of its own, and their words match any question."""
ASKED_KIND_LIFT = {"document": 1.5, "image": 1.5}
"""A question that names a document or an image as what it is after ("which PDF specifies",
"the architecture diagram") wants one: files of that kind are lifted, not only spared the prior
(a question that mentions tests or docs may be about the code as much)."""
DEFINITIONS_REASON = 0.1
"""A file's definitions are named among its reasons when they gave it this share of its score."""
DEFINES_MENTIONED = 1.0
"""Lift for defining a symbol the question mentions, shared among the leaders that define it:
as much as being named by path (mentions.NAMES_PATH)."""
LEADERS_BEYOND_LIMIT = 10
SYMBOL_POOL = 50
"""The leading files whose symbols are read, however few are asked for."""
NAMED_POOL = 50
"""At most this many files for the names written in a question that the searches missed."""
STEM_WORD = 0.3
"""Lift for a file whose stem is a plain word of the question, shared among such files."""
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


async def _no_definitions() -> list[DefinitionHit]:
    return []


async def _no_links() -> graph.Links:
    return graph.Links()


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
    defined: dict[str, defined_here.DefinedMatch] = field(default_factory=dict)
    """path -> its definitions that match, when definitions were searched"""
    defined_lifts: dict[str, float] = field(default_factory=dict)
    """path -> what its matching definitions add to its score"""
    weights: Weights = DEFAULT

    def fused(self, path: str) -> float:
        described, content = self.scores[path]
        return (
            described
            + self.weights.content * content
            + self.weights.definitions * self.defined_lifts.get(path, 0.0)
        )

    def add_definitions(self, found: list[DefinitionHit]) -> None:
        """Fuse the definitions' ranking into the files': each file's rolled-up score, scaled
        to the file-level scores; a file only its definitions match joins the hits."""
        text = {path: self.fused(path) for path in self.scores}
        self.defined = defined_here.roll_up(found)
        for hit in found:
            if hit.path not in self.hits:
                self.hits[hit.path] = SearchHit(hit.path, 0.0, hit.kind, hit.access_rank)
                self.scores[hit.path] = [0.0, 0.0]
        self.defined_lifts = defined_here.lifts(self.defined, text)


def _search_contents(
    index: Index, terms: list[str], telling: list[str], limit: int
) -> Coroutine[Any, Any, list[SearchHit]]:
    """When some terms are too common for FTS5 to afford (it scores every row that holds any
    of them), the index's top-k store ranks with every term in milliseconds, and FTS5 with the
    telling terms only when the store cannot answer. When none is, FTS5 ranks with every term,
    exactly and cheaply."""
    fallback = expression(telling, single_tokens=True)
    if telling != terms:
        return index.contents.search_words(terms, limit=limit, fallback=fallback)
    return index.contents.search(fallback, limit=limit) if fallback else _nothing()


async def search_both(
    index: Index, terms: list[str], *, limit: int, definitions: int = 0, weights: Weights = DEFAULT
) -> TextMatches:
    """Both full-text searches for `terms`, side by side (two connections), after dropping
    terms too common to tell files apart; with `definitions`, that many best definitions too,
    fused in. When some terms are too common for FTS5 to afford (it scores every row holding
    any term), the content search asks the index's top-k store, which counts every term in
    milliseconds, and FTS5 with the telling terms only when the store cannot answer; when none
    is, FTS5 answers with every term, exactly and cheaply."""
    matches = TextMatches(weights=weights)
    if not terms:
        return matches
    total, frequency = await index.contents.frequencies(terms)
    telling = telling_terms(terms, frequency, total)
    described_expression = expression(telling)
    defining = defined_here.specific_terms(telling, frequency, total)
    defining_expression = expression(defining, single_tokens=True) if definitions else None
    described, contents, defined = await asyncio.gather(
        index.descriptions.search(described_expression, limit=limit, weights=STRUCTURE_WEIGHTS)
        if described_expression
        else _nothing(),
        _search_contents(index, terms, telling, limit),
        index.definitions.search(defining_expression, limit=definitions, weights=defined_here.WEIGHTS)
        if defining_expression and definitions
        else _no_definitions(),
    )
    for column, found in enumerate((described, contents)):
        for hit in found:
            matches.hits[hit.path] = hit
            matches.scores.setdefault(hit.path, [0.0, 0.0])[column] = hit.rank
    if defined:
        matches.add_definitions(defined)
    return matches


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].split(".", 1)[0].lower()


def word_stem_lifts(terms: Sequence[str], paths: Iterable[str]) -> dict[str, float]:
    """A plain word of the question that is a file's stem ("the lexer") is no mention, but it
    tells a little, in proportion to how few files it could mean: in a workspace of many
    `template.go` files the word "template" lifts each of them by next to nothing."""
    plain = {term for term in terms if len(term) >= 3}
    by_stem: dict[str, list[str]] = {}
    for path in paths:
        stem = _stem(path)
        if stem in plain:
            by_stem.setdefault(stem, []).append(path)
    return {path: STEM_WORD / len(same) for same in by_stem.values() for path in same}


async def find_named_files(index: Index, query: Query, matches: TextMatches) -> None:
    """Add the files the question names by name that the searches missed: in a large workspace
    `index.d.ts` is made of words too common to rank. Only the path words are searched, so the
    score is the description search's for those words alone; files that only share the words
    (`Node.js` written, `lib/node/index.js` found) are left out. The same for the files directly
    in a folder the question names (`internal/testutil/daemon: …`)."""
    missing = unmatched_names(query.mentions, matches.hits)
    clauses = []
    for name in missing:
        stem, _, extension = name.lstrip(".").partition(".")
        named = list(dict.fromkeys([*words(stem), *words(extension)]))
        if set(named) & set(words(stem)):  # `do.py` has no word of its own to find it by
            clauses.append(" AND ".join(f'"{word}"' for word in named))
    folders = written_folders(query.mentions)
    for folder in sorted(folders):
        named = list(dict.fromkeys(words(folder)))
        if named:
            clauses.append(" AND ".join(f'"{word}"' for word in named))
    if not clauses:
        return
    match = " OR ".join(f"path : ({clause})" for clause in clauses)
    wanted = {name.lower() for name in missing}
    for hit in await index.descriptions.search(match, limit=NAMED_POOL, weights=STRUCTURE_WEIGHTS):
        directory, _, name = hit.path.lower().rpartition("/")
        in_folder = any(directory == folder or directory.endswith("/" + folder) for folder in folders)
        if hit.path not in matches.hits and ({name, name.split(".", 1)[0]} & wanted or in_folder):
            matches.hits[hit.path] = hit
            matches.scores[hit.path] = [hit.rank, 0.0]


async def prefilter(
    index: Index,
    query: Query,
    *,
    limit: int,
    scope: PathFilter,
    current: str,
    now: float | None = None,
    signals: Signals | None = None,
    weights: Weights | None = None,
) -> list[Candidate]:
    """The best `limit` files for `query` within `scope`, best first. `current` is the
    annotator whose annotations count as up to date; `weights`: the workspace's (weights.py)
    unless given."""
    if not query.terms:
        return []
    signals = Signals.from_environment() if signals is None else signals
    if weights is None:
        weights = await current_weights(index) if signals.fit else DEFAULT
    prior = weights.kind_prior
    if not signals.mentions:
        query = dataclasses.replace(query, mentions=Mentions())
    wide = scope.is_empty
    # The history's votes do not depend on the text ranking: sought beside the text searches.
    votes = asyncio.create_task(past_votes(index, query, scope, prior)) if signals.history else None
    try:
        matches = await search_both(
            index,
            query.terms,
            limit=POOL if wide else SCOPED_POOL,
            definitions=(defined_here.POOL if wide else defined_here.SCOPED_POOL)
            if signals.definitions
            else 0,
            weights=weights,
        )
        await find_named_files(index, query, matches)
    except BaseException:
        if votes is not None:
            votes.cancel()
        raise
    inside = await scope.kept(matches.hits)
    hits = {path: hit for path, hit in matches.hits.items() if path in inside}
    namings = name_files(query.mentions, hits) if query.mentions else {}
    scored = first_scores(query, matches, hits, namings, time.time() if now is None else now, prior)
    # The repository's history (git work trees): votes of similar past commits, co-change.
    history = (
        await lift_by_history(index, query, scored, scope, prior, await votes, weight=weights.history)
        if votes
        else None
    )
    scored = history.ranked if history else scored
    # Symbols (for what the question mentions) only for the leaders; reasons only for the answer.
    leaders = scored[: max(limit + LEADERS_BEYOND_LIMIT, SYMBOL_POOL)]
    paths = [path for _, path in leaders]
    facts, links = await asyncio.gather(
        index.files.entries_with_symbols(paths, current=current),
        graph.read_links(index, paths, paths) if signals.imports else _no_links(),
    )
    symbols = {path: facts[path][1] for _, path in leaders if path in facts}
    # A Markdown heading or a JSON key is among a file's symbols, but only code defines one.
    definitions = {
        path: found if facts[path][0].language in SOURCE_LANGUAGES else [] for path, found in symbols.items()
    }
    ranked = rescore_with_symbols(query, leaders, definitions, namings)
    lifts = graph.spread([(score, path) for score, path, _ in ranked], links)
    if lifts:
        ranked = sorted(
            (
                (score + (lifts[path].amount if path in lifts else 0.0), path, mentioned)
                for score, path, mentioned in ranked
            ),
            key=lambda entry: (-entry[0], entry[1]),
        )
    candidates: list[Candidate] = []
    for score, path, mentioned in ranked[:limit]:
        item, _ = facts[path]
        naming = namings.get(path)
        reasons = [naming.reason] if naming else []
        if mentioned:
            reasons.append(
                "defines " + ", ".join(f"`{name}`" for name in mentioned[:3]) + " the question mentions"
            )
        if path in matches.defined and matches.defined_lifts[path] >= DEFINITIONS_REASON * matches.fused(
            path
        ):
            reasons.append(defined_here.describe(matches.defined[path], query.terms))
        if path in lifts:
            reasons.append(graph.reason(lifts[path]))
        reasons += ["you used it recently"] if path in hits and hits[path].access_rank is not None else []
        reasons += explain(query, item, symbols[path])
        if path in matches.scores and not matches.scores[path][0] and matches.scores[path][1]:
            reasons.append("its content matches the question's words")
        reasons += history.reasons.get(path, []) if history else []
        candidates.append(Candidate(item=item, score=score, reasons=reasons))
    return candidates


def first_scores(
    query: Query,
    matches: TextMatches,
    hits: dict[str, SearchHit],
    namings: dict[str, Naming],
    now: float,
    prior: dict[str, float] = KIND_PRIOR,
) -> list[tuple[float, str]]:
    """Every hit's fused text score, adjusted for its kind, its use and how the question names
    it; best first."""
    stem_lifts = word_stem_lifts(query.terms, hits)
    scored: list[tuple[float, str]] = []
    for path, hit in hits.items():
        score = matches.fused(path)
        naming = namings.get(path)
        if hit.kind in query.asks_for:
            score *= ASKED_KIND_LIFT.get(hit.kind, 1.0)
        elif not (naming and naming.explicit):
            score *= prior.get(hit.kind, 0.45)
            if "vendored" not in query.asks_for and is_vendored(path):
                score *= VENDORED_PRIOR
        if hit.access_rank is not None:
            recent_uses = current_score(hit.access_rank, now)
            score *= 1 + FRECENCY * min(recent_uses, FRECENCY_SATURATION) / FRECENCY_SATURATION
        if naming:
            score *= 1 + naming.lift
        elif path in stem_lifts:
            score *= 1 + stem_lifts[path]
        if score > 0:
            scored.append((score, path))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    return scored


def rescore_with_symbols(
    query: Query,
    leaders: list[tuple[float, str]],
    symbols: dict[str, list[str]],
    namings: dict[str, Naming],
) -> list[tuple[float, str, list[str]]]:
    """The leaders lifted for defining what the question mentions (`symbols`: what each
    defines), best first, with those symbols. A symbol's lift is shared among the leading files
    that define it, counted in a pool of fixed size, so `__init__` lifts no one much and the
    order does not depend on how many files were asked for."""
    pool = [path for _, path in leaders[:SYMBOL_POOL] if path in symbols]
    definers = Counter(name for path in pool for name in defined(query.mentions, symbols[path]))
    ranked: list[tuple[float, str, list[str]]] = []
    for score, path in leaders:
        if path not in symbols:
            continue
        naming = namings.get(path)
        if naming and naming.confirmed_by is not None:
            score *= (1 + naming.lift_given(symbols[path])) / (1 + naming.lift)
        mentioned = defined(query.mentions, symbols[path])
        if mentioned:
            shares = sum(1 / max(definers[name], 1) for name in mentioned)
            score *= 1 + DEFINES_MENTIONED * min(1.0, shares)
        ranked.append((score, path, mentioned))
    ranked.sort(key=lambda entry: (-entry[0], entry[1]))
    return ranked


def explain(query: Query, item: FileEntry, symbols: list[str]) -> list[str]:
    terms = set(query.terms)
    in_path = terms & set(path_words(item.path).split())
    description = " ".join([item.summary, *item.tags, *symbols[:20]])
    # Every word of a text is a piece of it, lower-cased: a term that is not a substring cannot
    # be one of its words, and most are not, so most descriptions are never split into words.
    lowered = description.lower()
    maybe = {term for term in terms - in_path if term in lowered}
    described: set[str] = set()
    for token in IDENTIFIER.findall(description) if maybe else ():
        # A word of a token is a piece of it: only tokens holding a term are split.
        if any(term in token.lower() for term in maybe):
            described.update(maybe.intersection(words(token)))
    reasons = []
    if in_path:
        reasons.append("path mentions " + ", ".join(sorted(in_path)[:4]))
    if described:
        reasons.append("summary and symbols mention " + ", ".join(sorted(described)[:4]))
    return reasons
