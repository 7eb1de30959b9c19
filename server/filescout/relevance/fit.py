"""Fitting the prefilter's fusion weights (weights.py) on the workspace's own history.

Every past commit is a question with its answer: its subject, and the files it touched. The newest
EXAMPLES commits that touched a few files the workspace still has are asked as questions, each
against the history as it stood before it (its own commit and later ones cannot vote), and what
each signal found is kept per candidate file. The weights are then fitted on the older ones by
coordinate ascent over a fixed grid (deterministic: the same history gives the same weights), and
kept only when they rank the source files of the newest VALIDATED commits clearly better than the
defaults (by MARGIN in mean reciprocal rank, and by more than chance would: twice the paired
differences' standard error); otherwise the defaults stay. Ranking again with other weights
reuses what was found: no search runs twice, so the fit costs about one question per commit.

Every commit's answer is the source files it touched (what a question about it wants first).
What is fitted: the kind priors and how far the past commits' votes move the first ranking.
Co-change, the symbols a question mentions and the import graph act on the leaders after it, with
fixed weights.

Each commit is judged on its files as they were before it (past_versions.py): today's files hold
the words the commit added, so today's text finds past commits more surely than it found them
when they were new, and weights fitted or checked on that trust the text too much (judged on
today's files, the weights the check adopted lowered the dev set's R@1 with history from 0.608
to 0.588; docs/BENCHMARKS.md). Judged on their parents' files, the fitted weights rank the dev
set about as the defaults do, better on some repositories and worse on one, so fitting stays an
unproven signal (signals.py), off unless asked for.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from filescout.index import Index
from filescout.index.history import PastExample
from filescout.relevance import fusion
from filescout.relevance.evidence import Evidence, gather
from filescout.relevance.filters import PathFilter
from filescout.relevance.past_versions import ReadVersions, as_before
from filescout.relevance.query import analyse
from filescout.relevance.signals import Signals
from filescout.relevance.weights import DEFAULT, FITTED_KINDS, RankingFit, Weights

log = logging.getLogger(__name__)

EXAMPLES = 150
"""The newest commits asked as questions, at most."""
VALIDATED = 50
"""Of those, the newest are held out to judge the fit; the older ones fit the weights."""
MIN_EXAMPLES = 60
"""Fewer commits than this say too little: the defaults stay."""
MOST_FILES = 8
"""A commit touching more files than this (a rename, a reformat) is no question about them."""
MARGIN = 0.01
"""How much better (MRR on the held-out commits) the fitted weights must rank to be used, at
least; and by more than twice the standard error of the paired differences."""
ANSWERS = ("source",)
"""The kinds of file a commit's answer holds: what a question about it wants first."""
ROUNDS = 2
CLOSENESS = 0.01
REFIT_GROWTH = 1.25
"""The fit is redone when the history has grown by this factor..."""
REFIT_MIN_NEW = 100
"""...and by at least this many commits."""
KIND_FACTORS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
"""A kind's prior is tried at these multiples of its default, never above source's."""
GRID: dict[str, tuple[float, ...]] = {
    "history": (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0),
    **{
        kind: tuple(sorted({min(1.0, round(getattr(DEFAULT, kind) * factor, 3)) for factor in KIND_FACTORS}))
        for kind in FITTED_KINDS
    },
}


@dataclass
class Example:
    """One past commit asked as a question, with what every signal found for it."""

    commit: str
    evidence: Evidence
    answer: frozenset[str]

    def ranked(self, weights: Weights) -> list[tuple[float, str]]:
        """The first ranking and history's votes, as the prefilter fuses them (fusion.py)."""
        first = fusion.first(self.evidence, weights, 0.0)
        return fusion.with_votes(first, self.evidence, weights).ranked

    def judged(self, weights: Weights) -> tuple[float, float]:
        """The reciprocal rank of the first file of the answer, and how close its score comes to
        the first file's (1 when it is first): rankings change in steps, and this says which way
        a step is nearer."""
        ranked = self.ranked(weights)
        for rank, (score, path) in enumerate(ranked, 1):
            if path in self.answer:
                return 1 / rank, score / ranked[0][0] if ranked[0][0] > 0 else 0.0
        return 0.0, 0.0


