"""findRelevant's updates as the faces send them: protocol items, and the one way a final
answer is assembled."""

from __future__ import annotations

from dataclasses import dataclass, field

from filescout.records import RankedFile, RelevanceStage
from filescout.relevance.find import RelevanceUpdate
from filescout_protocol.types import FindRelevantResult, RelevantItem


def relevant_item(ranked: RankedFile) -> RelevantItem:
    entry = ranked.entry
    return RelevantItem(
        path=entry.path,
        score=ranked.score,
        stage=ranked.stage,
        reason=ranked.reason,
        summary=entry.shown_summary,
        tags=entry.tags,
        language=entry.language,
        kind=entry.kind,
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

    @classmethod
    def of(cls, update: RelevanceUpdate) -> FindUpdate:
        return cls(
            stage=update.stage,
            items=[relevant_item(item) for item in update.items],
            done=update.done,
            stages=update.stages,
            degraded=update.degraded,
            message=update.message,
        )

    def result(self, items: list[RelevantItem] | None = None) -> FindRelevantResult:
        """The final response; `items` replaces this update's items (a streaming face sends
        only what it has not streamed already)."""
        return FindRelevantResult(
            items=self.items if items is None else items,
            stages=self.stages,
            degraded=self.degraded,
            message=self.message,
        )
