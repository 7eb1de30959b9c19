"""Every signal weighed into one ranking, in one place and in order; no reads (evidence.py reads).

1. The text: what describes a file and its content, each a BM25 normalised by its own document
   lengths (so a long file's content does not drown its path and symbols), plus what its
   matching definitions add.
2. Adjusted for the file: its kind (tests, docs, config and data sit below source unless the
   question asks for them or names them; code copied in from other projects below the
   workspace's own; declaration files below the code they declare), the user's recent use, how
   the question names it (a path, a module, a frame, a folder) or, failing that, a plain word of
   the question that is its stem.
3. History: past commits like the question lift the files they touched and admit a few more
   (past_commits.py); then the files that change together with the text's leaders.
4. Around the leaders: defining a symbol the question mentions, shared among the leaders that
   define it; and a share of a leader's score for the files it imports or is imported by.

Steps 1 and 2 give the first ranking; 3 and 4 reorder it by rank, not by adding scores on another
scale, so strong evidence places a file among the first few without flooding the list.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from filescout.index.access import current_score
from filescout.relevance import graph
from filescout.relevance.evidence import SYMBOL_POOL, Evidence
from filescout.relevance.mentions import defined
from filescout.relevance.past_commits import CO_CONFIDENCE, Votes, weigh_votes
from filescout.relevance.weights import Weights
from filescout.scan.classify import is_declaration, is_vendored

VENDORED_PRIOR = 0.3
"""Code copied in from other projects (`vendor/`, `third_party/`) sits below the workspace's own,
as data does, unless the question is about dependencies: a Go repository that vendors its
modules holds more of their files than of its own, and their words match any question."""
DECLARATION_PRIOR = 0.5
"""A declaration file (`index.d.ts`, a `.pyi` stub) restates the API its implementation defines,
so its names match a question about that code as well as the code's own file does; it sits below,
as config does, unless the question is about types."""
ASKED_KIND_LIFT = {"document": 1.5, "image": 1.5}
"""A question that names a document or an image as what it is after ("which PDF specifies",
"the architecture diagram") wants one: files of that kind are lifted, not only spared the prior
(a question that mentions tests or docs may be about the code as much)."""
DEFINES_MENTIONED = 1.0
"""Lift for defining a symbol the question mentions, shared among the leaders that define it:
as much as being named by path (mentions.NAMES_PATH)."""
STEM_WORD = 0.3
"""Lift for a file whose stem is a plain word of the question, shared among such files."""
FRECENCY = 0.15
FRECENCY_SATURATION = 4.0
HIT_LIFT = 1.5
"""A file the text searches found, with the best vote, is lifted by this much (×2.5)."""
ADMITTED = 3
"""The best-voted files (at most this many), found by the text searches or not, rank..."""
ADMIT_BELOW = 4
"""...at least just below this many leaders, scaled by their vote."""
ADMIT_FLOOR = 0.3
"""The vote a file needs for that."""
CO_LIFT = 0.2
CO_ADMITTED = 2


@dataclass
class Ranking:
    """The files best first, and what the signals that act by rank gave them (for the reasons)."""

    ranked: list[tuple[float, str]]
    votes: Votes = field(default_factory=Votes)
    """The past commits' votes after the kind priors, the best 1."""
    mentioned: dict[str, list[str]] = field(default_factory=dict)
    """path -> the symbols it defines that the question mentions."""
    lifts: dict[str, graph.Lift] = field(default_factory=dict)
    """path -> what the import graph gave it."""


def _sorted(entries: Iterable[tuple[float, str]]) -> list[tuple[float, str]]:
    return sorted(entries, key=lambda entry: (-entry[0], entry[1]))


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


def first(evidence: Evidence, weights: Weights, now: float) -> list[tuple[float, str]]:
    """Steps 1 and 2: every candidate's text score, adjusted for its kind, its use and how the
    question names it; best first."""
    query, text, prior = evidence.query, evidence.text, weights.kind_prior
    stem_lifts = word_stem_lifts(query.terms, evidence.hits)
    scored: list[tuple[float, str]] = []
    for path, hit in evidence.hits.items():
        score = text.fused(path, weights)
        naming = evidence.namings.get(path)
        if hit.kind in query.asks_for:
            score *= ASKED_KIND_LIFT.get(hit.kind, 1.0)
        elif not (naming and naming.explicit):
            score *= prior.get(hit.kind, 0.45)
            if "vendored" not in query.asks_for and is_vendored(path):
                score *= VENDORED_PRIOR
            if "types" not in query.asks_for and is_declaration(path):
                score *= DECLARATION_PRIOR
        if hit.access_rank is not None:
            recent_uses = current_score(hit.access_rank, now)
            score *= 1 + FRECENCY * min(recent_uses, FRECENCY_SATURATION) / FRECENCY_SATURATION
        if naming:
            score *= 1 + naming.lift
        elif path in stem_lifts:
            score *= 1 + stem_lifts[path]
        if score > 0:
            scored.append((score, path))
    return _sorted(scored)


