"""Why the prefilter ranked each file where it did, from the same evidence the fusion weighed:
a reason is named only for a signal that moved the file, in the order the fusion applies them."""

from __future__ import annotations

from dataclasses import dataclass, field

from filescout.core.records import FileEntry
from filescout.core.words import IDENTIFIER, path_words, words
from filescout.relevance import definitions as defined_here
from filescout.relevance import graph
from filescout.relevance.evidence import Evidence
from filescout.relevance.fusion import Ranking
from filescout.relevance.past_commits import CO_CONFIDENCE, past_reason
from filescout.relevance.query import Query

DEFINITIONS_REASON = 0.1
"""A file's definitions are named among its reasons when they gave it this share of its score."""
VOTE_REASON = 0.2
"""The vote from which similar past commits are named as a reason."""


@dataclass
class Candidate:
    item: FileEntry
    score: float
    reasons: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons) or "matches the question's words"


def candidates(evidence: Evidence, ranking: Ranking, limit: int) -> list[Candidate]:
    """The best `limit` files of `ranking`, each with its reasons."""
    return [
        Candidate(item=evidence.entries[path][0], score=score, reasons=reasons(evidence, ranking, path))
        for score, path in ranking.ranked[:limit]
    ]


def reasons(evidence: Evidence, ranking: Ranking, path: str) -> list[str]:
    text, item, symbols = evidence.text, *evidence.entries[path]
    naming = evidence.namings.get(path)
    found = [naming.reason] if naming else []
    mentioned = ranking.mentioned.get(path)
    if mentioned:
        found.append("defines " + ", ".join(f"`{name}`" for name in mentioned[:3]) + " the question mentions")
    if path in text.defined and text.defined_lifts[path] >= DEFINITIONS_REASON * text.fused(path):
        found.append(defined_here.describe(text.defined[path], evidence.query.terms))
    if path in ranking.lifts:
        found.append(graph.reason(ranking.lifts[path]))
    hit = evidence.hits.get(path)
    found += ["you used it recently"] if hit is not None and hit.access_rank is not None else []
    found += explain(evidence.query, item, symbols)
    if path in text.scores and not text.scores[path][0] and text.scores[path][1]:
        found.append("its content matches the question's words")
    if ranking.votes.votes.get(path, 0.0) >= VOTE_REASON:
        found.append(past_reason(ranking.votes.voters[path]))
    share, leader = evidence.companions.get(path, (0.0, ""))
    if share >= CO_CONFIDENCE:
        found.append(f"changes together with {leader}")
    return found


def explain(query: Query, item: FileEntry, symbols: list[str]) -> list[str]:
    """Which of the question's words its path, and its summary and symbols, hold."""
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
