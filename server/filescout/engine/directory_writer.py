"""Directory summaries written by the model once file annotation is idle: a low-priority pass
over the overview's directories (chains of single subdirectories are one, as the overview shows
them) whose current key (`index.directory_summaries`) has no summary yet.

Bottom-up: a directory is asked about only once each of its subdirectories has its summary (or
the model could not give one), so its prompt holds its children's summaries; among those ready,
the most important first (the overview's importance), at most PER_PASS directories a pass. The
team's cache is looked up first and what the model writes is shared, under the directory
annotator's id, apart from file annotations. The pass stops as soon as files wait for the model
again, when the model stops (budget, refusal, failing endpoint), or when cancelled; a directory
without a summary keeps its rolled-up line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from filescout.annotate.directories import (
    MAX_DIRECTORIES_PER_REQUEST,
    Child,
    DirectoryInput,
    DirectorySummarizer,
)
from filescout.annotate.team_cache import SharedCache
from filescout.core.records import Annotation
from filescout.engine.overview import (
    SUMMARY_CHARS,
    Node,
    build_tree,
    directories,
    directory_summary,
    name,
    written_summaries,
)
from filescout.index import Index
from filescout.index.directory_summaries import DirectorySummary, directory_keys
from filescout.index.overview import OverviewReads
from filescout.llm.client import BudgetSpent, ModelError, ModelRefused, ModelUnavailable
from filescout.relevance.importance import importance

log = logging.getLogger(__name__)

PER_PASS = 64
"""Directories a pass asks the model about at most; the next pass goes on."""
STOPPING_ERRORS = (ModelUnavailable, BudgetSpent, ModelRefused)
"""Errors that are not the directories' fault: they are asked about again later."""


@dataclass(slots=True)
class DirectoryCounts:
    """The overview's directories with a model's summary of what they hold now, and those
    still waiting for one, as of the last pass."""

    summarized: int = 0
    waiting: int = 0


@dataclass(slots=True)
class PassResult:
    error: ModelError | None
    """What stopped the model, if anything did."""
    more: bool
    """Directories still wait that a later pass can write."""


async def write_directory_summaries(
    index: Index,
    summarizer: DirectorySummarizer,
    shared: SharedCache | None,
    counts: DirectoryCounts,
    *,
    busy: Callable[[], bool],
    gave_up: set[str],
) -> PassResult:
    """One pass; `counts` is kept current as it goes; `gave_up` holds the keys the model
    answered without a usable summary (not asked again)."""
    facts = await OverviewReads(index.db).facts(summary_chars=SUMMARY_CHARS)
    paths = [item.path for item in facts.files]

    def tree_and_keys() -> tuple[Node, dict[str, str]]:
        tree = build_tree(facts.files, importance(facts))
        return tree, directory_keys(zip(paths, facts.hashes, strict=True))

    tree, all_keys = await asyncio.to_thread(tree_and_keys)
    nodes = list(directories(tree))
    keys = {node.path: all_keys[node.path] for node in nodes if node.path in all_keys}
    stored = await index.directory_summaries.of(summarizer.id, keys.values())
    missing = [key for key in keys.values() if key not in stored]
    if shared is not None and missing:
        found = await shared.lookup(summarizer.id, missing, kind="directory")
        if found:
            kept = [(key, _record(item)) for key, item in found.items()]
            await index.directory_summaries.save(summarizer.id, kept)
            stored.update(kept)
    written_summaries(tree, keys, {key: item.summary for key, item in stored.items()})
    waiting = [node for node in nodes if node.written is None and keys.get(node.path) not in gave_up]
    counts.summarized, counts.waiting = len(nodes) - len(waiting), len(waiting)
    asked = 0
    while waiting:
        if busy():
            return PassResult(None, True)
        settled = {id(node) for node in nodes if node.written is not None or keys.get(node.path) in gave_up}
        ready = [
            node
            for node in waiting
            if all(id(child) in settled for child in node.children if child.file is None)
        ]
        if not ready:  # cannot happen in a tree; never loop on it
            break
        ready.sort(key=lambda node: (-node.importance, node.path))
        room = PER_PASS - asked
        if room <= 0:
            return PassResult(None, True)
        concurrency = summarizer.client.settings.concurrency
        batch = ready[: min(room, MAX_DIRECTORIES_PER_REQUEST * concurrency)]
        inputs = [_input(node, keys[node.path]) for node in batch]
        summaries, error = await summarizer.summarize(inputs)
        asked += len(batch)
        saved = [
            (item.key, _record(summary))
            for item, summary in zip(inputs, summaries, strict=True)
            if summary is not None
        ]
        await index.directory_summaries.save(summarizer.id, saved)  # paid for: kept first
        if shared is not None and saved:
            await shared.store(
                summarizer.id, [(key, _annotation(item)) for key, item in saved], kind="directory"
            )
        written = dict(saved)
        for node, item in zip(batch, inputs, strict=True):
            if item.key in written:
                node.written, node.summary = written[item.key].summary, None
            elif not isinstance(error, STOPPING_ERRORS):
                gave_up.add(item.key)  # answered without it, or rejected: keeps its roll-up
        waiting = [node for node in waiting if node.written is None and keys[node.path] not in gave_up]
        counts.summarized, counts.waiting = len(nodes) - len(waiting), len(waiting)
        if isinstance(error, STOPPING_ERRORS):
            return PassResult(error, True)
        if error is not None:
            log.warning("directory summaries skipped %d directories: %s", len(batch) - len(saved), error)
    return PassResult(None, False)


def _input(node: Node, key: str) -> DirectoryInput:
    """A directory as the model sees it: its children's summaries, the most important first."""
    children = sorted(node.children, key=lambda child: (-child.importance, name(child)))
    return DirectoryInput(
        path=node.path,
        key=key,
        files=node.files,
        children=tuple(
            Child(
                name(child),
                child.file is None,
                child.file.summary if child.file is not None else directory_summary(child),
            )
            for child in children
        ),
    )


def _record(item: Annotation) -> DirectorySummary:
    return DirectorySummary(item.summary, tuple(item.tags), item.input_tokens, item.output_tokens)


def _annotation(item: DirectorySummary) -> Annotation:
    return Annotation(
        summary=item.summary,
        tags=list(item.tags),
        symbols=[],
        input_tokens=item.input_tokens,
        output_tokens=item.output_tokens,
    )
