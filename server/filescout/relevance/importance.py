"""How much each file matters to someone meeting the workspace, without a question: what the
overview keeps open when its budget is short.

Four signals the index already has, each scaled to 0..1 over the workspace:
- centrality: PageRank over the import graph (a file many files import, or that important files
  import, is one to know about), on a log scale between the least and the most central file;
- history: how often commits changed it and how recently (by commit, not by clock: the same
  history always weighs the same);
- use: the user's own frecency (`index.access`), relative to the most used file, so it does not
  drift as the scores decay;
- kind: source before configuration, docs and tests, data and generated files last; and
  whatever lies under a hidden directory (`.github/`) counts half: it serves the tools.

The score is the kind's weight times a blend of the others above a floor, so a file with no
edges, no history and no use still ranks by its kind. Everything is ordered with ties broken by
path: an unchanged index gives the same scores, whenever it is asked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from filescout.core.import_keys import provided_keys
from filescout.index.overview import WorkspaceFacts

KIND_WEIGHT = {
    "source": 1.0,
    "config": 0.5,
    "docs": 0.5,
    "document": 0.4,
    "image": 0.2,
    "test": 0.4,
    "other": 0.4,
    "data": 0.3,
    "generated": 0.15,
    "binary": 0.1,
}
TOOLING = 0.5
"""Files under a hidden directory (`.github/`, `.devcontainer/`) serve the tools, not the product."""
FLOOR = 0.25
"""What a file counts for on its kind alone."""
CENTRALITY = 0.35
HISTORY = 0.25
USE = 0.15
DAMPING = 0.85
ITERATIONS = 50
TOLERANCE = 1e-7
AMBIGUOUS_KEY = 3
"""A key more files provide than this (`utils` in a large tree) says too little about which one
an import means: it adds no edge."""
HISTORY_HALF_LIFE = 0.05
"""Recency halves every this share of the history's commits (at least MIN_HALF_LIFE commits)."""
MIN_HALF_LIFE = 25


def import_edges(facts: WorkspaceFacts, position: dict[str, int]) -> list[list[int]]:
    """Each file's imports as the indexes (in `position`) of the files they name, sorted. Only
    the keys something imports are looked for (a path provides a key per tail of its module
    path: kept for every file, they would outweigh the tree)."""
    imported = {key for _, key in facts.imports}
    providers: dict[str, list[int]] = {}
    for path, number in position.items():
        for key in provided_keys(path):
            if key in imported:
                providers.setdefault(key, []).append(number)
    targets: dict[int, set[int]] = {}
    for importer, key in facts.imports:
        source = position.get(importer)
        found = providers.get(key)
        if source is None or not found or len(found) > AMBIGUOUS_KEY:
            continue
        targets.setdefault(source, set()).update(number for number in found if number != source)
    nothing: list[int] = []  # shared by every file that imports nothing the index knows
    return [sorted(targets[number]) if number in targets else nothing for number in range(len(position))]


def pagerank(edges: Sequence[Sequence[int]]) -> list[float]:
    """PageRank of each node (edges: node -> the nodes it links to), summing to 1; a node
    without links shares its rank with every node.

    Every node's rank is one shared base plus what its importers pass it, so an iteration costs
    the edges, not the nodes: in a large tree most files import nothing the index knows."""
    count = len(edges)
    if not count:
        return []
    sources = [node for node in range(count) if edges[node]]
    base = 1.0 / count
    received: dict[int, float] = {}
    for _ in range(ITERATIONS):
        ranks = {node: base + received.get(node, 0.0) for node in sources}
        dangling = max(1.0 - sum(ranks.values()), 0.0)
        following: dict[int, float] = {}
        for node in sources:
            targets = edges[node]
            share = DAMPING * ranks[node] / len(targets)
            for target in targets:
                following[target] = following.get(target, 0.0) + share
        new_base = (1.0 - DAMPING) / count + DAMPING * dangling / count
        moved = following.keys() | received.keys()
        change = abs(new_base - base) * count + sum(
            abs(following.get(node, 0.0) - received.get(node, 0.0)) for node in moved
        )
        base, received = new_base, following
        if change < TOLERANCE:
            break
    return [base + received.get(node, 0.0) for node in range(count)]


def centrality(edges: Sequence[Sequence[int]]) -> list[float]:
    """PageRank on a log scale: 0 for the least central file, 1 for the most."""
    rank = pagerank(edges)
    if not rank:
        return []
    low, high = min(rank), max(rank)
    if high <= low * (1 + 1e-9):
        return [0.0] * len(rank)
    spread = math.log(high / low)
    return [math.log(value / low) / spread for value in rank]


def history_scores(facts: WorkspaceFacts, paths: Sequence[str]) -> list[float]:
    """How often (log-scaled against the most changed file) and how recently the history changed
    each path, half each."""
    if not facts.changes or facts.newest_commit <= 0:
        return [0.0] * len(paths)
    most = max(count for count, _ in facts.changes.values())
    half_life = max(MIN_HALF_LIFE, facts.newest_commit * HISTORY_HALF_LIFE)
    scores = []
    for path in paths:
        changed = facts.changes.get(path)
        if changed is None:
            scores.append(0.0)
            continue
        count, last = changed
        often = math.log1p(count) / math.log1p(most)
        recent = 0.5 ** (max(facts.newest_commit - last, 0) / half_life)
        scores.append(0.5 * often + 0.5 * recent)
    return scores


def use_scores(facts: WorkspaceFacts, paths: Sequence[str]) -> list[float]:
    """Frecency relative to the most used file: every score decays alike, so the ratio holds."""
    if not facts.access:
        return [0.0] * len(paths)
    top = max(facts.access.values())
    return [math.sqrt(math.exp(facts.access[path] - top)) if path in facts.access else 0.0 for path in paths]


def importance(facts: WorkspaceFacts) -> dict[str, float]:
    """Each file's importance, 0..1: its kind's weight times the floor plus the blended signals."""
    paths = [item.path for item in facts.files]
    position = {path: number for number, path in enumerate(paths)}
    central = centrality(import_edges(facts, position))
    history = history_scores(facts, paths)
    use = use_scores(facts, paths)
    return {
        item.path: round(
            KIND_WEIGHT.get(item.kind, KIND_WEIGHT["other"])
            * (TOOLING if item.path.startswith(".") or "/." in item.path else 1.0)
            * (FLOOR + CENTRALITY * central[number] + HISTORY * history[number] + USE * use[number]),
            6,
        )
        for number, item in enumerate(facts.files)
    }
