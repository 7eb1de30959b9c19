"""Structs for every filescout request, result, notification and setting.

Field names are snake_case here and camelCase on the wire (`rename="camel"`). Params forbid
unknown fields so a misspelt filter is reported instead of silently ignored.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Annotated, Final, Literal, Union

import msgspec
from msgspec import Meta, Struct

from filescout_protocol.names import OVERVIEW_TOKENS, Command, Method

PROTOCOL_VERSION: Final = 1

MAX_TIME_MS: Final = (2**63 - 1) // 1_000_000
"""The latest time a filter may name, in milliseconds since the epoch (in 2262): the index keeps
modification times as signed 64-bit nanoseconds."""

MAX_GLOBS: Final = 100
"""Most globs one request may name: each is matched against every path the request looks at."""
MAX_PATTERNS: Final = 1000
"""Most patterns `exclude` and `include` may hold each: each is matched against every path a scan
lists."""
MAX_FILE_SIZE_LIMIT: Final = 16 * 1024 * 1024
"""The largest `maxFileSize`: a file up to that size is read whole, in memory, to be hashed and
annotated (16 MiB, as large as a message may be)."""

ProgressToken = Union[int, str]

FileStatus = Literal["pending", "annotated", "stale", "skipped"]
"""pending: no summary yet; annotated: summary from the current annotator; stale: summary from
another annotator while the current one is queued; skipped: recorded but never annotated from
content (binary, oversized, generated, sensitive)."""

FileKind = Literal[
    "source", "test", "docs", "config", "data", "document", "image", "generated", "binary", "other"
]

IndexPhase = Literal["idle", "scanning", "annotating", "failed"]

RelevanceStage = Literal["prefilter", "judge", "final"]

RelativePath = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=4096,
        description="Workspace-relative POSIX path; absolute paths and file:// URIs inside "
        "the workspace are accepted too.",
    ),
]
Glob = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=1024,
        description="gitignore-style pattern relative to the workspace root "
        "(`*.py` matches at any depth, `src/**/*.ts` is anchored, a leading `!` excludes).",
    ),
]
Globs = Annotated[list[Glob], Meta(max_length=MAX_GLOBS)]
Patterns = Annotated[list[Glob], Meta(max_length=MAX_PATTERNS)]


METHODS: Final = (
    Method.GET_FILES,
    Method.FIND_RELEVANT,
    Method.DID_ACCESS,
    Method.STATUS,
    Method.GET_OVERVIEW,
)
COMMANDS: Final = (Command.REINDEX, Command.STATUS, Command.ANNOTATE)


class ErrorCode(IntEnum):
    """JSON-RPC error codes filescout answers with."""

    INVALID_PARAMS = -32602
    """A parameter is missing, of the wrong type, out of range, or names a path outside the
    workspace; the message names the field."""
    SERVER_NOT_INITIALIZED = -32002
    """A filescout request arrived before `initialize`."""
    REQUEST_CANCELLED = -32800
    """The client cancelled the request (`$/cancelRequest`)."""
    WORKSPACE_UNAVAILABLE = -32010
    """The server has no workspace root, or its index could not be opened."""
    READ_ONLY = -32011
    """Another filescout process writes this workspace's index; this one serves reads and
    takes over when that process exits."""


class _Params(Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    pass


class _Payload(Struct, rename="camel", kw_only=True):
    pass


class ModelSettings(_Payload, forbid_unknown_fields=True):
    """An OpenAI-compatible endpoint (OpenAI, Ollama, LM Studio, llama.cpp server, vLLM) that
    writes summaries and tags. Used only when `model` is set and privacy mode is off."""

    model: Annotated[
        Union[str, None],
        Meta(description="Model name, e.g. `gpt-4o-mini` or `qwen2.5-coder:7b`. Env: FILESCOUT_MODEL."),
    ] = None
    base_url: Annotated[
        Union[str, None],
        Meta(
            description="Endpoint, e.g. `http://127.0.0.1:11434/v1` for Ollama. Default: "
            "OpenAI. Env: OPENAI_BASE_URL."
        ),
    ] = None
    api_key: Annotated[
        Union[str, None],
        Meta(description="Env: FILESCOUT_API_KEY or OPENAI_API_KEY; local servers need none."),
    ] = None
    provider: Annotated[
        Union[str, None],
        Meta(description="Label used in annotator ids; derived from the endpoint when unset."),
    ] = None
    timeout: Annotated[float, Meta(gt=0, le=600, description="Seconds per request.")] = 60.0
    concurrency: Annotated[int, Meta(ge=1, le=32, description="Requests in flight at once.")] = 2
    max_retries: Annotated[int, Meta(ge=0, le=10, description="Retries after 429, 5xx and timeouts.")] = 4
    failure_pause: Annotated[
        float,
        Meta(
            gt=0,
            le=3600,
            description="Seconds model calls pause after three failed calls in "
            "a row; the pause doubles while the endpoint keeps failing.",
        ),
    ] = 30.0
    file_tokens: Annotated[
        int,
        Meta(
            ge=200,
            le=32_000,
            description="Most content tokens sent for one file; the outline covers the rest.",
        ),
    ] = 1200
    request_tokens: Annotated[
        int,
        Meta(
            ge=500,
            le=200_000,
            description="Most input tokens in one request; small files share requests up to this size.",
        ),
    ] = 6000
    structured_output: Annotated[
        Literal["auto", "json_schema", "json_object", "none"],
        Meta(description="How to ask for JSON. `auto` tries a JSON schema, then falls back."),
    ] = "auto"
    input_price: Annotated[
        Union[Annotated[float, Meta(ge=0)], None],
        Meta(description="Price per million input tokens, for cost estimates."),
    ] = None
    output_price: Annotated[
        Union[Annotated[float, Meta(ge=0)], None],
        Meta(description="Price per million output tokens, for cost estimates."),
    ] = None
    directory_summaries: Annotated[
        bool,
        Meta(
            description="Also have the model write the workspace overview's directory lines, from "
            "their children's summaries, once file annotation is idle (within the budget)."
        ),
    ] = False
    images: Annotated[
        bool,
        Meta(
            description="The model can see: images (PNG, JPEG, GIF, WebP, BMP, TIFF, ICO) go to it as "
            "pictures, downscaled to at most 512 px a side at low detail, for their summary and tags "
            "(an SVG goes as text). Off: images keep their structural annotation. A workspace file "
            "can turn it off, not on. Env: FILESCOUT_MODEL_IMAGES."
        ),
    ] = False
    image_tokens: Annotated[
        int,
        Meta(
            ge=1,
            le=100_000,
            description="Input tokens the endpoint counts for one image as sent (at most 512 × 512, "
            "detail low), for the budget: 85 for OpenAI's GPT-4o at low detail; other models count "
            "differently (gpt-4o-mini 2833, LLaVA-1.5 576).",
        ),
    ] = 85


class BudgetSettings(_Payload, forbid_unknown_fields=True):
    """Token caps for model calls; when one is spent, model work stops and structural
    annotations stand until the period rolls over."""

    daily_tokens: Union[Annotated[int, Meta(ge=0)], None] = None
    monthly_tokens: Union[Annotated[int, Meta(ge=0)], None] = None


SharedCacheMode = Literal["read_write", "read_only", "off"]


class SharedCacheSettings(_Payload, forbid_unknown_fields=True):
    """A PostgreSQL database where a team shares what the model wrote, keyed by content hash
    and annotator: summaries, tags and symbols, never file contents or paths."""

    url: Annotated[
        Union[str, None],
        Meta(
            description="A libpq connection URL, e.g. `postgresql://me@db.internal/filescout?"
            "sslmode=verify-full`; TLS and authentication as libpq's URL and environment give "
            "them (prefer PGPASSWORD or ~/.pgpass to a password in the URL). "
            "Env: FILESCOUT_SHARED_CACHE."
        ),
    ] = None
    mode: Annotated[
        SharedCacheMode,
        Meta(
            description="`read_write`: look up, and share what this machine's model writes; "
            "`read_only`: look up only (laptops, with CI as the writer); `off`. "
            "Env: FILESCOUT_SHARED_CACHE_MODE."
        ),
    ] = "read_write"
    timeout: Annotated[
        float,
        Meta(gt=0, le=60, description="Seconds for connecting and for each statement."),
    ] = 3.0


class IndexSettings(_Payload, forbid_unknown_fields=True):
    """How indexing uses the machine."""

    workers: Annotated[
        Union[Annotated[int, Meta(ge=1, le=64)], None],
        Meta(
            description="Worker processes that read, hash and annotate files while indexing "
            "(each holds the parsers, about 50 MB; they stop when idle). Default: one per "
            "CPU core but one (the server's writer keeps it busy), at least 1, at most 4. "
            "Env: FILESCOUT_WORKERS."
        ),
    ] = None


class Settings(_Payload, forbid_unknown_fields=True):
    """Server configuration: `initializationOptions`, `workspace/didChangeConfiguration`
    (section `filescout`), a `filescout.toml` at the workspace root, then the environment."""

    db_path: Annotated[
        Union[str, None],
        Meta(
            description="Where the index lives. Default: a per-workspace folder under "
            "$XDG_CACHE_HOME/filescout (or $FILESCOUT_CACHE_DIR)."
        ),
    ] = None
    max_file_size: Annotated[
        int,
        Meta(
            ge=1,
            le=MAX_FILE_SIZE_LIMIT,
            description="Files larger than this many bytes are recorded but not annotated.",
        ),
    ] = 1_048_576
    exclude: Annotated[
        Patterns,
        Meta(description="Extra gitignore-style patterns to leave out of the index."),
    ] = []
    include: Annotated[
        Patterns,
        Meta(
            description="Patterns to index even when .gitignore, the built-in defaults or "
            "`exclude` leave them out."
        ),
    ] = []
    reconcile_interval: Annotated[
        Union[Annotated[int, Meta(ge=0)], None],
        Meta(
            description="Seconds between background checks for changes the editor did not "
            "report (0: never). Default: 60, or 600 when the editor watches files."
        ),
    ] = None
    log_level: Literal["error", "warning", "info", "debug"] = "info"
    model: ModelSettings = msgspec.field(default_factory=ModelSettings)
    budget: BudgetSettings = msgspec.field(default_factory=BudgetSettings)
    privacy_mode: Annotated[
        bool,
        Meta(description="Never call a model, whatever else is configured. Env: FILESCOUT_PRIVACY=1."),
    ] = False
    shared_cache: SharedCacheSettings = msgspec.field(default_factory=SharedCacheSettings)
    index: IndexSettings = msgspec.field(default_factory=IndexSettings)


class Scope(_Params):
    """Restricts a request to part of the workspace."""

    globs: Globs = []
    paths: Annotated[
        list[RelativePath],
        Meta(description="Path prefixes: a directory includes everything below it."),
    ] = []


FileOrder = Literal["path", "recent", "frecency", "rank"]


class PromptOptions(_Params):
    """Also render the answer as one block of text a chat panel can put straight into a
    prompt: paths, summaries and reasons, best first, within a token budget."""

    tokens: Annotated[
        int,
        Meta(
            ge=200,
            le=200_000,
            description="Most tokens the block may take (counted cautiously, at 3.5 characters a token); "
            "a closing line names what did not fit.",
        ),
    ] = 4000


class GetFilesParams(_Params):
    """`files/getFiles`: every indexed file with its annotation, optionally filtered. Filters
    combine with AND."""

    globs: Globs = []
    paths: Annotated[
        list[RelativePath],
        Meta(description="Path prefixes: a directory includes everything below it."),
    ] = []
    tags: Annotated[
        list[Annotated[str, Meta(min_length=1, max_length=100)]],
        Meta(description="Keep files carrying these tags (see `tagsMatch`)."),
    ] = []
    tags_match: Annotated[
        Literal["any", "all"],
        Meta(description="`any`: at least one of `tags`; `all`: every one."),
    ] = "any"
    query: Annotated[
        Union[Annotated[str, Meta(min_length=1, max_length=2000)], None],
        Meta(
            description="Keep files whose path, symbols, summary, tags or content match these "
            "words (full-text search)."
        ),
    ] = None
    changed_since: Annotated[
        Union[Annotated[int, Meta(ge=0, le=MAX_TIME_MS)], None],
        Meta(
            description="Keep files modified at or after this time, milliseconds since the epoch "
            "(at most 9223372036854, in 2262)."
        ),
    ] = None
    status: list[FileStatus] = []
    kinds: Annotated[
        list[FileKind],
        Meta(description="Keep files of these kinds. Default: every kind except `binary`."),
    ] = []
    languages: list[Annotated[str, Meta(min_length=1, max_length=50)]] = []
    order_by: Annotated[
        Union[FileOrder, None],
        Meta(
            description="`path`; `recent` (newest first); `frecency` (most and most recently "
            "used first); `rank` (best match for `query` first). Default: `rank` with a "
            "`query`, else `path`."
        ),
    ] = None
    limit: Union[
        Annotated[int, Meta(ge=1, le=10_000, description="Page size when not streaming.")],
        None,
    ] = None
    cursor: Annotated[
        Union[str, None],
        Meta(description="Opaque `nextCursor` of the previous page."),
    ] = None
    batch_size: Annotated[
        int,
        Meta(ge=1, le=10_000, description="Items per `$/progress` batch when streaming."),
    ] = 500
    prompt: Annotated[
        Union[PromptOptions, None],
        Meta(
            description="Also answer with the page as a prompt-ready block (`prompt` of the "
            "result). Not with `partialResultToken`."
        ),
    ] = None
    partial_result_token: Union[ProgressToken, None] = None
    work_done_token: Union[ProgressToken, None] = None


class FileItem(_Payload):
    """One indexed file."""

    path: str
    summary: str
    tags: list[str]
    language: Union[str, None]
    kind: FileKind
    size: int
    mtime: Annotated[int, Meta(description="Modification time, milliseconds since the epoch.")]
    status: FileStatus
    annotator: Annotated[
        Union[str, None],
        Meta(description="Id of the annotator that wrote the summary."),
    ]


class GetFilesPage(_Payload):
    """Result of `files/getFiles` without a partial-result token."""

    items: list[FileItem]
    next_cursor: Annotated[
        Union[str, None],
        Meta(description="Pass as `cursor` to get the next page; null on the last page."),
    ]
    prompt: Annotated[
        Union[str, msgspec.UnsetType],
        Meta(description="The page as a prompt-ready block, when the request asked for one."),
    ] = msgspec.UNSET


class RelevanceOptions(_Params):
    """How much a `files/findRelevant` request may use the model."""

    use_model: Annotated[
        Union[bool, None],
        Meta(description="false: the model-free stage only; default: use the configured model, if any."),
    ] = None
    max_model_calls: Annotated[
        int,
        Meta(
            ge=1,
            le=50,
            description="Most model calls this request may make (judging chunks, "
            "the final ranking, tag selection).",
        ),
    ] = 8
    max_tokens: Annotated[
        Union[Annotated[int, Meta(ge=100)], None],
        Meta(
            description="Most model tokens this request may spend; stages that would exceed it are skipped."
        ),
    ] = None
    candidates: Annotated[
        int,
        Meta(ge=1, le=300, description="How many of the model-free stage's best files the model judges."),
    ] = 40
    select_tags: Annotated[
        bool,
        Meta(
            description="Let the model pick relevant tags from the workspace's vocabulary and "
            "add files carrying them to the candidates."
        ),
    ] = True


class FindRelevantParams(_Params):
    """`files/findRelevant`: the files that matter for a natural-language question."""

    query: Annotated[str, Meta(min_length=1, max_length=20_000)]
    limit: Annotated[int, Meta(ge=1, le=500)] = 20
    scope: Union[Scope, None] = None
    options: Union[RelevanceOptions, None] = None
    prompt: Annotated[
        Union[PromptOptions, None],
        Meta(
            description="Also answer with the final ranking as a prompt-ready block (`prompt` of the result)."
        ),
    ] = None
    partial_result_token: Union[ProgressToken, None] = None
    work_done_token: Union[ProgressToken, None] = None


class RelevantItem(_Payload):
    """A file judged relevant, with the stage that produced the judgement."""

    path: str
    score: Annotated[float, Meta(description="Higher is more relevant; comparable within a stage.")]
    stage: RelevanceStage
    reason: str
    summary: str
    tags: list[str]
    language: Union[str, None]
    kind: FileKind


class FindRelevantResult(_Payload):
    """Final response of `files/findRelevant`. When streaming, `items` holds only what was
    not already sent through `$/progress` (usually nothing)."""

    items: list[RelevantItem]
    stages: list[RelevanceStage]
    degraded: Annotated[
        bool,
        Meta(description="True when a stage failed and the answer comes from earlier stages."),
    ] = False
    message: Union[str, None] = None
    prompt: Annotated[
        Union[str, msgspec.UnsetType],
        Meta(
            description="The final ranking as a prompt-ready block, when the request asked for "
            "one; it covers every item, streamed or not."
        ),
    ] = msgspec.UNSET


OverviewEntryType = Literal["directory", "file"]


class GetOverviewParams(_Params):
    """`files/getOverview`: the workspace as an annotated tree within a token budget, the most
    important branches open, optionally under a scope and focused on a question."""

    tokens: Annotated[
        int,
        Meta(
            ge=200,
            le=200_000,
            description="Most tokens the overview may take (counted cautiously, at 3.5 characters a "
            "token); the least important branches fold into `… N more files` lines.",
        ),
    ] = OVERVIEW_TOKENS
    query: Annotated[
        Union[Annotated[str, Meta(min_length=1, max_length=20_000)], None],
        Meta(
            description="A question to focus on: the branches holding the files that matter for it "
            "open first."
        ),
    ] = None
    globs: Globs = []
    paths: Annotated[
        list[RelativePath],
        Meta(description="Path prefixes: only the tree below these directories."),
    ] = []


class OverviewEntry(_Payload):
    """One line of the overview's tree, in the block's order."""

    path: Annotated[str, Meta(description="Workspace-relative path; `.` for the workspace root.")]
    type: OverviewEntryType
    depth: Annotated[
        int, Meta(ge=0, description="0 for the root; a chain of single directories is one line.")
    ]
    summary: Annotated[
        str,
        Meta(
            description="A file's summary; for a directory, what it is for (from its README, its "
            "package file or its files' tags), its main languages and how many files it holds."
        ),
    ]
    files: Annotated[int, Meta(ge=0, description="Files at or below this path in the scope.")]
    folded: Annotated[
        int,
        Meta(ge=0, description="Files below this directory the overview does not name (0 for a file)."),
    ]
    importance: Annotated[
        float,
        Meta(
            description="How much it matters without a question, from the import graph, the history, "
            "the user's use and its kind: comparable within one overview."
        ),
    ]
    languages: Annotated[list[str], Meta(description="A file's language; a directory's main languages.")]


class OverviewResult(_Payload):
    """Result of `files/getOverview`."""

    prompt: Annotated[
        str,
        Meta(description="The overview as a prompt-ready block, within `tokens`."),
    ]
    entries: Annotated[
        list[OverviewEntry],
        Meta(description="The lines of the block's tree, as records (folded lines are counted in `folded`)."),
    ]
    files: Annotated[int, Meta(ge=0, description="Files in the scope.")]
    shown: Annotated[int, Meta(ge=0, description="Files the overview names.")]
    estimated_tokens: Annotated[
        int, Meta(ge=0, description="The block's size as `tokens` counts it (3.5 characters a token).")
    ]


class DidAccessParams(_Params):
    """`files/didAccess`: a client (a chat panel, say) used these files."""

    paths: Annotated[list[RelativePath], Meta(min_length=1, max_length=1000)]


class IndexStatus(_Payload):
    """`filescout/status` notification, sent when indexing changes phase and while it runs."""

    phase: IndexPhase
    files: int
    annotated: int
    pending: int
    message: Union[str, None] = None


class ModelStatus(_Payload):
    """Model annotation: whether it runs, what it has cost, what finishing would cost."""

    annotator: str
    state: Annotated[
        Literal["active", "idle", "budget_spent", "unavailable", "refused", "privacy", "off"],
        Meta(
            description="unavailable: the endpoint keeps failing (retried later); refused: it "
            "rejected the API key or model; privacy: privacy mode is on; off: no model configured."
        ),
    ]
    message: Union[str, None] = None
    tokens_today: int = 0
    tokens_this_month: int = 0
    daily_budget: Union[int, None] = None
    monthly_budget: Union[int, None] = None
    calls: int = 0
    failures: int = 0
    queued_files: int = 0
    estimated_tokens_to_finish: Annotated[
        int,
        Meta(
            description="Tokens to annotate what is still waiting, from the average so far (or "
            "an estimate from file sizes before any call)."
        ),
    ] = 0
    estimated_cost_to_finish: Annotated[
        Union[float, None],
        Meta(description="In the currency of the configured prices; null without prices."),
    ] = None
    directory_summaries: Annotated[
        Union[int, None],
        Meta(
            description="The overview's directories with a summary the model wrote for what they "
            "hold now, as of the last directory pass (written once file annotation is idle); null "
            "before the first pass."
        ),
    ] = None
    directories_waiting: Annotated[
        Union[int, None],
        Meta(
            description="The overview's directories still waiting for the model's summary; null "
            "before the first pass."
        ),
    ] = None


class SharedCacheStatus(_Payload):
    """The team's shared annotation cache, as this process sees it."""

    state: Annotated[
        Literal["ready", "connecting", "unavailable", "refused", "incompatible"],
        Meta(
            description="unavailable: unreachable or failing (retried with backoff); refused: "
            "authentication or privileges; incompatible: tables of a newer filescout."
        ),
    ]
    mode: SharedCacheMode
    location: Annotated[str, Meta(description="Host, port and database; never the password.")]
    hits: Annotated[int, Meta(description="Files whose annotation came from the cache.")] = 0
    misses: Annotated[int, Meta(description="Files looked up and not found.")] = 0
    stored: Annotated[int, Meta(description="Annotations this process shared.")] = 0
    rejected: Annotated[int, Meta(description="Entries refused as malformed or oversized.")] = 0
    tokens_saved: Annotated[
        int, Meta(description="Model tokens the hits would have cost, as their writers paid.")
    ] = 0
    last_error: Union[str, None] = None


