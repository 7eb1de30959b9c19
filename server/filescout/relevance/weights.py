"""The prefilter's fusion weights: the defaults, and those fitted on the workspace's own history
(fit.py), stored in the index and used when they ranked its newest commits better.

The history fits how far tests, config, docs, data and other files sit below source and how much
past commits' votes move the ranking; the text's own weights (content, definitions) are weights
too, at their defaults (fit.py says why). Source stays the unit; documents, images, generated and
binary files keep their priors (commits rarely touch them).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import msgspec

from filescout.index import Index
from filescout.relevance.signals import ENVIRONMENT_WITH, Signals

KIND_PRIOR = {
    "source": 1.0,
    "test": 0.45,
    "config": 0.5,
    "docs": 0.35,
    "document": 0.35,
    "image": 0.2,
    "other": 0.45,
    "data": 0.3,
    "generated": 0.2,
    "binary": 0.0,
}
"""How far each kind of file sits below source, all else equal (the defaults)."""
FITTED_KINDS = ("test", "config", "docs", "other", "data")
FIT_VERSION = 3
"""Raised when the fit changes what it would find: a fit stored by another version is redone."""
META_KEY = f"ranking_fit/{FIT_VERSION}"


@dataclass(frozen=True, slots=True)
class Weights:
    content: float = 1.0
    """A file's content words' BM25 beside what describes it (path, symbols, summary, tags)."""
    definitions: float = 1.0
    """A share of what its matching definitions add (definitions.lifts)."""
    history: float = 1.0
    """A share of how far past commits' votes lift and admit files (past_commits)."""
    test: float = KIND_PRIOR["test"]
    config: float = KIND_PRIOR["config"]
    docs: float = KIND_PRIOR["docs"]
    other: float = KIND_PRIOR["other"]
    data: float = KIND_PRIOR["data"]

    @property
    def kind_prior(self) -> dict[str, float]:
        return {**KIND_PRIOR, **{kind: getattr(self, kind) for kind in FITTED_KINDS}}

    def with_value(self, name: str, value: float) -> Weights:
        return dataclasses.replace(self, **{name: value})

    def changes(self) -> dict[str, float]:
        """The weights that differ from the defaults."""
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if getattr(self, field.name) != field.default
        }


DEFAULT = Weights()


@dataclass(frozen=True, slots=True)
class RankingFit:
    """What fitting the weights on the workspace's history found, as stored in the index."""

    weights: Weights
    kept: bool
    """Whether the fitted weights rank the held-out commits better than the defaults (else the
    defaults are used)."""
    reason: str
    history_commits: int
    """Commits in the history when fitted: the fit is redone when it has grown by a margin."""
    trained: int
    validated: int
    default_mrr: float
    """MRR of the held-out commits' files with the default weights."""
    fitted_mrr: float
    seconds: float

    @property
    def used(self) -> Weights:
        return self.weights if self.kept else DEFAULT

    def describe(self) -> str:
        if not self.kept:
            return f"default weights ({self.reason})"
        changed = ", ".join(f"{name} {value:g}" for name, value in self.weights.changes().items())
        return (
            f"fitted on {self.trained} past commits: MRR {self.default_mrr:.3f} -> {self.fitted_mrr:.3f} "
            f"on the newest {self.validated} ({changed})"
        )


_encode = msgspec.json.encode
_decode = msgspec.json.Decoder(RankingFit).decode


def encode(fit: RankingFit) -> str:
    return _encode(fit).decode()


class StoredFit:
    """The index's fit, decoded once per stored value."""

    def __init__(self) -> None:
        self._raw: str | None = None
        self._fit: RankingFit | None = None

    async def read(self, index: Index) -> RankingFit | None:
        raw = await index.meta.get(META_KEY)
        if raw != self._raw:
            try:
                self._fit = _decode(raw) if raw else None
            except (msgspec.DecodeError, msgspec.ValidationError):  # another version's: refitted
                self._fit = None
            self._raw = raw
        return self._fit


_stored = StoredFit()


async def stored_fit(index: Index) -> RankingFit | None:
    return await _stored.read(index)


async def current_weights(index: Index) -> Weights:
    """The weights a question in this workspace is ranked with."""
    fit = await _stored.read(index)
    return fit.used if fit is not None else DEFAULT


OFF = f"default weights (fitting them on the repository's history is off; {ENVIRONMENT_WITH}=fit turns it on)"


async def ranking_status(index: Index) -> str | None:
    """How this workspace's questions are ranked, for the status: None before a fit is stored."""
    if not Signals.from_environment().fit:
        return OFF
    fit = await _stored.read(index)
    return fit.describe() if fit is not None else None
