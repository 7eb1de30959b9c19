"""files/findRelevant: the stages in order, each streaming what it has.

1. prefilter — no model; the whole index; answers in milliseconds.
2. judge — the model rates chunks of the best candidates' summaries in parallel; files that pass
   stream as their chunk completes.
3. final — one model call orders the promising files; its order ends the request.

Without a model, stage 1 is the answer. When the model fails part-way, the request still
completes with what the finished stages found, marked degraded. Someone waits on the answer, so
the model calls of a request end within MODEL_ROUNDS call timeouts of its start, retry at most
INTERACTIVE_RETRIES times, and do not wait out a timeout or a long Retry-After.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from filescout.core.records import RankedFile, RelevanceStage
from filescout.index import Index
from filescout.relevance.filters import PathFilter
from filescout.relevance.prefilter import prefilter
from filescout.relevance.query import analyse
from filescout.relevance.reasons import Candidate

# The model client and the judge are imported where a model answers: a question without one (no
# model set up, or `--no-model`) needs neither, and a one-shot command would pay for both.
if TYPE_CHECKING:
    from filescout.llm.client import Completion, ModelClient
    from filescout.relevance.judge import Verdict

log = logging.getLogger(__name__)

TAGGED_CANDIDATES = 30
MODEL_ROUNDS = 3
"""Tag selection, judging and the final ranking each wait for the one before: a request's model
calls end within this many call timeouts (the `timeout` setting) of its start."""
INTERACTIVE_RETRIES = 1


@dataclass(frozen=True)
class Question:
    """A findRelevant request as the stages need it: the faces build it from their params."""

    text: str
    limit: int = 20
    scope: PathFilter = field(default_factory=PathFilter)
    use_model: bool | None = None
    """False: the model-free stage only; None: the configured model, if any."""
    max_model_calls: int = 8
    max_tokens: int | None = None
    candidates: int = 40
    select_tags: bool = True


@dataclass
class RelevanceUpdate:
    """One step of a findRelevant request: items to stream, or (done) the final answer."""

    stage: RelevanceStage
    items: list[RankedFile]
    done: bool = False
    stages: list[RelevanceStage] = field(default_factory=list)
    degraded: bool = False
    message: str | None = None


class Allowance:
    """A request's share of the model: at most `calls` calls and `tokens` tokens, checked
    before each call (on an estimate) and charged after (with the server's count), all ended by
    the request's deadline."""

    def __init__(self, client: ModelClient, calls: int, tokens: int | None) -> None:
        self.client = client
        self.calls_left = calls
        self.tokens_left = tokens
        self.deadline = time.monotonic() + MODEL_ROUNDS * client.settings.timeout

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        schema: dict[str, Any],
        schema_name: str,
        max_output_tokens: int,
    ) -> Completion:
        from filescout.llm.client import ModelError, estimate_tokens

        planned = sum(estimate_tokens(m["content"]) for m in messages) + max_output_tokens
        if self.calls_left <= 0:
            raise ModelError("this request's model calls are used up")
        if self.tokens_left is not None and planned > self.tokens_left:
            raise ModelError("this request's model tokens are used up")
        self.calls_left -= 1
        completion = await self.client.complete(
            messages,
            schema=schema,
            schema_name=schema_name,
            max_output_tokens=max_output_tokens,
            deadline=self.deadline,
            retries=INTERACTIVE_RETRIES,
        )
        if self.tokens_left is not None:
            self.tokens_left -= completion.input_tokens + completion.output_tokens
        return completion


def from_candidates(candidates: Sequence[Candidate]) -> list[RankedFile]:
    return [RankedFile(c.item, round(c.score, 4), "prefilter", c.reason) for c in candidates]


def from_verdicts(verdicts: Sequence[Verdict], stage: RelevanceStage) -> list[RankedFile]:
    return [RankedFile(v.item, round(v.score, 4), stage, v.reason) for v in verdicts]


