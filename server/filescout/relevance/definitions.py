"""Definitions scored on their own, rolled up to their files.

The file-level searches weigh a question's words against everything a file says, so a large
file with one function about the question loses to a small file that mentions its words in
passing. Searching definitions — name, container, signature, doc comment — finds that function,
and its file gets the function's score: its best definition's, plus a bounded bonus for a second
and third (a file where several definitions match is more likely the one, but ten matching
getters should not beat one matching function by ten times).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from filescout.core.records import Definition, DefinitionHit
from filescout.core.words import words

WEIGHTS = (4.0, 1.0, 1.0, 2.0)
"""BM25 column weights: name, container, signature, doc."""
FOLLOWERS = (0.5, 0.25)
"""What the second and third best definitions of a file add, as fractions of their scores."""
POOL = 300
SCOPED_POOL = 3000
SHARE = 0.25
"""A file's rolled-up score at the top of the definitions' ranking is worth this fraction of the
top file-level score (0.1-0.35 measure alike; more lets definitions outvote whole files)."""


SPECIFIC_SHARE = 0.02
SPECIFIC_FLOOR = 200
"""Definitions are searched for the question's specific words only: those in at most a
fiftieth of the contents, or in at most SPECIFIC_FLOOR of them (a twentieth took the prefilter's
p95 at 100K files from 42-47 to 62-65 ms). There are some thirty
definitions to a file, so a common word would make the search rank a large part of them; and a
word that common could not single out one function anyway."""


def specific_terms(terms: Sequence[str], frequency: dict[str, int], total: int) -> list[str]:
    threshold = max(SPECIFIC_SHARE * total, SPECIFIC_FLOOR)
    return [term for term in terms if frequency.get(term, 0) <= threshold]


@dataclass
class DefinedMatch:
    """A file's matching definitions, best first, and their rolled-up score."""

    score: float = 0.0
    definitions: list[tuple[float, Definition]] = field(default_factory=list)

    @property
    def best(self) -> Definition:
        return self.definitions[0][1]


def roll_up(hits: Iterable[DefinitionHit]) -> dict[str, DefinedMatch]:
    """Each file's best definition's score plus FOLLOWERS of the next ones."""
    by_path: dict[str, DefinedMatch] = {}
    for hit in hits:
        by_path.setdefault(hit.path, DefinedMatch()).definitions.append((hit.rank, hit.definition))
    for match in by_path.values():
        match.definitions.sort(key=lambda entry: -entry[0])
        match.score = rolled([rank for rank, _ in match.definitions])
    return by_path


def rolled(ranks: Sequence[float]) -> float:
    """The best score plus FOLLOWERS of the next ones (`ranks`, best first)."""
    if not ranks:
        return 0.0
    return ranks[0] + sum(share * rank for share, rank in zip(FOLLOWERS, ranks[1:], strict=False))


def lifts(matches: dict[str, DefinedMatch], text: dict[str, float]) -> dict[str, float]:
    """What each file's definitions add to its file-level text score (`text`: path -> score):
    its rolled-up score relative to the best file's, in units of the best file-level score, so
    the two rankings are fused on one scale whatever the sizes of their indexes. Added rather
    than multiplied: a file only its definitions match can enter the ranking."""
    top_text = max(text.values(), default=0.0) or 1.0
    top = max((match.score for match in matches.values()), default=0.0)
    if top <= 0:
        return {}
    return {path: SHARE * top_text * match.score / top for path, match in matches.items()}


def describe(match: DefinedMatch, terms: Sequence[str]) -> str:
    """`defines `url_for` (def url_for(endpoint, …)), which matches url, endpoint`, from the
    best definition whose own words hold a term of the question."""
    wanted = set(terms)
    for _, definition in match.definitions[:3]:
        text = " ".join(
            filter(None, (definition.name, definition.container, definition.signature, definition.doc))
        )
        lowered = text.lower()
        maybe = {term for term in wanted if term in lowered}
        matched = sorted(maybe & set(words(text))) if maybe else []
        if matched:
            return f"defines {_named(definition)}, which matches " + ", ".join(matched[:4])
    # The search stems words (`routes` finds `route`); the match is real, its words differ.
    return f"defines {_named(match.best)}, which matches the question's words"


def _named(definition: Definition) -> str:
    if definition.signature and definition.signature != definition.name:
        return f"`{definition.name}` ({definition.signature})"
    return f"`{definition.name}`"
