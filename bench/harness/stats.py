"""The one percentile every figure in docs/BENCHMARKS.md is computed with."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank value at `share` (0 to 1) of the sorted values: index round(share * (n - 1)).

    p50 of 1, 2, 3, 4 is 3 (index round(1.5) = 2, rounding half to even), p95 of 20 values is the
    19th smallest, p100 the largest. One formula, so figures from different scripts compare."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be between 0 and 1, not {share}")
    ordered = sorted(values)
    return ordered[round(share * (len(ordered) - 1))]
