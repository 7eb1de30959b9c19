// Generated from protocol/filescout.schema.json by json-schema-to-typescript; do not edit by hand.
// Regenerate with `npm run generate` in editor-clients/vscode.

/**
 * Argument of the `filescout.annotate` command.
 */
export interface AnnotateParams {
  /**
   * @minItems 1
   * @maxItems 200
   *
   * Items: Workspace-relative POSIX path; absolute paths and file:// URIs inside the workspace are accepted too.
   */
  paths: string[];
  /**
   * Seconds to wait for the annotations before answering with what is there.
   */
  timeout?: number;
}

/**
 * Token caps for model calls; when one is spent, model work stops and structural
 * annotations stand until the period rolls over.
 */
export interface BudgetSettings {
  dailyTokens?: number | null;
  monthlyTokens?: number | null;
}

/**
 * `files/didAccess`: a client (a chat panel, say) used these files.
 */
export interface DidAccessParams {
  /**
   * @minItems 1
   * @maxItems 1000
   *
   * Items: Workspace-relative POSIX path; absolute paths and file:// URIs inside the workspace are accepted too.
   */
  paths: string[];
}

/**
 * One indexed file.
 */
export interface FileItem {
  path: string;
  summary: string;
  tags: string[];
  language: string | null;
  kind: "binary" | "config" | "data" | "docs" | "document" | "generated" | "image" | "other" | "source" | "test";
  size: number;
  /**
   * Modification time, milliseconds since the epoch.
   */
  mtime: number;
  status: "annotated" | "pending" | "skipped" | "stale";
  /**
   * Id of the annotator that wrote the summary.
   */
  annotator: string | null;
}

/**
 * `files/findRelevant`: the files that matter for a natural-language question.
 */
export interface FindRelevantParams {
  query: string;
  limit?: number;
  scope?: Scope | null;
  options?: RelevanceOptions | null;
  /**
   * Also answer with the final ranking as a prompt-ready block (`prompt` of the result).
   */
  prompt?: PromptOptions | null;
  partialResultToken?: number | string | null;
  workDoneToken?: number | string | null;
}

/**
 * Final response of `files/findRelevant`. When streaming, `items` holds only what was
 * not already sent through `$/progress` (usually nothing).
 */
export interface FindRelevantResult {
  items: RelevantItem[];
  stages: ("final" | "judge" | "prefilter")[];
  /**
   * True when a stage failed and the answer comes from earlier stages.
   */
  degraded?: boolean;
  message?: string | null;
  /**
   * The final ranking as a prompt-ready block, when the request asked for one; it covers every item, streamed or not.
   */
  prompt?: string;
}

/**
 * Result of `files/getFiles` without a partial-result token.
 */
export interface GetFilesPage {
  items: FileItem[];
  /**
   * Pass as `cursor` to get the next page; null on the last page.
   */
  nextCursor: string | null;
  /**
   * The page as a prompt-ready block, when the request asked for one.
   */
  prompt?: string;
}

/**
 * `files/getFiles`: every indexed file with its annotation, optionally filtered. Filters
 * combine with AND.
 */
export interface GetFilesParams {
  /**
   * @maxItems 100
   *
   * Items: gitignore-style pattern relative to the workspace root (`*.py` matches at any depth, `src/** /*.ts` is anchored, a leading `!` excludes).
   */
  globs?: string[];
  /**
   * Path prefixes: a directory includes everything below it.
   *
   * Items: Workspace-relative POSIX path; absolute paths and file:// URIs inside the workspace are accepted too.
   */
  paths?: string[];
  /**
   * Keep files carrying these tags (see `tagsMatch`).
   */
  tags?: string[];
  /**
   * `any`: at least one of `tags`; `all`: every one.
   */
  tagsMatch?: "all" | "any";
  /**
   * Keep files whose path, symbols, summary, tags or content match these words (full-text search).
   */
  query?: string | null;
  /**
   * Keep files modified at or after this time, milliseconds since the epoch (at most 9223372036854, in 2262).
   */
  changedSince?: number | null;
  status?: ("annotated" | "pending" | "skipped" | "stale")[];
  /**
   * Keep files of these kinds. Default: every kind except `binary`.
   */
  kinds?: ("binary" | "config" | "data" | "docs" | "document" | "generated" | "image" | "other" | "source" | "test")[];
  languages?: string[];
  /**
   * `path`; `recent` (newest first); `frecency` (most and most recently used first); `rank` (best match for `query` first). Default: `rank` with a `query`, else `path`.
   */
  orderBy?: ("frecency" | "path" | "rank" | "recent") | null;
  limit?: number | null;
  /**
   * Opaque `nextCursor` of the previous page.
   */
  cursor?: string | null;
  /**
   * Items per `$/progress` batch when streaming.
   */
  batchSize?: number;
  /**
   * Also answer with the page as a prompt-ready block (`prompt` of the result). Not with `partialResultToken`.
   */
  prompt?: PromptOptions | null;
  partialResultToken?: number | string | null;
  workDoneToken?: number | string | null;
}