class StatusResult(_Payload):
    """Result of the `filescout.status` command."""

    protocol_version: int
    server_version: str
    root: str
    db_path: str
    phase: IndexPhase
    files: int
    by_status: dict[str, int]
    by_kind: dict[str, int]
    annotator: str
    last_scan: Annotated[
        Union[str, None],
        Meta(description="When the last full scan finished, ISO 8601 UTC."),
    ]
    role: Annotated[
        Literal["writer", "reader"],
        Meta(
            description="reader: another filescout process indexes this workspace and this "
            "one serves reads from the same index."
        ),
    ] = "writer"
    writer_pid: Union[int, None] = None
    queued: Annotated[int, Meta(description="Files waiting in the annotation queue.")] = 0
    model: Union[ModelStatus, None] = None
    shared_cache: Union[SharedCacheStatus, None] = None
    last_error: Union[str, None] = None
    skipped_names: Annotated[
        int,
        Meta(
            description="Files the last full scan left out because their names are not valid UTF-8 "
            "(JSON cannot carry them); the server's log names them with `\\xNN` escapes."
        ),
    ] = 0
    ranking: Annotated[
        Union[str, None],
        Meta(
            description="How questions are ranked: the default fusion weights (fitting them on "
            "the repository's history is off unless FILESCOUT_RELEVANCE_WITH=fit), or the weights "
            "fitted on it and how much better they ranked its newest commits, or the defaults and "
            "why; null while a fit is awaited."
        ),
    ] = None


class AnnotateParams(_Params):
    """Argument of the `filescout.annotate` command."""

    paths: Annotated[list[RelativePath], Meta(min_length=1, max_length=200)]
    timeout: Annotated[
        float,
        Meta(
            gt=0,
            le=600,
            description="Seconds to wait for the annotations before answering with what is there.",
        ),
    ] = 30.0


class ReindexResult(_Payload):
    """Result of the `filescout.reindex` command, once the rescan has finished."""

    added: int
    changed: int
    removed: int
    renamed: Annotated[int, Meta(description="Removed files whose content reappeared elsewhere.")]
    unchanged: int
    files: int
    elapsed_ms: int
