// Finding the files that matter for a chat, independent of VS Code: the language model tool
// (#filescout), the @filescout chat participant and the extension API all go through
// `findRelevantFiles`, so the Node tests drive the very path chats use against the real server.

import { CancellationToken } from "vscode-jsonrpc";
import { FilescoutClient, RelevanceView } from "./client";
import { FindRelevantParams, RelevanceStage, RelevantItem } from "./protocol";

/** The tool's name in package.json's `languageModelTools` and in `lm.registerTool`. */
export const TOOL_NAME = "filescout_findRelevantFiles";

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;
export const MAX_QUERY_LENGTH = 20000;
/** The server's bounds for `prompt.tokens` (PromptOptions). */
export const DEFAULT_PROMPT_TOKENS = 4000;
export const MIN_PROMPT_TOKENS = 200;
export const MAX_PROMPT_TOKENS = 200000;

const REQUEST_CANCELLED = -32800; // LSP's RequestCancelled
const QUERY_FIELDS = ["query", "limit", "paths", "globs"];
const SHOWN_QUERY_LENGTH = 60;

/** What a chat asks: the question, and optionally how many files and where to look. */
export interface RelevantFilesQuery {
  /** The task or question, in the user's words. */
  query: string;
  /** Most files to return, 1–100 (default 10). */
  limit?: number;
  /** Only files under these workspace-relative directories or paths. */
  paths?: string[];
  /** Only files matching these gitignore-style patterns (`*.py`, `!tests/`). */
  globs?: string[];
}

export interface FindRelevantFilesOptions {
  /** Most tokens the prompt-ready block may take (200–200000, default 4000). */
  promptTokens?: number;
  /** false: the model-free ranking only; default: the configured model, if any. */
  useModel?: boolean;
  /** Called as the answer improves, with the streamed batch that improved it. */
  onUpdate?: (view: RelevanceView, batch?: RelevantItem[]) => void;
  /** Cancelling sends `$/cancelRequest`; the call then rejects with `CancelledError`. */
  cancel?: CancellationToken;
}

/** The answer: the ranking, best first, and the same ranking as one block for a prompt. */
export interface RelevantFiles {
  items: RelevantItem[];
  stages: RelevanceStage[];
  degraded: boolean;
  message: string | null;
  /** `<filescout-files …>…</filescout-files>`, within the requested token budget. */
  prompt: string | null;
}

/** The input does not say what to look for; the message names the field. */
export class QueryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "QueryError";
  }
}

/** The request was cancelled. Named like VS Code's CancellationError, which callers check by name. */
export class CancelledError extends Error {
  constructor() {
    super("Canceled");
    this.name = "Canceled";
  }
}

/** No filescout server runs for the workspace. */
export class NoServerError extends Error {
  constructor(detail = "filescout is not running for this workspace") {
    super(
      `${detail}. Point the filescout.serverCommand setting at an installed filescout ` +
        "(e.g. [\"/path/to/venv/bin/filescout\", \"serve\"]); the server starts as soon as it changes.",
    );
    this.name = "NoServerError";
  }
}

/** Whether `value` is a plain object (the shape of a tool's input). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `value` as a list of non-empty, trimmed strings, or a QueryError naming `field`. */
export function stringList(value: unknown, field: string): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string" && item.trim() !== "")) {
    throw new QueryError(`${field} must be a list of non-empty strings`);
  }
  return value.map((item: string) => item.trim());
}

function parseLimit(value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > MAX_LIMIT) {
    throw new QueryError(`limit must be a whole number from 1 to ${MAX_LIMIT}`);
  }
  return value;
}

/** `input` checked field by field (a model wrote it, or another extension): unknown fields are
 * refused, as the server does, so a misspelt filter never silently searches everything. */
export function parseQuery(input: unknown): RelevantFilesQuery {
  if (!isRecord(input)) {
    throw new QueryError("the input must be an object with a `query` string");
  }
  const unknown = Object.keys(input).filter((key) => !QUERY_FIELDS.includes(key));
  if (unknown.length > 0) {
    throw new QueryError(`unknown field ${unknown.join(", ")}; the fields are ${QUERY_FIELDS.join(", ")}`);
  }
  const { query, limit, paths, globs } = input;
  if (typeof query !== "string" || query.trim() === "") {
    throw new QueryError("query must be a non-empty string: the task or question, in the user's words");
  }
  if (query.length > MAX_QUERY_LENGTH) {
    throw new QueryError(`query must be at most ${MAX_QUERY_LENGTH} characters`);
  }
  // null counts as left out: models often write optional fields that way.
  return {
    query: query.trim(),
    limit: limit == null ? undefined : parseLimit(limit),
    paths: paths == null ? undefined : stringList(paths, "paths"),
    globs: globs == null ? undefined : stringList(globs, "globs"),
  };
}

