"""Plain values that travel between the rooms: scan -> index -> annotate -> relevance.

Nothing here imports the rest of the project or the wire protocol. The faces (the engine's
workspace facade, the LSP server, the CLI) turn these into protocol Structs; a protocol rename
therefore never reaches the SQL row mapping.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

FileKind = Literal["source", "test", "docs", "config", "data", "generated", "binary", "other"]
FileStatus = Literal["pending", "annotated", "stale", "skipped"]
SkipReason = Literal["sensitive", "binary", "generated", "oversized"]
IndexPhase = Literal["idle", "scanning", "annotating", "failed"]
RelevanceStage = Literal["prefilter", "judge", "final"]

SKIPPED_SUMMARIES: dict[str, str] = {
    "sensitive": "Sensitive file (secrets or credentials); content not read.",
    "binary": "Binary file; content not read.",
    "generated": "Generated or minified file; content not annotated.",
    "oversized": "Large file; too big to annotate.",
}

KnownFile = tuple[str, int, int]
"""(path, size, mtime_ns) as the index has it: SQLite's own row, so loading 100K of them
creates no objects beyond what SQLite hands over."""


@dataclass(slots=True)
class FileRecord:
    """What a scan found out about one file: what the index keeps of it."""

    path: str
    size: int
    mtime_ns: int
    hash: str
    language: str | None
    kind: str
    skip_reason: SkipReason | None


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One indexed file as a listing shows it: its row plus the annotation it shows."""

    path: str
    summary: str
    tags: list[str]
    language: str | None
    kind: FileKind
    size: int
    mtime_ns: int
    status: FileStatus
    annotator: str | None
    skip_reason: SkipReason | None = None

    @property
    def shown_summary(self) -> str:
        """The summary, or for a file never annotated from its content, why not."""
        if self.summary or self.skip_reason is None:
            return self.summary
        return SKIPPED_SUMMARIES.get(self.skip_reason, "")


@dataclass(frozen=True, slots=True)
class Annotation:
    """What an annotator says about one content hash."""

    summary: str
    tags: list[str]
    symbols: list[str]
    imports: list[str] = field(default_factory=list)
    input_tokens: int = 0
    """What writing it cost in model tokens (0 for structural annotations)."""
    output_tokens: int = 0
    body: str | None = None
    """The content's words for full-text search (structural annotations only; stored in the
    search index, not with the annotation)."""


@dataclass(frozen=True, slots=True)
class PendingFile:
    """A file whose content still waits for an annotator."""

    path: str
    hash: str
    language: str | None
    kind: str
    size: int
    shown: str | None = None
    """The annotator whose annotation the file shows now, if any."""


@dataclass(frozen=True, slots=True)
class FileToAnnotate:
    """A pending file with its text, read and checked against the index's hash."""

    path: str
    hash: str
    language: str | None
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One full-text match: BM25 as a positive score (higher is better)."""

    path: str
    rank: float
    kind: str = "other"
    access_rank: float | None = None
    """The file's frecency rank, if it was ever used (see `index.access`)."""


@dataclass(frozen=True, slots=True)
class RankedFile:
    """A file a relevance stage put forward, with why."""

    entry: FileEntry
    score: float
    stage: RelevanceStage
    reason: str


@dataclass(frozen=True, slots=True)
class ScanTotals:
    """What one scan changed in the index."""

    added: int = 0
    changed: int = 0
    removed: int = 0
    renamed: int = 0
    unchanged: int = 0
    files: int = 0
    elapsed_ms: int = 0
