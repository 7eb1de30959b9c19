"""What every signal finds for a question, each read once: the prefilter's reads.

A question's evidence is read in two steps. First, all at once: the two full-text searches (what
describes a file, its content's words), its definitions, the files the question names that the
searches missed, and the past commits like it (history). That gives the candidates and the first
ranking (fusion.py). Then, around that ranking's leaders only: the files that change together
with them, and what the leaders define and import. Nothing here weighs or ranks; fusion.py does,
in one place, and reasons.py says why.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from filescout.core.records import DefinitionHit, FileEntry, SearchHit
from filescout.core.words import words
from filescout.index import Index
from filescout.index.described import DESCRIPTION_WEIGHTS
from filescout.relevance import definitions as defined_here
from filescout.relevance import graph
from filescout.relevance.filters import PathFilter
from filescout.relevance.mentions import Mentions, Naming, name_files, unmatched_names, written_folders
from filescout.relevance.past_commits import RawVotes, companions, gather_votes
from filescout.relevance.query import Query, expression
from filescout.relevance.signals import Signals
from filescout.relevance.weights import DEFAULT, Weights
from filescout.scan.classify import SOURCE_LANGUAGES

STRUCTURE_WEIGHTS = DESCRIPTION_WEIGHTS  # path words, symbols, summary, tags
POOL = 200
SCOPED_POOL = 4000
NAMED_POOL = 50
"""At most this many files for the names written in a question that the searches missed."""
LEADERS_BEYOND_LIMIT = 10
SYMBOL_POOL = 50
"""The leading files whose symbols are read, however few are asked for."""
CO_LEADERS = 3
"""The leading files whose companions (files changing with them) are looked for."""
COMMON_SHARE = 0.1
COMMON_FLOOR = 2000
MIN_TERMS = 2
FTS5_AFFORDS = 10_000
"""Rows FTS5 scores in about ten milliseconds (a microsecond each, bm25 included), counted as
the contents holding each term: beyond it, a search asks its top-k store, with every term, when
the store can answer. Below it FTS5 answers, exactly: the store's BM25 differs from FTS5's in
document lengths (and, for descriptions, in its stemmer), which moves near-ties, and at 4,000
it answered the long reports of the issue-style dev set's largest repository and moved five of
their rankings (R@5 0.737 to 0.732); at 10,000 it answers none of them, and every question of
the 100,000-file benchmark tree but one."""


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
    described_asked: list[str] = field(default_factory=list)
    """The description search's phrases, as asked (`"url_for"`)."""
    content_asked: list[str] = field(default_factory=list)
    """The content search's words, as asked."""

    def fused(self, path: str, weights: Weights | None = None) -> float:
        """The file's text score: with `weights`, as they would weigh it (fit.py tries some)."""
        weights = self.weights if weights is None else weights
        described, content = self.scores[path]
        return described + weights.content * content + weights.definitions * self.defined_lifts.get(path, 0.0)

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


def _fts5_affords(terms: list[str], telling: list[str], frequency: dict[str, int]) -> bool:
    """Whether FTS5 can score every row holding any term in a few milliseconds: no term is too
    common to keep, and all of them together hold few enough rows."""
    return telling == terms and sum(frequency.get(term, 0) for term in terms) <= FTS5_AFFORDS


def _search_descriptions(
    index: Index, terms: list[str], telling: list[str], affordable: bool, limit: int
) -> Coroutine[Any, Any, list[SearchHit]]:
    """FTS5 with every term while it can afford to score every row holding one; beyond that
    the top-k store with every term, and FTS5 with the telling terms only when the store cannot
    answer."""
    fallback = expression(telling)
    if affordable:
        return (
            index.descriptions.search(fallback, limit=limit, weights=STRUCTURE_WEIGHTS)
            if fallback
            else _nothing()
        )
    return index.descriptions.search_terms(terms, limit=limit, weights=STRUCTURE_WEIGHTS, fallback=fallback)


def _search_contents(
    index: Index, terms: list[str], telling: list[str], affordable: bool, limit: int
) -> Coroutine[Any, Any, list[SearchHit]]:
    """When FTS5 cannot afford the terms (it scores every row that holds any of them), the
    index's top-k store ranks with every term in milliseconds, and FTS5 with the telling terms
    only when the store cannot answer. When it can, FTS5 ranks with every term, exactly."""
    fallback = expression(telling, single_tokens=True)
    if not affordable:
        return index.contents.search_words(terms, limit=limit, fallback=fallback)
    return index.contents.search(fallback, limit=limit) if fallback else _nothing()