/** A token budget the server accepts: the default when none is given, else clamped to its bounds. */
export function promptTokens(requested?: number): number {
  if (requested === undefined || !Number.isFinite(requested)) {
    return DEFAULT_PROMPT_TOKENS;
  }
  return Math.min(MAX_PROMPT_TOKENS, Math.max(MIN_PROMPT_TOKENS, Math.floor(requested)));
}

/** The tool's budget: the default, or less when the chat has less room left for the result. */
export function toolPromptTokens(tokenBudget?: number): number {
  return promptTokens(tokenBudget === undefined ? undefined : Math.min(DEFAULT_PROMPT_TOKENS, tokenBudget));
}

export function findRelevantParams(query: RelevantFilesQuery, options: FindRelevantFilesOptions = {}): FindRelevantParams {
  const scoped = (query.paths?.length ?? 0) > 0 || (query.globs?.length ?? 0) > 0;
  return {
    query: query.query,
    limit: query.limit ?? DEFAULT_LIMIT,
    scope: scoped ? { paths: query.paths ?? [], globs: query.globs ?? [] } : null,
    options: options.useModel === undefined ? null : { useModel: options.useModel },
    prompt: { tokens: promptTokens(options.promptTokens) },
  };
}

// By its code, not its class: the language client may bring its own copy of vscode-jsonrpc.
function isCancelledResponse(error: unknown): boolean {
  return isRecord(error) && error.code === REQUEST_CANCELLED;
}

/** A failed request as callers see it: CancelledError when cancelled, else an Error saying why. */
export function requestError(error: unknown): Error {
  if (error instanceof CancelledError || isCancelledResponse(error)) {
    return new CancelledError();
  }
  return new Error(`filescout: ${error instanceof Error ? error.message : String(error)}`);
}

/** The one way chats ask for relevant files: validates `input`, asks the server for the ranking
 * and its prompt-ready block, and streams the improving answer to `onUpdate`. */
export async function findRelevantFiles(
  client: FilescoutClient,
  input: unknown,
  options: FindRelevantFilesOptions = {},
): Promise<RelevantFiles> {
  const params = findRelevantParams(parseQuery(input), options);
  if (options.cancel?.isCancellationRequested) {
    throw new CancelledError();
  }
  let view: RelevanceView;
  try {
    view = await client.findRelevant(params, options.onUpdate, options.cancel);
  } catch (error) {
    throw requestError(error);
  }
  return { items: view.items, stages: view.stages, degraded: view.degraded, message: view.message, prompt: view.prompt };
}

/** What the tool gives the model: the prompt-ready block, as the server rendered it. */
export function toolResultText(answer: RelevantFiles): string {
  if (answer.prompt === null) {
    throw new Error("filescout: the server sent no prompt-ready block; update filescout (pipx upgrade filescout)");
  }
  return answer.prompt;
}

/** The language model tool's invocation, minus the VS Code wrapping: the block for the model, or
 * a QueryError, CancelledError, NoServerError or server error whose message says what went wrong. */
export async function invokeFindRelevantFilesTool(
  client: FilescoutClient | undefined,
  input: unknown,
  options: { tokenBudget?: number; cancel?: CancellationToken } = {},
): Promise<string> {
  if (client === undefined) {
    throw new NoServerError();
  }
  const answer = await findRelevantFiles(client, input, {
    promptTokens: toolPromptTokens(options.tokenBudget),
    cancel: options.cancel,
  });
  return toolResultText(answer);
}

/** The progress line the chat shows while the tool runs. */
export function invocationMessage(input: unknown): string {
  const query = isRecord(input) && typeof input.query === "string" ? input.query.replace(/\s+/g, " ").trim() : "";
  if (query === "") {
    return "Finding relevant files";
  }
  const shown = query.length > SHOWN_QUERY_LENGTH ? `${query.slice(0, SHOWN_QUERY_LENGTH - 1)}…` : query;
  return `Finding files relevant to “${shown}”`;
}
