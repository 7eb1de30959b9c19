"""What a face gives the engine at construction: where status and progress go, and how
patient background work should be."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from filescout.engine.progress import NullProgress, ProgressReporter
from filescout_protocol.types import IndexStatus

StatusListener = Callable[[IndexStatus], None]
WarningListener = Callable[[str], None]
ProgressFactory = Callable[[str], Awaitable[ProgressReporter]]


async def no_progress(kind: str) -> ProgressReporter:
    return NullProgress()


@dataclass(frozen=True)
class Hooks:
    on_status: StatusListener | None = None
    """Called on every phase change (the LSP face sends `filescout/status`)."""
    on_warning: WarningListener | None = None
    """Called with what the user must hear while the engine runs, such as a damaged index being
    rebuilt (the LSP face shows it: `window/showMessage`); what opening found is in
    `Workspace.warnings`."""
    progress: ProgressFactory = no_progress
    """A fresh progress reporter for a kind of work ("index", "reindex", "model")."""
    persistent: bool = True
    """A server waits out a failing model endpoint and keeps the content search's top-k store;
    a one-shot CLI run gives up instead, and its content search is FTS5's (the same answer
    whether or not a store would have opened in time)."""
