"""findRelevant as the faces see it: a request's params made into a Question for the stages,
and the stages' updates made into protocol items, with the one way a final answer is
assembled."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from filescout.core.errors import InvalidParams
from filescout.core.records import RankedFile, RelevanceStage
from filescout.engine.prompt import Listed, render
from filescout.engine.shown import shown
from filescout.llm.redact import redact
from filescout.relevance.filters import PathFilter
from filescout.relevance.find import Question, RelevanceUpdate
from filescout_protocol.types import FindRelevantParams, FindRelevantResult, RelevanceOptions, RelevantItem

QUESTION_SHOWN = 500  # characters of the question repeated in a prompt-ready block


def question_of(params: FindRelevantParams, root: Path) -> Question:
    """The request as the stages need it; paths and globs are checked against the root."""
    if not params.query.strip():
        raise InvalidParams("query: must not be blank")
    scope = params.scope
    options = params.options or RelevanceOptions()
    path_filter = PathFilter.build(
        root, scope.globs if scope else [], scope.paths if scope else [], field_prefix="scope."
    )
    return Question(
        text=params.query,
        limit=params.limit,
        scope=path_filter,
        use_model=options.use_model,
        max_model_calls=options.max_model_calls,
        max_tokens=options.max_tokens,
        candidates=options.candidates,
        select_tags=options.select_tags,
    )


def relevant_item(ranked: RankedFile) -> RelevantItem:
    """The file as a client sees it: its reason (which may quote a definition, a commit subject
    or a model's words), summary and tags redacted (`shown`)."""
    entry = ranked.entry
    return shown(
        RelevantItem(
            path=entry.path,
            score=ranked.score,
            stage=ranked.stage,
            reason=ranked.reason,
            summary=entry.shown_summary,
            tags=entry.tags,
            language=entry.language,
            kind=entry.kind,
        )
    )


@dataclass
class FindUpdate:
    """One step of a findRelevant request: items to stream, or (done) the final answer."""

    stage: RelevanceStage
    items: list[RelevantItem]
    done: bool = False
    stages: list[RelevanceStage] = field(default_factory=list)
    degraded: bool = False
    message: str | None = None
    prompt: str | None = None

    @classmethod
    def of(cls, update: RelevanceUpdate) -> FindUpdate:
        return cls(
            stage=update.stage,
            items=[relevant_item(item) for item in update.items],
            done=update.done,
            stages=update.stages,
            degraded=update.degraded,
            message=None if update.message is None else redact(update.message),
        )

    def result(self, items: list[RelevantItem] | None = None) -> FindRelevantResult:
        """The final response; `items` replaces this update's items (a streaming face sends
        only what it has not streamed already)."""
        return FindRelevantResult(
            items=self.items if items is None else items,
            stages=self.stages,
            degraded=self.degraded,
            message=self.message,
            prompt=msgspec.UNSET if self.prompt is None else self.prompt,
        )

    def with_prompt(self, question: str, tokens: int) -> FindUpdate:
        """This answer, also as a prompt-ready block."""
        listed = [Listed(item.path, item.summary, item.reason) for item in self.items]
        self.prompt = render(f"Request: {question[:QUESTION_SHOWN]}", listed, tokens=tokens)
        return self
