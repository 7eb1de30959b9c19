"""What to annotate next.

Three tiers: files the user touched (opened, edited, saved, asked about) come first, most recent
first; then their neighbours (same directory, files they import); then everything else in the
index's default order (frecent files, then source before tests and docs, small before large).
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Iterable

TOUCHED = 0
NEIGHBOUR = 1
BACKGROUND = 2


class AnnotationQueue:
    """Touched files and neighbours in a heap; the backlog, which keeps its arrival order and is
    most of the queue (every file of a first index), in a plain deque: a heap entry per file
    would cost a 100K-file backlog ~10 MB more."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str]] = []
        self._backlog: deque[str] = deque()
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
        if tier == BACKGROUND:
            self._backlog.append(path)
            return
        order = next(self._sequence)
        heapq.heappush(self._heap, (tier, -order if tier == TOUCHED else order, path))

    def extend(self, paths: Iterable[str], tier: int) -> None:
        for path in paths:
            self.push(path, tier)

    def pop(self, count: int, *, tier_at_most: int = BACKGROUND) -> list[str]:
        """Up to `count` paths, best first, none of a tier past `tier_at_most`; superseded
        entries (a path moved up, or taken already) are skipped."""
        taken: list[str] = []
        tiers = self._tier
        while len(taken) < count:
            if self._heap and self._heap[0][0] <= tier_at_most:
                tier, _, path = heapq.heappop(self._heap)
            elif self._backlog and tier_at_most >= BACKGROUND:  # the heap is empty by now
                tier, path = BACKGROUND, self._backlog.popleft()
            else:
                break
            if tiers.get(path) == tier:
                del tiers[path]
                taken.append(path)
        return taken

    def head_tier(self) -> int | None:
        """The tier of the path that would come out first (None: nothing waits)."""
        while self._heap:
            tier, _, path = self._heap[0]
            if self._tier.get(path) == tier:
                return tier
            heapq.heappop(self._heap)  # superseded
        while self._backlog:
            if self._tier.get(self._backlog[0]) == BACKGROUND:
                return BACKGROUND
            self._backlog.popleft()  # superseded
        return None

    def clear_background(self) -> None:
        """Forget the default-order backlog (a new pass will reload it); keep touched files."""
        self._backlog.clear()
        self._tier = {path: tier for path, tier in self._tier.items() if tier != BACKGROUND}
        self._heap = [(tier, order, path) for tier, order, path in self._heap if self._tier.get(path) == tier]
        heapq.heapify(self._heap)
