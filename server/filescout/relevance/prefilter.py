"""Stage 1 of findRelevant, no model: full-text search over everything the index knows, fused
with what the question names, the kind of file, the repository's history and how much the user
works with it.

One pass, in this order:
1. the question is analysed once (query.py; a report's evidence, report.py);
2. its evidence is read, every signal once and side by side (evidence.gather): the two BM25
   searches (what describes a file: path words, symbols, summary, tags; its content's words),
   its definitions, the files it names that the searches missed, similar past commits;
3. the evidence is fused into a first ranking (fusion.first) and history's votes act on it;
4. around that ranking's leaders only, the rest is read (the files changing with them, what
   they define and import) and fused (fusion.with_*);
5. the answer's files are explained from the same evidence (reasons.py).

How much the content counts beside the description, the definitions' lift, the kind priors and
the history's votes are weights (weights.py): the defaults, or those fitted on the repository's
own past commits where they ranked its newest commits better (fit.py).
"""

from __future__ import annotations

import time

from filescout.index import Index
from filescout.relevance import fusion
from filescout.relevance.evidence import gather, leaders, read_companions, read_leaders
from filescout.relevance.filters import PathFilter
from filescout.relevance.query import Query
from filescout.relevance.reasons import Candidate, candidates
from filescout.relevance.signals import Signals
from filescout.relevance.weights import DEFAULT, Weights, current_weights


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
    evidence = await gather(index, query, scope, signals=signals, weights=weights)
    first = fusion.first(evidence, weights, time.time() if now is None else now)
    ranking = fusion.with_votes(first, evidence, weights)
    await read_companions(index, evidence, first, scope, weights.kind_prior)
    fusion.with_companions(ranking, evidence)
    leading = leaders(ranking.ranked, limit)
    await read_leaders(index, evidence, [path for _, path in leading], current=current, signals=signals)
    fusion.with_symbols(ranking, evidence, leading)
    fusion.with_links(ranking, evidence)
    return candidates(evidence, ranking, limit)
