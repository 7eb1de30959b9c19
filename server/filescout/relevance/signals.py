"""Which of the prefilter's signals are on. The proven ones are, always; turning one off exists to
measure what each adds (bench/relevance.py --without), and an unproven one is turned on only to
measure it, so both are read from the environment of the process that ranks, never from a
workspace's settings."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

SIGNALS = ("mentions", "definitions", "imports", "history")
UNPROVEN = ("fit",)
"""Signals off unless asked for: built, tested and measured, but not yet shown to rank better."""
ENVIRONMENT = "FILESCOUT_RELEVANCE_WITHOUT"
"""A comma-separated list of signals to leave out, e.g. `history,imports`."""
ENVIRONMENT_WITH = "FILESCOUT_RELEVANCE_WITH"
"""A comma-separated list of unproven signals to use, e.g. `fit`."""


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
    fit: bool = False
    """Fusion weights fitted on the workspace's own history (fit.py). Unproven: on the relevance
    cases they rank about as the defaults do, better on some repositories and worse on one
    (docs/BENCHMARKS.md)."""

    @classmethod
    def from_environment(cls, env: Mapping[str, str] = os.environ) -> Signals:
        left_out = _names(env, ENVIRONMENT, SIGNALS)
        asked = _names(env, ENVIRONMENT_WITH, UNPROVEN)
        return cls(
            **{name: name not in left_out for name in SIGNALS}, **{name: name in asked for name in UNPROVEN}
        )


def _names(env: Mapping[str, str], variable: str, known: tuple[str, ...]) -> set[str]:
    names = {name.strip() for name in env.get(variable, "").split(",") if name.strip()}
    unknown = names - set(known)
    if unknown:
        raise ValueError(f"{variable}: unknown signals {sorted(unknown)}; known: {', '.join(known)}")
    return names
