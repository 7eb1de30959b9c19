"""What to annotate next.

Three tiers: files the user touched (opened, edited, saved, asked about) come first, most recent
first; then their neighbours (same directory, files they import); then everything else in the
index's default order (frecent files, then source before tests and docs, small before large).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable

TOUCHED = 0
NEIGHBOUR = 1
BACKGROUND = 2


class AnnotationQueue:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str]] = []
        self._tier: dict[str, int] = {}
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._tier)

    def push(self, path: str, tier: int) -> None:
        """Queue `path` at `tier`, or move it up if it waits at a lower tier. Within the
        touched tier the latest touch goes first; the other tiers keep arrival order."""
        current = self._tier.get(path)
        if current is not None and current <= tier and tier != TOUCHED:
            return
        self._tier[path] = tier
        order = next(self._sequence)
        heapq.heappush(self._heap, (tier, -order if tier == TOUCHED else order, path))

    def extend(self, paths: Iterable[str], tier: int) -> None:
        for path in paths:
            self.push(path, tier)

    def pop(self, count: int, *, tier_at_most: int = BACKGROUND) -> list[str]:
        """Up to `count` paths, best first, none of a tier past `tier_at_most`; superseded
        heap entries are skipped."""
        taken: list[str] = []
        while self._heap and len(taken) < count and self._heap[0][0] <= tier_at_most:
            tier, _, path = heapq.heappop(self._heap)
            if self._tier.get(path) == tier:
                del self._tier[path]
                taken.append(path)
        return taken

    def head_tier(self) -> int | None:
        """The tier of the path that would come out first (None: nothing waits)."""
        while self._heap:
            tier, _, path = self._heap[0]
            if self._tier.get(path) == tier:
                return tier
            heapq.heappop(self._heap)  # superseded
        return None

    def clear_background(self) -> None:
        """Forget the default-order backlog (a new pass will reload it); keep touched files."""
        kept = [
            (tier, order, path)
            for tier, order, path in self._heap
            if tier != BACKGROUND and self._tier.get(path) == tier
        ]
        self._heap = kept
        heapq.heapify(self._heap)
        self._tier = {path: tier for tier, _, path in kept}
