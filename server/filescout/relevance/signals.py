"""Which of the prefilter's signals are on. All are, always; turning one off exists to measure
what each adds (bench/relevance.py --without), so it is read from the environment of the process
that ranks, never from a workspace's settings."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

SIGNALS = ("mentions", "definitions", "imports", "history")
ENVIRONMENT = "FILESCOUT_RELEVANCE_WITHOUT"
"""A comma-separated list of signals to leave out, e.g. `history,imports`."""


@dataclass(frozen=True, slots=True)
class Signals:
    mentions: bool = True
    """Paths, names, modules, frames and symbols the question writes (mentions.py)."""
    definitions: bool = True
    """Definitions scored on their own and rolled up to their files."""
    imports: bool = True
    """A share of the leaders' scores spread over the files they import or are imported by."""
    history: bool = True
    """Past commits like the question vote for the files they touched (git work trees)."""

    @classmethod
    def from_environment(cls, env: Mapping[str, str] = os.environ) -> Signals:
        left_out = {name.strip() for name in env.get(ENVIRONMENT, "").split(",") if name.strip()}
        unknown = left_out - set(SIGNALS)
        if unknown:
            raise ValueError(f"{ENVIRONMENT}: unknown signals {sorted(unknown)}; known: {', '.join(SIGNALS)}")
        return cls(**{name: name not in left_out for name in SIGNALS})
