"""files/findRelevant: the stages in order, each streaming what it has.

1. prefilter — no model; the whole index; answers in milliseconds.
2. judge — the model rates chunks of the best candidates' summaries in parallel; files that pass
   stream as their chunk completes.
3. final — one model call orders the promising files; its order ends the request.

Without a model, stage 1 is the answer. When the model fails part-way, the request still
completes with what the finished stages found, marked degraded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from filescout.model import BudgetSpent, ModelClient, ModelError, estimate_tokens
from filescout.relevance.filters import PathFilter
from filescout.relevance.judge import FINAL_POOL, PASS_SCORE, Verdict, judge, pick_tags, rank
from filescout.relevance.prefilter import Candidate, prefilter
from filescout.relevance.query import analyse
from filescout.store import Store
from filescout_protocol.types import FileItem, FindRelevantParams, RelevanceOptions, RelevanceStage, RelevantItem

log = logging.getLogger(__name__)

TAGGED_CANDIDATES = 30


@dataclass
class RelevanceUpdate:
    """One step of a findRelevant request: items to stream, or (done) the final answer."""

    stage: RelevanceStage
    items: list[RelevantItem]
    done: bool = False
    stages: list[RelevanceStage] = field(default_factory=list)
    degraded: bool = False
    message: str | None = None


class Allowance:
    """A request's share of the model: at most `calls` calls and `tokens` tokens, checked
    before each call (on an estimate) and charged after (with the server's count)."""

    def __init__(self, client: ModelClient, calls: int, tokens: int | None) -> None:
        self.client = client
        self.calls_left = calls
        self.tokens_left = tokens

    async def complete(self, messages: list[dict[str, str]], **kwargs: Any) -> Any:
        planned = sum(estimate_tokens(m["content"]) for m in messages) + kwargs["max_output_tokens"]
        if self.calls_left <= 0:
            raise ModelError("this request's model calls are used up")
        if self.tokens_left is not None and planned > self.tokens_left:
            raise ModelError("this request's model tokens are used up")
        self.calls_left -= 1
        completion = await self.client.complete(messages, **kwargs)
        if self.tokens_left is not None:
            self.tokens_left -= completion.input_tokens + completion.output_tokens
        return completion


def as_item(item: FileItem, stage: RelevanceStage, score: float, reason: str) -> RelevantItem:
    return RelevantItem(path=item.path, score=round(score, 4), stage=stage, reason=reason,
                        summary=item.summary, tags=item.tags, language=item.language, kind=item.kind)


def from_candidates(candidates: Sequence[Candidate]) -> list[RelevantItem]:
    return [as_item(c.item, "prefilter", c.score, c.reason) for c in candidates]


def from_verdicts(verdicts: Sequence[Verdict], stage: RelevanceStage) -> list[RelevantItem]:
    return [as_item(v.item, stage, v.score, v.reason) for v in verdicts]


async def find(store: Store, params: FindRelevantParams, scope: PathFilter,
               client: ModelClient | None) -> AsyncIterator[RelevanceUpdate]:
    options = params.options or RelevanceOptions()
    query = analyse(params.query)
    use_model = client is not None and options.use_model is not False
    model_unavailable = client.unavailable_reason() if client is not None else None
    if use_model and model_unavailable:
        use_model = False
    allowance = Allowance(client, options.max_model_calls, options.max_tokens) if use_model else None
    tags_task: asyncio.Task[list[str]] | None = None
    if allowance is not None and options.select_tags and options.max_model_calls > 2:
        vocabulary = await store.tag_vocabulary()
        tags_task = asyncio.create_task(pick_tags(allowance, params.query, vocabulary))  # type: ignore[arg-type]
    try:
        pool = max(params.limit, options.candidates) if use_model else params.limit
        candidates = await prefilter(store, query, limit=pool, scope=scope)
        first = from_candidates(candidates[:params.limit])
        yield RelevanceUpdate("prefilter", first)
        if allowance is None:
            message = None if first else "no indexed file matches the question's words"
            if options.use_model is not False and model_unavailable:
                message = f"model stages skipped: {model_unavailable}"
            yield RelevanceUpdate("prefilter", first, done=True, stages=["prefilter"],
                                  degraded=model_unavailable is not None and options.use_model is not False,
                                  message=message)
            return
        async for update in _model_stages(store, params, scope, allowance, candidates, tags_task):
            yield update
    finally:
        if tags_task is not None and not tags_task.done():
            tags_task.cancel()
            await asyncio.gather(tags_task, return_exceptions=True)


async def _model_stages(store: Store, params: FindRelevantParams, scope: PathFilter,
                        allowance: Allowance, candidates: list[Candidate],
                        tags_task: asyncio.Task[list[str]] | None) -> AsyncIterator[RelevanceUpdate]:
    stages: list[RelevanceStage] = ["prefilter"]
    problems: list[str] = []
    pool = [candidate.item for candidate in candidates]
    if tags_task is not None:
        try:
            tags = await tags_task
        except ModelError as error:
            problems.append(f"tag selection failed: {error}")
        else:
            seen = {item.path for item in pool}
            tagged = await store.files_with_tags(tags, limit=TAGGED_CANDIDATES * 4)
            pool += [item for item in tagged if item.path not in seen and scope.matches(item.path)][
                :TAGGED_CANDIDATES]
    verdicts: list[Verdict] = []
    judged_any = False
    streamed = 0
    max_chunks = max(allowance.calls_left - 1, 1)  # keep one call for the final ranking
    async for outcome in judge(allowance, params.query, pool, max_chunks=max_chunks):  # type: ignore[arg-type]
        if isinstance(outcome, ModelError):
            problems.append(f"judging failed: {outcome}")
            if isinstance(outcome, BudgetSpent):
                break
            continue
        judged_any = True
        verdicts += outcome
        passing = sorted((v for v in outcome if v.score >= PASS_SCORE), key=lambda v: -v.score)
        passing = passing[:max(params.limit - streamed, 0)]
        if passing:
            streamed += len(passing)
            yield RelevanceUpdate("judge", from_verdicts(passing, "judge"))
    if judged_any:
        stages.append("judge")
    promising = sorted((v for v in verdicts if v.score >= PASS_SCORE),
                       key=lambda v: (-v.score, v.item.path))[:FINAL_POOL]
    final: list[RelevantItem] | None = None
    if len(promising) >= 2:
        try:
            placed = await rank(allowance, params.query, promising)  # type: ignore[arg-type]
        except ModelError as error:
            problems.append(f"final ranking failed: {error}")
        else:
            stages.append("final")
            final = from_verdicts(placed[:params.limit], "final")
            yield RelevanceUpdate("final", final)
    elif len(promising) == 1:
        final = from_verdicts(promising, "judge")
    if final is None:
        final = (from_verdicts(promising[:params.limit], "judge") if promising
                 else from_candidates(candidates[:params.limit]))
    message = "; ".join(problems) or None
    if judged_any and not promising and not problems:
        message = "the model judged none of the candidates relevant; these are the lexical matches"
    yield RelevanceUpdate(stages[-1], final, done=True, stages=stages, degraded=bool(problems),
                          message=message)