/**
 * `files/getOverview`: the workspace as an annotated tree within a token budget, the most
 * important branches open, optionally under a scope and focused on a question.
 */
export interface GetOverviewParams {
  /**
   * Most tokens the overview may take (counted cautiously, at 3.5 characters a token); the least important branches fold into `… N more files` lines.
   */
  tokens?: number;
  /**
   * A question to focus on: the branches holding the files that matter for it open first.
   */
  query?: string | null;
  /**
   * @maxItems 100
   *
   * Items: gitignore-style pattern relative to the workspace root (`*.py` matches at any depth, `src/** /*.ts` is anchored, a leading `!` excludes).
   */
  globs?: string[];
  /**
   * Path prefixes: only the tree below these directories.
   *
   * Items: Workspace-relative POSIX path; absolute paths and file:// URIs inside the workspace are accepted too.
   */
  paths?: string[];
}

/**
 * How indexing uses the machine.
 */
export interface IndexSettings {
  /**
   * Worker processes that read, hash and annotate files while indexing (each holds the parsers, about 50 MB; they stop when idle). Default: one per CPU core but one (the server's writer keeps it busy), at least 1, at most 4. Env: FILESCOUT_WORKERS.
   */
  workers?: number | null;
}

/**
 * `filescout/status` notification, sent when indexing changes phase and while it runs.
 */
export interface IndexStatus {
  phase: "annotating" | "failed" | "idle" | "scanning";
  files: number;
  annotated: number;
  pending: number;
  message?: string | null;
}

/**
 * An OpenAI-compatible endpoint (OpenAI, Ollama, LM Studio, llama.cpp server, vLLM) that
 * writes summaries and tags. Used only when `model` is set and privacy mode is off.
 */
export interface ModelSettings {
  /**
   * Model name, e.g. `gpt-4o-mini` or `qwen2.5-coder:7b`. Env: FILESCOUT_MODEL.
   */
  model?: string | null;
  /**
   * Endpoint, e.g. `http://127.0.0.1:11434/v1` for Ollama. Default: OpenAI. Env: OPENAI_BASE_URL.
   */
  baseUrl?: string | null;
  /**
   * Env: FILESCOUT_API_KEY or OPENAI_API_KEY; local servers need none.
   */
  apiKey?: string | null;
  /**
   * Label used in annotator ids; derived from the endpoint when unset.
   */
  provider?: string | null;
  /**
   * Seconds per request.
   */
  timeout?: number;
  /**
   * Requests in flight at once.
   */
  concurrency?: number;
  /**
   * Retries after 429, 5xx and timeouts.
   */
  maxRetries?: number;
  /**
   * Seconds model calls pause after three failed calls in a row; the pause doubles while the endpoint keeps failing.
   */
  failurePause?: number;
  /**
   * Most content tokens sent for one file; the outline covers the rest.
   */
  fileTokens?: number;
  /**
   * Most input tokens in one request; small files share requests up to this size.
   */
  requestTokens?: number;
  /**
   * How to ask for JSON. `auto` tries a JSON schema, then falls back.
   */
  structuredOutput?: "auto" | "json_object" | "json_schema" | "none";
  /**
   * Price per million input tokens, for cost estimates.
   */
  inputPrice?: number | null;
  /**
   * Price per million output tokens, for cost estimates.
   */
  outputPrice?: number | null;
  /**
   * Also have the model write the workspace overview's directory lines, from their children's summaries, once file annotation is idle (within the budget).
   */
  directorySummaries?: boolean;
  /**
   * The model can see: images (PNG, JPEG, GIF, WebP, BMP, TIFF, ICO) go to it as pictures, downscaled to at most 512 px a side at low detail, for their summary and tags (an SVG goes as text). Off: images keep their structural annotation. A workspace file can turn it off, not on. Env: FILESCOUT_MODEL_IMAGES.
   */
  images?: boolean;
  /**
   * Input tokens the endpoint counts for one image as sent (at most 512 × 512, detail low), for the budget: 85 for OpenAI's GPT-4o at low detail; other models count differently (gpt-4o-mini 2833, LLaVA-1.5 576).
   */
  imageTokens?: number;
}

/**
 * Model annotation: whether it runs, what it has cost, what finishing would cost.
 */