async def search_both(
    index: Index, terms: list[str], *, limit: int, definitions: int = 0, weights: Weights = DEFAULT
) -> TextMatches:
    """Both full-text searches for `terms`, side by side (two connections), after dropping
    terms too common to tell files apart; with `definitions`, that many best definitions too,
    fused in. When FTS5 cannot afford the terms (it scores every row holding any term: some
    term is too common, or together they hold too many rows), each search asks its top-k store,
    which counts every term in milliseconds, and FTS5 with the telling terms only when the store
    cannot answer; when it can, FTS5 answers with every term, exactly."""
    matches = TextMatches(weights=weights)
    if not terms:
        return matches
    total, frequency = await index.contents.frequencies(terms)
    telling = telling_terms(terms, frequency, total)
    affordable = _fts5_affords(terms, telling, frequency)
    matches.described_asked = [
        f'"{term}"' for term in (telling if affordable or not index.descriptions.exact else terms)
    ]
    matches.content_asked = (
        [term for term in telling if "_" not in term]
        if affordable or not index.contents.exact
        else list(dict.fromkeys(word for term in terms for word in term.replace("_", " ").split()))
    )
    defining = defined_here.specific_terms(telling, frequency, total)
    defining_expression = expression(defining, single_tokens=True) if definitions else None
    described, contents, defined = await asyncio.gather(
        _search_descriptions(index, terms, telling, affordable, limit),
        _search_contents(index, terms, telling, affordable, limit),
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


@dataclass
class Evidence:
    """What every signal found for one question, each computed once: fusion.py weighs it into
    a ranking, reasons.py names it. The first reads give the candidates (`hits`); the reads
    around the leaders (`companions`, `entries`, `links`) follow the first ranking."""

    query: Query
    text: TextMatches
    """Each candidate's description, content and definitions scores."""
    hits: dict[str, SearchHit]
    """The candidates within the scope: each file's kind and how recently the user used it."""
    namings: dict[str, Naming]
    """How the question names each candidate it names (a path, a module, a frame, a folder)."""
    votes: RawVotes | None
    """The past commits like the question, and the files they touched; None without history."""
    companions: dict[str, tuple[float, str]] = field(default_factory=dict)
    """path -> (how often it changes with a leader, that leader), from the leaders' commits."""
    entries: dict[str, tuple[FileEntry, list[str]]] = field(default_factory=dict)
    """The leaders' entries, with the symbols their annotations list."""
    links: graph.Links = field(default_factory=graph.Links)
    """Who imports whom among the leaders."""

    def defines(self, path: str) -> list[str]:
        """What a leader defines: a Markdown heading or a JSON key is among a file's symbols,
        but only code defines one."""
        entry, symbols = self.entries[path]
        return symbols if entry.language in SOURCE_LANGUAGES else []


async def gather(
    index: Index,
    query: Query,
    scope: PathFilter,
    *,
    signals: Signals,
    weights: Weights,
    before: int | None = None,
    uses: bool = True,
) -> Evidence:
    """The first reads, side by side: both text searches and the definitions', the named files
    they missed, and the past commits like the question (older than `before`, when given).
    Without `uses`, the user's use of files is left out (a past commit asked as a question:
    today's use is not the commit's)."""
    if not signals.mentions:
        query = dataclasses.replace(query, mentions=Mentions())
    wide = scope.is_empty
    # The history's votes do not depend on the text ranking: sought beside the text searches.
    votes = asyncio.create_task(gather_votes(index, query, scope, before)) if signals.history else None
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
        inside = await scope.kept(matches.hits)
    except BaseException:
        if votes is not None:
            votes.cancel()
        raise
    hits = {
        path: hit if uses else dataclasses.replace(hit, access_rank=None)
        for path, hit in matches.hits.items()
        if path in inside
    }
    namings = name_files(query.mentions, hits) if query.mentions else {}
    return Evidence(query, matches, hits, namings, await votes if votes is not None else None)


async def read_companions(
    index: Index,
    evidence: Evidence,
    first: Sequence[tuple[float, str]],
    scope: PathFilter,
    prior: dict[str, float],
) -> None:
    """The files that change together with the first ranking's leaders (the text's: a file
    history put first does not bring its own companions)."""
    leaders = [path for _, path in first[:CO_LEADERS]]
    if evidence.votes is not None and leaders:
        evidence.companions = await companions(index, leaders, evidence.query, scope, prior)


def leaders(ranked: Sequence[tuple[float, str]], limit: int) -> list[tuple[float, str]]:
    """The leading files whose symbols and imports are read: those asked for and a few more."""
    return list(ranked[: max(limit + LEADERS_BEYOND_LIMIT, SYMBOL_POOL)])


async def read_leaders(
    index: Index, evidence: Evidence, paths: list[str], *, current: str, signals: Signals
) -> None:
    """The leaders' entries and symbols, and the import links among them, side by side."""
    evidence.entries, evidence.links = await asyncio.gather(
        index.files.entries_with_symbols(paths, current=current),
        graph.read_links(index, paths, paths) if signals.imports else _no_links(),
    )
