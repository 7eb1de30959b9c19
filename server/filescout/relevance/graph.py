"""The import graph as evidence: a file that a leading match imports, or that imports it, is
likelier to matter than an equal match with no tie to the leaders (a change to the lexer often
touches the parser that uses it).

One hop from the leading few, and small: a neighbour gains a share of the leader's score, split
among the leader's neighbours, and never more than brings it level with the leader. That reorders
near-ties below the leaders; a clearly better file stays ahead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from filescout.core.import_keys import provided_keys
from filescout.index import Index

SOURCES = 5
"""How many of the leading files spread a share of their score."""
LOOKED_UP = 8
"""How many leading files' links are read (read before the leaders are final, so a little wider)."""
SHARE = 0.1
"""What a leader gives its neighbours, as a fraction of its score, before splitting it."""
BELOW = 0.999
"""A lifted neighbour stays (just) below the best leader that lifted it."""


@dataclass
class Links:
    """Who imports whom among the leading files and the files around them."""

    imports: dict[str, set[str]] = field(default_factory=dict)
    """leader -> the files of the pool it imports"""
    imported_by: dict[str, set[str]] = field(default_factory=dict)
    """leader -> the files of the pool that import it"""

    def neighbours(self, leader: str) -> set[str]:
        return (self.imports.get(leader, set()) | self.imported_by.get(leader, set())) - {leader}


@dataclass(frozen=True)
class Lift:
    amount: float
    source: str
    """The leader that gave the most."""
    imported: bool
    """The lifted file is imported by `source` (else it imports `source`)."""


async def read_links(index: Index, leaders: Sequence[str], pool: Sequence[str]) -> Links:
    """The import links between `leaders` and the files in `pool` (both ways), one query."""
    wanted = list(leaders[:LOOKED_UP])
    keys_of = {path: provided_keys(path) for path in wanted}
    if not wanted:
        return Links()
    rows = await index.graph.links(wanted, sorted({key for keys in keys_of.values() for key in keys}))
    providers: dict[str, set[str]] = {}
    for path in pool:
        for key in provided_keys(path):
            providers.setdefault(key, set()).add(path)
    links = Links()
    leader_set = set(wanted)
    for importer, key in rows:
        if importer in leader_set:
            links.imports.setdefault(importer, set()).update(providers.get(key, set()) - {importer})
        for leader, keys in keys_of.items():
            if key in keys and importer != leader:
                links.imported_by.setdefault(leader, set()).add(importer)
    pooled = set(pool)
    links.imported_by = {leader: found & pooled for leader, found in links.imported_by.items()}
    return links


def spread(ranked: Sequence[tuple[float, str]], links: Links) -> dict[str, Lift]:
    """Each neighbour's lift from the leading SOURCES of `ranked` (best first): SHARE of a
    leader's score split over the square root of its neighbour count, summed over leaders, and
    capped so the neighbour stays below the best leader that lifted it."""
    scores = {path: score for score, path in ranked}
    given: dict[str, dict[str, float]] = {}
    for score, leader in ranked[:SOURCES]:
        neighbours = [path for path in links.neighbours(leader) if path in scores]
        if not neighbours:
            continue
        each = SHARE * score / math.sqrt(len(neighbours))
        for path in neighbours:
            given.setdefault(path, {})[leader] = each
    lifts: dict[str, Lift] = {}
    for path, by_leader in given.items():
        source = max(by_leader, key=lambda leader: (by_leader[leader], leader))
        ceiling = max(scores[leader] for leader in by_leader)
        amount = min(sum(by_leader.values()), max(ceiling * BELOW - scores[path], 0.0))
        if amount > 0:
            lifts[path] = Lift(amount, source, path in links.imports.get(source, set()))
    return lifts


def reason(lift: Lift) -> str:
    name = lift.source.rpartition("/")[2]
    return f"imported by {name}, a leading match" if lift.imported else f"imports {name}, a leading match"