export interface ModelStatus {
  annotator: string;
  /**
   * unavailable: the endpoint keeps failing (retried later); refused: it rejected the API key or model; privacy: privacy mode is on; off: no model configured.
   */
  state: "active" | "budget_spent" | "idle" | "off" | "privacy" | "refused" | "unavailable";
  message?: string | null;
  tokensToday?: number;
  tokensThisMonth?: number;
  dailyBudget?: number | null;
  monthlyBudget?: number | null;
  calls?: number;
  failures?: number;
  queuedFiles?: number;
  /**
   * Tokens to annotate what is still waiting, from the average so far (or an estimate from file sizes before any call).
   */
  estimatedTokensToFinish?: number;
  /**
   * In the currency of the configured prices; null without prices.
   */
  estimatedCostToFinish?: number | null;
  /**
   * The overview's directories with a summary the model wrote for what they hold now, as of the last directory pass (written once file annotation is idle); null before the first pass.
   */
  directorySummaries?: number | null;
  /**
   * The overview's directories still waiting for the model's summary; null before the first pass.
   */
  directoriesWaiting?: number | null;
}

/**
 * One line of the overview's tree, in the block's order.
 */
export interface OverviewEntry {
  /**
   * Workspace-relative path; `.` for the workspace root.
   */
  path: string;
  type: "directory" | "file";
  /**
   * 0 for the root; a chain of single directories is one line.
   */
  depth: number;
  /**
   * A file's summary; for a directory, what it is for (from its README, its package file or its files' tags), its main languages and how many files it holds.
   */
  summary: string;
  /**
   * Files at or below this path in the scope.
   */
  files: number;
  /**
   * Files below this directory the overview does not name (0 for a file).
   */
  folded: number;
  /**
   * How much it matters without a question, from the import graph, the history, the user's use and its kind: comparable within one overview.
   */
  importance: number;
  /**
   * A file's language; a directory's main languages.
   */
  languages: string[];
}

/**
 * Result of `files/getOverview`.
 */
export interface OverviewResult {
  /**
   * The overview as a prompt-ready block, within `tokens`.
   */
  prompt: string;
  /**
   * The lines of the block's tree, as records (folded lines are counted in `folded`).
   */
  entries: OverviewEntry[];
  /**
   * Files in the scope.
   */
  files: number;
  /**
   * Files the overview names.
   */
  shown: number;
  /**
   * The block's size as `tokens` counts it (3.5 characters a token).
   */
  estimatedTokens: number;
}

/**
 * Also render the answer as one block of text a chat panel can put straight into a
 * prompt: paths, summaries and reasons, best first, within a token budget.
 */
export interface PromptOptions {
  /**
   * Most tokens the block may take (counted cautiously, at 3.5 characters a token); a closing line names what did not fit.
   */
  tokens?: number;
}

/**
 * Result of the `filescout.reindex` command, once the rescan has finished.
 */
export interface ReindexResult {
  added: number;
  changed: number;
  removed: number;
  /**
   * Removed files whose content reappeared elsewhere.
   */
  renamed: number;
  unchanged: number;
  files: number;
  elapsedMs: number;
}

/**
 * How much a `files/findRelevant` request may use the model.
 */
export interface RelevanceOptions {
  /**
   * false: the model-free stage only; default: use the configured model, if any.
   */
  useModel?: boolean | null;
  /**
   * Most model calls this request may make (judging chunks, the final ranking, tag selection).
   */
  maxModelCalls?: number;
  /**
   * Most model tokens this request may spend; stages that would exceed it are skipped.
   */
  maxTokens?: number | null;
  /**
   * How many of the model-free stage's best files the model judges.
   */
  candidates?: number;
  /**
   * Let the model pick relevant tags from the workspace's vocabulary and add files carrying them to the candidates.
   */
  selectTags?: boolean;
}

/**
 * A file judged relevant, with the stage that produced the judgement.
 */
export interface RelevantItem {
  path: string;
  /**
   * Higher is more relevant; comparable within a stage.
   */
  score: number;
  stage: "final" | "judge" | "prefilter";
  reason: string;
  summary: string;
  tags: string[];
  language: string | null;
  kind: "binary" | "config" | "data" | "docs" | "document" | "generated" | "image" | "other" | "source" | "test";
}

/**
 * Restricts a request to part of the workspace.
 */
export interface Scope {
  /**
   * @maxItems 100
   *
   * Items: gitignore-style pattern relative to the workspace root (`*.py` matches at any depth, `src/** /*.ts` is anchored, a leading `!` excludes).
   */
  globs?: string[];
  /**
   * Path prefixes: a directory includes everything below it.
   *
   * Items: Workspace-relative POSIX path; absolute paths and file:// URIs inside the workspace are accepted too.
   */
  paths?: string[];
}

