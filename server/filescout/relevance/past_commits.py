"""The repository's history as evidence: past commits whose messages resemble the question vote
for the files they touched, and files that usually change together with the leading candidates
get a share of their place.

A vote is the commit's BM25 over messages relative to the best match's (a question always finds
some commit; only those close to the best say anything), halved for every HALF_LIFE commits
since it, and divided by the square root of the files it touched (a commit touching one file
says more about that file than one touching twenty). A file's votes are summed and scaled so the
best-voted file has 1, after the same kind prior the text scores get.

The votes and the files changing together are read here; fusion.py weighs them into the
ranking, by rank rather than by adding scores (BM25 over messages and over files are not on one
scale): history reorders and adds a few, it does not flood. Co-change is seen from the text
searches' leaders only, so history's own picks bring no companions. On the relevance cases the
votes alone rank about as well as the text searches alone; fused they add R@1, Acc@5 and MRR on
every repository (docs/BENCHMARKS.md).

A question written as an issue (report.py) carries evidence of its own and is long and chatty
where commit messages are short: its commits are searched for its title and strongest evidence
only (Query.history_terms), and the fusion scales their lift and admission down
(Query.history_share).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from filescout.index import Index
from filescout.index.history import CommitHit
from filescout.llm.quoting import one_line
from filescout.relevance.filters import PathFilter
from filescout.relevance.query import Query, expression

COMMITS = 40
"""The best-matching commits that vote."""
CLOSE_TO_BEST = 0.4
"""A commit matching the question less than this share of the best match does not vote."""
HALF_LIFE = 3_000
"""Commits after which a vote counts half: churn since then, rather than days, is what makes an
old commit's files the wrong ones."""
DAMPING = 0.5
"""A commit's vote is divided by its number of files to this power."""
CO_RECENT = 200
"""A leader's newest commits counted for co-change."""
CO_SUPPORT = 2
"""Commits two files must share before they count as changing together."""
CO_CONFIDENCE = 0.3
"""The share of a leader's commits a companion must be in."""
COMMON_SHARE = 0.1
"""Words in more than this share of the messages are left out of the search..."""
COMMON_FLOOR = 1_000
"""...once they are in more than this many."""
MIN_TERMS = 2
SUBJECTS = 2
SUBJECT_CHARS = 60


@dataclass
class Votes:
    votes: dict[str, float] = field(default_factory=dict)
    """path -> vote, the best 1."""
    voters: dict[str, list[tuple[float, CommitHit]]] = field(default_factory=dict)
    """path -> the commits that voted for it, with their weights."""


def telling(terms: list[str], frequency: Mapping[str, int], total: int) -> list[str]:
    """The question's words rare enough in the history to tell commits apart: in a long
    history, a word in a tenth of the messages ("fix", "add") barely moves BM25 but makes the
    search score a tenth of the history. The rarest few always stay; short histories keep all."""
    if not terms:
        return terms
    threshold = max(COMMON_SHARE * total, COMMON_FLOOR)
    rare = [term for term in terms if frequency.get(term, 0) <= threshold]
    if len(rare) >= MIN_TERMS:
        return rare
    rarest = set(sorted(terms, key=lambda term: frequency.get(term, 0))[:MIN_TERMS])
    return [term for term in terms if term in rarest]


def kind_weight(kind: str, query: Query, prior: Mapping[str, float]) -> float:
    return 1.0 if kind in query.asks_for else prior.get(kind, 0.45)


@dataclass
class RawVotes:
    """The votes before any kind prior: what fitting the priors re-weighs without searching again."""

    raw: dict[str, float] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    voters: dict[str, list[tuple[float, CommitHit]]] = field(default_factory=dict)


async def gather_votes(index: Index, query: Query, scope: PathFilter, before: int | None = None) -> RawVotes:
    """The commits most like the question (older than `before`, when given) and what each
    says of the files the workspace has now."""
    searched = query.terms if query.history_terms is None else query.history_terms
    terms = [term for term in searched if "_" not in term]  # its parts are terms too
    total, frequency = await index.history.frequencies(terms)
    match = expression(telling(terms, frequency, total))
    found = await index.history.matching(match, limit=COMMITS, before=before) if match else []
    votes = RawVotes()
    if not found:
        return votes
    best = found[0].score
    voting = [commit for commit in found if best > 0 and commit.score >= CLOSE_TO_BEST * best]
    newest = max(commit.id for commit in found)
    touched = await index.history.files_of(commit.id for commit in voting)
    for commit in voting:
        weight = (commit.score / best) * 0.5 ** ((newest - commit.id) / HALF_LIFE)
        weight /= max(commit.changed, 1) ** DAMPING
        for path, kind in touched.get(commit.id, []):
            if scope.matches(path):
                votes.raw[path] = votes.raw.get(path, 0.0) + weight
                votes.kinds[path] = kind
                votes.voters.setdefault(path, []).append((weight, commit))
    return votes


def weigh_votes(raw: RawVotes, query: Query, prior: Mapping[str, float]) -> Votes:
    """The votes after each file's kind prior, the best 1."""
    weighed: dict[str, float] = {}
    voters: dict[str, list[tuple[float, CommitHit]]] = {}
    for path, value in raw.raw.items():
        factor = kind_weight(raw.kinds[path], query, prior)
        if value * factor > 0:
            weighed[path] = value * factor
            voters[path] = [(weight * factor, commit) for weight, commit in raw.voters[path]]
    if not weighed:
        return Votes()
    top = max(weighed.values())
    return Votes({path: value / top for path, value in weighed.items()}, voters)


async def companions(
    index: Index,
    leaders: list[str],
    query: Query,
    scope: PathFilter,
    prior: Mapping[str, float],
    before: int | None = None,
) -> dict[str, tuple[float, str]]:
    """Files that changed in many of a leader's commits: path -> (share, the leader). The
    share is the leader's weight by rank (1, 1/2, 1/3) times how often they changed together."""
    theirs = await index.history.commits_touching(leaders, recent=CO_RECENT, before=before)
    commits = {commit for found in theirs.values() for commit in found}
    touched = await index.history.files_of(commits) if commits else {}
    found: dict[str, tuple[float, str]] = {}
    for rank, leader in enumerate(leaders):
        own = theirs.get(leader, [])
        together: Counter[str] = Counter()
        kinds: dict[str, str] = {}
        for commit in own:
            for path, kind in touched.get(commit, []):
                if path != leader:
                    together[path] += 1
                    kinds[path] = kind
        for path, count in together.items():
            confidence = count / len(own)
            if count < CO_SUPPORT or confidence < CO_CONFIDENCE or not scope.matches(path):
                continue
            share = confidence / (rank + 1) * kind_weight(kinds[path], query, prior)
            if share > found.get(path, (0.0, ""))[0]:
                found[path] = (share, leader)
    return found


def past_reason(voters: list[tuple[float, CommitHit]]) -> str:
    best = sorted(voters, key=lambda entry: -entry[0])[:SUBJECTS]
    named = ", ".join(f"{_subject(commit.subject)} ({commit.sha[:7]})" for _, commit in best)
    return f"changed by similar past commits: {named}"


def _subject(subject: str) -> str:
    """A commit's subject is workspace text: one defused line, clipped."""
    text = one_line(subject)
    return text if len(text) <= SUBJECT_CHARS else text[: SUBJECT_CHARS - 1] + "…"