def admit(
    ranked: list[tuple[float, str]],
    evidence: Mapping[str, float],
    lift: float,
    promoted: int,
    floor: float,
    admitted_share: float = 1.0,
) -> list[tuple[float, str]]:
    """Lift the ranked files by `lift` times their evidence (0..1); then the `promoted` files
    with the most evidence (at least `floor`), found by the text searches or not, rank at least
    as if just below the ADMIT_BELOW-th file, scaled by their evidence (and `admitted_share`):
    strong evidence places a file among the first few, never above the leaders."""
    ranked = _sorted((score * (1 + lift * evidence.get(path, 0.0)), path) for score, path in ranked)
    strongest = _sorted((value, path) for path, value in evidence.items() if value >= floor)[:promoted]
    if strongest:
        below = ranked[min(ADMIT_BELOW, len(ranked)) - 1][0] if ranked else 1.0
        scores = {path: score for score, path in ranked}
        for value, path in strongest:
            scores[path] = max(scores.get(path, 0.0), below * 0.99 * value * admitted_share)
        ranked = _sorted((score, path) for path, score in scores.items())
    return ranked


def with_votes(first_ranking: list[tuple[float, str]], evidence: Evidence, weights: Weights) -> Ranking:
    """Step 3a: the past commits' votes lift the files they touched and admit the best-voted.
    A report's own evidence weighs more than its likeness to past commits (query.py)."""
    if evidence.votes is None:
        return Ranking(first_ranking)
    votes = weigh_votes(evidence.votes, evidence.query, weights.kind_prior)
    if not votes.votes:
        return Ranking(first_ranking, votes)
    share = evidence.query.history_share
    ranked = admit(
        first_ranking,
        votes.votes,
        HIT_LIFT * share * weights.history,
        ADMITTED,
        ADMIT_FLOOR,
        share * min(weights.history, 1.0),
    )
    return Ranking(ranked, votes)


def with_companions(ranking: Ranking, evidence: Evidence) -> None:
    """Step 3b: the files that change together with the text's leaders, lifted less than the
    votes lift and fewer admitted."""
    if evidence.companions:
        shares = {path: share for path, (share, _) in evidence.companions.items()}
        ranking.ranked = admit(ranking.ranked, shares, CO_LIFT, CO_ADMITTED, CO_CONFIDENCE)


def with_symbols(ranking: Ranking, evidence: Evidence, leaders: Sequence[tuple[float, str]]) -> None:
    """Step 4a: the leaders (the rest is dropped) lifted for defining what the question
    mentions. A symbol's lift is shared among the leading files that define it, counted in a
    pool of fixed size, so `__init__` lifts no one much and the order does not depend on how
    many files were asked for. A module name a definition confirms (`utils.redirect`) names its
    file firmly."""
    mentions = evidence.query.mentions
    symbols = {path: evidence.defines(path) for _, path in leaders if path in evidence.entries}
    pool = [path for _, path in leaders[:SYMBOL_POOL] if path in symbols]
    definers = Counter(name for path in pool for name in defined(mentions, symbols[path]))
    ranked: list[tuple[float, str]] = []
    for score, path in leaders:
        if path not in symbols:
            continue
        naming = evidence.namings.get(path)
        if naming and naming.confirmed_by is not None:
            score *= (1 + naming.lift_given(symbols[path])) / (1 + naming.lift)
        mentioned = defined(mentions, symbols[path])
        if mentioned:
            shares = sum(1 / max(definers[name], 1) for name in mentioned)
            score *= 1 + DEFINES_MENTIONED * min(1.0, shares)
            ranking.mentioned[path] = mentioned
        ranked.append((score, path))
    ranking.ranked = _sorted(ranked)


def with_links(ranking: Ranking, evidence: Evidence) -> None:
    """Step 4b: a share of the leaders' scores for the files they import or are imported by."""
    ranking.lifts = graph.spread(ranking.ranked, evidence.links)
    if ranking.lifts:
        lifts = ranking.lifts
        ranking.ranked = _sorted(
            (score + (lifts[path].amount if path in lifts else 0.0), path) for score, path in ranking.ranked
        )