/**
 * Server configuration: `initializationOptions`, `workspace/didChangeConfiguration`
 * (section `filescout`), a `filescout.toml` at the workspace root, then the environment.
 */
export interface Settings {
  /**
   * Where the index lives. Default: a per-workspace folder under $XDG_CACHE_HOME/filescout (or $FILESCOUT_CACHE_DIR).
   */
  dbPath?: string | null;
  /**
   * Files larger than this many bytes are recorded but not annotated.
   */
  maxFileSize?: number;
  /**
   * Extra gitignore-style patterns to leave out of the index.
   *
   * @maxItems 1000
   *
   * Items: gitignore-style pattern relative to the workspace root (`*.py` matches at any depth, `src/** /*.ts` is anchored, a leading `!` excludes).
   */
  exclude?: string[];
  /**
   * Patterns to index even when .gitignore, the built-in defaults or `exclude` leave them out.
   *
   * @maxItems 1000
   *
   * Items: gitignore-style pattern relative to the workspace root (`*.py` matches at any depth, `src/** /*.ts` is anchored, a leading `!` excludes).
   */
  include?: string[];
  /**
   * Seconds between background checks for changes the editor did not report (0: never). Default: 60, or 600 when the editor watches files.
   */
  reconcileInterval?: number | null;
  logLevel?: "debug" | "error" | "info" | "warning";
  model?: ModelSettings;
  budget?: BudgetSettings;
  /**
   * Never call a model, whatever else is configured. Env: FILESCOUT_PRIVACY=1.
   */
  privacyMode?: boolean;
  sharedCache?: SharedCacheSettings;
  index?: IndexSettings;
}

/**
 * A PostgreSQL database where a team shares what the model wrote, keyed by content hash
 * and annotator: summaries, tags and symbols, never file contents or paths.
 */
export interface SharedCacheSettings {
  /**
   * A libpq connection URL, e.g. `postgresql://me@db.internal/filescout?sslmode=verify-full`; TLS and authentication as libpq's URL and environment give them (prefer PGPASSWORD or ~/.pgpass to a password in the URL). Env: FILESCOUT_SHARED_CACHE.
   */
  url?: string | null;
  /**
   * `read_write`: look up, and share what this machine's model writes; `read_only`: look up only (laptops, with CI as the writer); `off`. Env: FILESCOUT_SHARED_CACHE_MODE.
   */
  mode?: "off" | "read_only" | "read_write";
  /**
   * Seconds for connecting and for each statement.
   */
  timeout?: number;
}

/**
 * The team's shared annotation cache, as this process sees it.
 */
export interface SharedCacheStatus {
  /**
   * unavailable: unreachable or failing (retried with backoff); refused: authentication or privileges; incompatible: tables of a newer filescout.
   */
  state: "connecting" | "incompatible" | "ready" | "refused" | "unavailable";
  mode: "off" | "read_only" | "read_write";
  /**
   * Host, port and database; never the password.
   */
  location: string;
  /**
   * Files whose annotation came from the cache.
   */
  hits?: number;
  /**
   * Files looked up and not found.
   */
  misses?: number;
  /**
   * Annotations this process shared.
   */
  stored?: number;
  /**
   * Entries refused as malformed or oversized.
   */
  rejected?: number;
  /**
   * Model tokens the hits would have cost, as their writers paid.
   */
  tokensSaved?: number;
  lastError?: string | null;
}

/**
 * Result of the `filescout.status` command.
 */
export interface StatusResult {
  protocolVersion: number;
  serverVersion: string;
  root: string;
  dbPath: string;
  phase: "annotating" | "failed" | "idle" | "scanning";
  files: number;
  byStatus: {
    [k: string]: number;
  };
  byKind: {
    [k: string]: number;
  };
  annotator: string;
  /**
   * When the last full scan finished, ISO 8601 UTC.
   */
  lastScan: string | null;
  /**
   * reader: another filescout process indexes this workspace and this one serves reads from the same index.
   */
  role?: "reader" | "writer";
  writerPid?: number | null;
  /**
   * Files waiting in the annotation queue.
   */
  queued?: number;
  model?: ModelStatus | null;
  sharedCache?: SharedCacheStatus | null;
  lastError?: string | null;
  /**
   * Files the last full scan left out because their names are not valid UTF-8 (JSON cannot carry them); the server's log names them with `\xNN` escapes.
   */
  skippedNames?: number;
  /**
   * How questions are ranked: the default fusion weights (fitting them on the repository's history is off unless FILESCOUT_RELEVANCE_WITH=fit), or the weights fitted on it and how much better they ranked its newest commits, or the defaults and why; null while a fit is awaited.
   */
  ranking?: string | null;
}