def mean_reciprocal_rank(examples: Sequence[Example], weights: Weights) -> float:
    return sum(example.judged(weights)[0] for example in examples) / max(len(examples), 1)


def objective(examples: Sequence[Example], weights: Weights) -> float:
    """What the fit climbs: the mean reciprocal rank, ties broken by how close the answers'
    scores come to the top (CLOSENESS weighs that little enough never to outweigh one rank)."""
    judged = [example.judged(weights) for example in examples]
    return sum(rank + CLOSENESS * closeness for rank, closeness in judged) / max(len(judged), 1)


async def ask(index: Index, past: PastExample) -> Example | None:
    """`past`'s subject asked as the prefilter asks a question, against the history before it;
    the user's own use of files left out (it is today's, not the commit's)."""
    query = analyse(past.subject)
    if not query.terms:
        return None
    evidence = await gather(
        index, query, PathFilter(), signals=Signals(), weights=DEFAULT, before=past.id, uses=False
    )
    return Example(past.sha, evidence, frozenset(past.paths))


def clearly_better(examples: Sequence[Example], weights: Weights) -> bool:
    """Whether `weights` rank `examples` better than the defaults by MARGIN in MRR, and by more
    than twice the paired differences' standard error: fifty commits' MRR moves by a few
    hundredths by chance alone, and weights fitted to noise must not replace the defaults."""
    differences = [example.judged(weights)[0] - example.judged(DEFAULT)[0] for example in examples]
    if len(differences) < 2:
        return False
    mean = statistics.fmean(differences)
    error = statistics.stdev(differences) / math.sqrt(len(differences))
    return mean >= MARGIN and mean > 2 * error


def climb(examples: Sequence[Example], start: Weights) -> Weights:
    """Coordinate ascent over GRID: each weight in turn takes the grid value that ranks the
    examples best, ties kept as they are."""
    best, best_score = start, objective(examples, start)
    for _ in range(ROUNDS):
        moved = False
        for name, values in GRID.items():
            for value in values:
                if value == getattr(best, name):
                    continue
                trial = best.with_value(name, value)
                score = objective(examples, trial)
                if score > best_score + 1e-9:
                    best, best_score, moved = trial, score, True
        if not moved:
            break
    return best


async def fit_ranking(index: Index, history_commits: int, read: ReadVersions | None = None) -> RankingFit:
    """Fit the weights on the index's history (see the module's docstring). With `read`, each
    past commit is judged on its files as they were before it (past_versions.py); without, on
    today's files."""
    started = time.perf_counter()
    past = await index.history.recent_examples(EXAMPLES, most_files=MOST_FILES, kinds=ANSWERS)
    examples = [example for item in past if (example := await ask(index, item)) is not None]
    if read is not None:
        asked = [(example.commit, example.evidence, example.answer) for example in examples]
        answers = await as_before(index, asked, read)
        examples = [
            dataclasses.replace(example, answer=answer)
            for example, answer in zip(examples, answers, strict=True)
            if answer
        ]
    if len(examples) < MIN_EXAMPLES:
        reason = f"{len(examples)} past commits to learn from, fewer than {MIN_EXAMPLES}"
        return RankingFit(
            DEFAULT, False, reason, history_commits, len(examples), 0, 0.0, 0.0, _since(started)
        )
    held_out, training = examples[:VALIDATED], examples[VALIDATED:]
    fitted = climb(training, DEFAULT)
    default_mrr = mean_reciprocal_rank(held_out, DEFAULT)
    fitted_mrr = mean_reciprocal_rank(held_out, fitted)
    kept = fitted != DEFAULT and clearly_better(held_out, fitted)
    reason = "fitted" if kept else "the fitted weights did not rank the newest commits better"
    fit = RankingFit(
        fitted,
        kept,
        reason,
        history_commits,
        len(training),
        len(held_out),
        default_mrr,
        fitted_mrr,
        _since(started),
    )
    log.info("ranking weights: %s, in %.1f s", fit.describe(), fit.seconds)
    return fit


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 2)


def needs_fit(fit: RankingFit | None, history_commits: int) -> bool:
    if fit is None:
        return True
    return (
        history_commits >= fit.history_commits * REFIT_GROWTH
        and history_commits >= fit.history_commits + REFIT_MIN_NEW
    )
