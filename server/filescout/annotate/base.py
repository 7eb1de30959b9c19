"""The annotator interface: content in, annotation out, identified by a stable id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from filescout.core.records import Annotation, FileToAnnotate

SUMMARY_LIMIT = 300
TAG_LIMIT = 8


class Annotator(Protocol):
    @property
    def id(self) -> str:
        """Stable identity of this annotator and its prompt/rules version: annotations are
        stored under (content hash, id), so a new id means new annotations."""
        ...

    async def annotate(self, files: Sequence[FileToAnnotate]) -> list[Annotation | None]:
        """One result per file, in order; None where this annotator has nothing to say."""
        ...


def clip(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """Collapse whitespace and cut at a word boundary."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"
