"""The status a client asks for, assembled from the index, the board, the workers and the
settings; the model's part says what model annotation does, has cost, and would cost."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from filescout import __version__
from filescout.annotate.llm import OUTPUT_TOKENS_PER_FILE
from filescout.engine.board import StatusBoard
from filescout.engine.model_worker import ModelWorker
from filescout.engine.passes import SKIPPED_NAMES
from filescout.engine.roles import Roles
from filescout.engine.scheduler import Scheduler
from filescout.engine.sharing import cache_status
from filescout.engine.shown import shown
from filescout.index import Index
from filescout.llm.client import CHARS_PER_TOKEN, BudgetSpent
from filescout.relevance.weights import ranking_status
from filescout_protocol.types import PROTOCOL_VERSION, ModelStatus, Settings, StatusResult

ESTIMATED_OUTLINE_TOKENS = 200  # outline and a share of the instructions, per file
ModelState = Literal["active", "idle", "budget_spent", "unavailable", "refused", "privacy", "off"]


async def workspace_status(
    root: Path, settings: Settings, roles: Roles, board: StatusBoard, scheduler: Scheduler
) -> StatusResult:
    index = roles.index
    current = scheduler.current
    by_status, by_kind = await index.files.counts(current=current)
    # errors and the model's messages may quote what an endpoint or a database answered
    return shown(
        StatusResult(
            protocol_version=PROTOCOL_VERSION,
            server_version=__version__,
            root=str(root),
            db_path=str(index.path),
            phase=board.phase,
            files=sum(by_status.values()),
            by_status=by_status,
            by_kind=by_kind,
            annotator=current,
            last_scan=await index.meta.get("last_scan"),
            role=roles.role,
            writer_pid=roles.writer_pid(),
            queued=len(scheduler.structural.queue),
            model=await model_status(scheduler.model, settings, index, scheduler.structural.id),
            shared_cache=cache_status(scheduler.model.shared) if scheduler.model.shared is not None else None,
            last_error=board.last_error,
            skipped_names=int(await index.meta.get(SKIPPED_NAMES) or 0),
            ranking=await ranking_status(index),
        )
    )


async def model_status(
    worker: ModelWorker, settings: Settings, index: Index, structural_id: str
) -> ModelStatus:
    """What model annotation does, has cost, and would cost to finish."""
    model_settings = settings.model
    model = worker.annotator
    if model is None:
        state: ModelState = "privacy" if settings.privacy_mode and model_settings.model else "off"
        message = (
            "privacy mode is on: no model is called"
            if state == "privacy"
            else "no model configured: structural annotations only"
        )
        return ModelStatus(annotator=structural_id, state=state, message=message)
    client = model.client
    budget = client.budget
    waiting_files, waiting_bytes = await index.annotations.waiting_for(model.id)
    waiting_files = max(waiting_files - len(worker.gave_up), 0)
    estimate, input_share = _estimate(
        await index.annotations.cost(model.id), waiting_files, waiting_bytes, model_settings.file_tokens
    )
    cost = None
    if model_settings.input_price is not None and model_settings.output_price is not None:
        cost = round(
            estimate
            * (input_share * model_settings.input_price + (1 - input_share) * model_settings.output_price)
            / 1e6,
            4,
        )
    return ModelStatus(
        annotator=model.id,
        state=_model_state(worker),
        message=worker.message or client.unavailable_reason() or client.retry_note(),
        tokens_today=budget.tokens_today,
        tokens_this_month=budget.tokens_this_month,
        daily_budget=settings.budget.daily_tokens,
        monthly_budget=settings.budget.monthly_tokens,
        calls=budget.calls,
        failures=budget.failures,
        queued_files=len(worker.queue) + worker.in_flight,
        estimated_tokens_to_finish=estimate,
        estimated_cost_to_finish=cost,
        directory_summaries=counts.summarized if (counts := worker.directory_counts) is not None else None,
        directories_waiting=counts.waiting if counts is not None else None,
    )


def _estimate(
    spent: tuple[int, int, int], waiting_files: int, waiting_bytes: int, file_tokens: int
) -> tuple[int, float]:
    """(tokens to finish, the input tokens' share): from the average so far, or before any
    call from excerpts, outlines, a share of the instructions and the answers."""
    done, spent_in, spent_out = spent
    if done:
        return (round((spent_in + spent_out) / done * waiting_files), spent_in / max(spent_in + spent_out, 1))
    estimate = round(
        min(waiting_bytes / CHARS_PER_TOKEN, waiting_files * file_tokens)
        + waiting_files * (ESTIMATED_OUTLINE_TOKENS + OUTPUT_TOKENS_PER_FILE)
    )
    return estimate, 0.85


def _model_state(worker: ModelWorker) -> ModelState:
    client = worker.annotator.client if worker.annotator is not None else None
    if client is None:
        return "off"
    if client.refused:
        return "refused"
    if client.budget.spent() or isinstance(worker.stopped, BudgetSpent):
        return "budget_spent"
    if client.breaker.is_open:
        return "unavailable"
    return "active" if worker.active or worker.writing_directories else "idle"