async def find(
    index: Index, question: Question, client: ModelClient | None, *, current: str
) -> AsyncIterator[RelevanceUpdate]:
    """The stages' updates, the last one `done`. `current` is the annotator whose
    annotations count as up to date."""
    query = analyse(question.text)
    use_model = client is not None and question.use_model is not False
    model_unavailable = client.unavailable_reason() if client is not None else None
    if use_model and model_unavailable:
        use_model = False
    allowance = (
        Allowance(client, question.max_model_calls, question.max_tokens)
        if use_model and client is not None
        else None
    )
    tags_task: asyncio.Task[list[str]] | None = None
    if allowance is not None and question.select_tags and question.max_model_calls > 2:
        from filescout.relevance.judge import pick_tags

        vocabulary = await index.files.tag_vocabulary()
        tags_task = asyncio.create_task(pick_tags(allowance, question.text, vocabulary))
    try:
        pool = max(question.limit, question.candidates) if use_model else question.limit
        candidates = await prefilter(index, query, limit=pool, scope=question.scope, current=current)
        first = from_candidates(candidates[: question.limit])
        yield RelevanceUpdate("prefilter", first)
        if allowance is None:
            message = None if first else "no indexed file matches the question's words"
            if question.use_model is not False and model_unavailable:
                message = f"model stages skipped: {model_unavailable}"
            yield RelevanceUpdate(
                "prefilter",
                first,
                done=True,
                stages=["prefilter"],
                degraded=model_unavailable is not None and question.use_model is not False,
                message=message,
            )
            return
        async for update in _model_stages(index, question, allowance, candidates, tags_task, current):
            yield update
    finally:
        if tags_task is not None and not tags_task.done():
            tags_task.cancel()
            await asyncio.gather(tags_task, return_exceptions=True)


async def _model_stages(
    index: Index,
    question: Question,
    allowance: Allowance,
    candidates: list[Candidate],
    tags_task: asyncio.Task[list[str]] | None,
    current: str,
) -> AsyncIterator[RelevanceUpdate]:
    from filescout.llm.client import BudgetSpent, ModelError
    from filescout.relevance.judge import FINAL_POOL, PASS_SCORE, judge, rank

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
            tagged = await index.files.with_tags(tags, limit=TAGGED_CANDIDATES * 4, current=current)
            pool += [item for item in tagged if item.path not in seen and question.scope.matches(item.path)][
                :TAGGED_CANDIDATES
            ]
    verdicts: list[Verdict] = []
    judged_any = False
    streamed = 0
    max_chunks = max(allowance.calls_left - 1, 1)  # keep one call for the final ranking
    async for outcome in judge(allowance, question.text, pool, max_chunks=max_chunks):
        if isinstance(outcome, ModelError):
            problems.append(f"judging failed: {outcome}")
            if isinstance(outcome, BudgetSpent):
                break
            continue
        judged_any = True
        verdicts += outcome
        passing = sorted((v for v in outcome if v.score >= PASS_SCORE), key=lambda v: -v.score)
        passing = passing[: max(question.limit - streamed, 0)]
        if passing:
            streamed += len(passing)
            yield RelevanceUpdate("judge", from_verdicts(passing, "judge"))
    if judged_any:
        stages.append("judge")
    promising = sorted((v for v in verdicts if v.score >= PASS_SCORE), key=lambda v: (-v.score, v.item.path))[
        :FINAL_POOL
    ]
    final: list[RankedFile] | None = None
    if len(promising) >= 2:
        try:
            placed = await rank(allowance, question.text, promising)
        except ModelError as error:
            problems.append(f"final ranking failed: {error}")
        else:
            stages.append("final")
            final = from_verdicts(placed[: question.limit], "final")
            yield RelevanceUpdate("final", final)
    elif len(promising) == 1:
        final = from_verdicts(promising, "judge")
    if final is None:
        final = (
            from_verdicts(promising[: question.limit], "judge")
            if promising
            else from_candidates(candidates[: question.limit])
        )
    message = "; ".join(dict.fromkeys(problems)) or None  # six chunks failing alike say it once
    if judged_any and not promising and not problems:
        message = "the model judged none of the candidates relevant; these are the lexical matches"
    yield RelevanceUpdate(
        stages[-1], final, done=True, stages=stages, degraded=bool(problems), message=message
    )
