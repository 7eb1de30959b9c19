"""Plain values that travel between the rooms: scan -> index -> annotate -> relevance.

Nothing here imports the rest of the project or the wire protocol. The faces (the engine's
workspace facade, the LSP server, the CLI) turn these into protocol Structs; a protocol rename
therefore never reaches the SQL row mapping.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

FileKind = Literal[
    "source", "test", "docs", "config", "data", "document", "image", "generated", "binary", "other"
]
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
class Definition:
    """Something a file defines, with what describes it: where a question's words may match one
    function of a large file."""

    name: str
    kind: str
    """class, function, method, constant, ... (annotate/outline.py's kinds)"""
    container: str | None
    """The class, impl or namespace it is defined in, if any."""
    signature: str
    """Its header line, clipped: `def url_for(endpoint, *, _anchor=None)`."""
    doc: str
    """The first sentences of its docstring or of the comment directly above it."""
    line: int
    """1-based."""


@dataclass(frozen=True, slots=True)
class PreparedDefinitions:
    """A content's definitions as the definitions index keeps them, made where they were found
    (a worker process): the server's one writer, which bounds the throughput, only inserts them."""

    described: bytes
    """The Definition records, packed (core/packing.py)."""
    words: bytes
    """`searchable`, packed: removing rows from a contentless full-text table names their words."""
    searchable: list[tuple[str, str, str, str]]
    """Each definition's name, container, signature and doc words, in the definitions' order."""


@dataclass(frozen=True, slots=True)
class IndexWords:
    """An annotation's full-text words, found where it was made (a worker process)."""

    symbols: str
    tags: str
    definitions: PreparedDefinitions | None = None


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
    definitions: list[Definition] | None = None
    """What the content defines, described (structural annotations only; stored by content
    hash in the definitions index, not with the annotation). None: this annotator does not say,
    or `words.definitions` carries them already packed."""
    words: IndexWords | None = None
    """Its full-text words, when found where it was made (else the index finds them)."""


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
    facts: DocumentFacts | None = None
    """A document's or an image's facts (its text is the extracted text); None for a text file."""


@dataclass(frozen=True, slots=True)
class DocumentFacts:
    """What a document or an image says of itself beyond its text, found where its text is
    extracted (scan/extract.py): the structural annotator's summary and the model's header."""

    format: str
    """pdf, docx, pptx, xlsx, png, jpeg, gif, webp, bmp, tiff, ico, svg"""
    title: str = ""
    author: str = ""
    created: str = ""
    """ISO 8601 date (or date and time) as the file states it; empty when it does not."""
    modified: str = ""
    parts: int | None = None
    """Pages, slides or sheets (see `part_name`); None for an image or when unknown."""
    part_name: str = ""
    """page, slide or sheet"""
    parts_read: int | None = None
    """How many parts the text was read from, when not all of them (a cap or the deadline)."""
    headings: tuple[str, ...] = ()
    """Headings, slide titles or sheet names, in order, clipped."""
    width: int | None = None
    height: int | None = None
    """An image's (or a PDF's first page's, in points) dimensions."""
    camera: str = ""
    """An image's EXIF make and model; never its location."""
    taken: str = ""
    """An image's EXIF date of capture, ISO 8601."""
    problem: str = ""
    """Why the text could not be read, or not all of it ("encrypted", "damaged: ..."); empty
    when it was read whole."""


@dataclass(frozen=True, slots=True)
class Extracted:
    """A document's or an image's searchable text and its facts."""

    text: str
    facts: DocumentFacts


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One full-text match: BM25 as a positive score (higher is better)."""

    path: str
    rank: float
    kind: str = "other"
    access_rank: float | None = None
    """The file's frecency rank, if it was ever used (see `index.access`)."""


@dataclass(frozen=True, slots=True)
class TextStatistics:
    """What FTS5's BM25 weighs a row's words by, in one full-text table: to score a text the
    index does not hold (a file as it was before a past commit) as the index would."""

    rows: int
    average_length: float
    """Tokens per row, all columns together."""
    holding: dict[str, int]
    """phrase -> rows that hold it"""


@dataclass(frozen=True, slots=True)
class DescribedText:
    """A file's text outside the index (a past version), as the structural annotator describes
    it: what the index would hold of it."""

    words: str
    """Its content words (core.words.body_words)."""
    summary: str
    tags: list[str]
    symbols: list[str]
    definitions: list[Definition]


@dataclass(frozen=True, slots=True)
class DefinitionHit:
    """A definition matching a question, in one file with its content: BM25 as a positive score."""

    path: str
    rank: float
    definition: Definition
    kind: str = "other"
    access_rank: float | None = None


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


@dataclass(frozen=True, slots=True)
class PastCommit:
    """One commit of the workspace's history, as the history index keeps it."""

    sha: str
    time: int
    """Committer time, seconds since the epoch."""
    subject: str
    message: str
    """Subject and body, clipped."""
    paths: list[str]
    """Workspace paths it added or modified, under the names they have at the newest commit
    read (a later rename is followed); empty for a merge and for a sweep of many files."""
    changed: int
    """How many files its diff touched (deletions and files outside the index included)."""


@dataclass(frozen=True, slots=True)
class DirectoryListing:
    """What a directory walk found in one directory, with the directory's stamp from just before
    it looked. Adding, removing or renaming an entry changes the directory's mtime and ctime, so
    while the stamp is the same, so are the entries (a file's content is another matter: each
    file is still stat'ed)."""

    path: str
    """Workspace-relative; "" for the root."""
    mtime_ns: int
    ctime_ns: int
    inode: int
    device: int
    settled: bool
    """Modified longer than a timestamp tick before it was listed: only then does an unchanged
    stamp prove unchanged entries (a change within the same tick may leave the stamp as it is)."""
    ignore_digest: str
    """The ignore rules read in it (its .gitignore; at the root also .git/info/exclude)."""
    files: tuple[str, ...]
    """Names of the files it listed, after the ignore rules."""
    subdirs: tuple[str, ...]
    """Names of the directories the walk entered from it."""
