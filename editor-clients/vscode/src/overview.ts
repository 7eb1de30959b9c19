// The workspace overview for a chat, independent of VS Code: the #filescout-overview language
// model tool and the @filescout participant's /overview command both go through `getOverview`,
// so the Node tests drive the very path chats use against the real server. overviewChat.ts wraps
// it for VS Code.

import { CancellationToken } from "vscode-jsonrpc";
import { Connection } from "./client";
import { GetOverviewParams, Methods, OverviewEntry, OverviewResult } from "./protocol";
import { CancelledError, NoServerError, QueryError, isRecord, requestError, stringList } from "./relevantFiles";

/** The tool's name in package.json's `languageModelTools` and in `lm.registerTool`. */
export const OVERVIEW_TOOL_NAME = "filescout_workspaceOverview";
/** The @filescout participant's command (package.json's `chatParticipants[].commands`). */
export const OVERVIEW_COMMAND = "overview";

/** The server's bounds for `files/getOverview` (GetOverviewParams). */
export const DEFAULT_OVERVIEW_TOKENS = 2000;
export const MIN_OVERVIEW_TOKENS = 200;
export const MAX_OVERVIEW_TOKENS = 200000;
export const MAX_OVERVIEW_QUERY_LENGTH = 20000;
export const MAX_OVERVIEW_GLOBS = 100;

const OVERVIEW_FIELDS = ["tokens", "query", "paths", "globs"];
const SHOWN_QUERY_LENGTH = 60;

/** What sends the request: the extension's LanguageClient, or a MessageConnection in the tests. */
export type OverviewConnection = Pick<Connection, "sendRequest">;

/** What a chat asks for: everything is optional, the whole workspace at 2000 tokens by default. */
export interface OverviewQuery {
  /** Most tokens the block may take, 200–200000. */
  tokens?: number;
  /** A question whose branches open first. */
  query?: string;
  /** Only the tree below these workspace-relative directories. */
  paths?: string[];
  /** Only files matching these gitignore-style patterns (`*.py`, `!tests/**`). */
  globs?: string[];
}

export interface OverviewOptions {
  /** The chat's room for the result, in tokens: the block is made no bigger. */
  room?: number;
  /** Cancelling sends `$/cancelRequest`; the call then rejects with `CancelledError`. */
  cancel?: CancellationToken;
}

/** `input` checked field by field, as the server would, so that a model's mistake comes back
 * naming the field; unknown fields are refused so a misspelt scope never maps everything.
 * A missing input, null fields and a blank question count as left out (models write them so). */
export function parseOverviewInput(input: unknown): OverviewQuery {
  if (input == null) {
    return {};
  }
  if (!isRecord(input)) {
    throw new QueryError(`the input must be an object with any of ${OVERVIEW_FIELDS.join(", ")}`);
  }
  const unknown = Object.keys(input).filter((key) => !OVERVIEW_FIELDS.includes(key));
  if (unknown.length > 0) {
    throw new QueryError(`unknown field ${unknown.join(", ")}; the fields are ${OVERVIEW_FIELDS.join(", ")}`);
  }
  const { tokens, query, paths, globs } = input;
  const parsed: OverviewQuery = {};
  if (tokens != null) {
    if (typeof tokens !== "number" || !Number.isInteger(tokens) || tokens < MIN_OVERVIEW_TOKENS || tokens > MAX_OVERVIEW_TOKENS) {
      throw new QueryError(`tokens must be a whole number from ${MIN_OVERVIEW_TOKENS} to ${MAX_OVERVIEW_TOKENS}`);
    }
    parsed.tokens = tokens;
  }
  if (query != null) {
    if (typeof query !== "string") {
      throw new QueryError("query must be a string: a question whose branches should open first");
    }
    if (query.length > MAX_OVERVIEW_QUERY_LENGTH) {
      throw new QueryError(`query must be at most ${MAX_OVERVIEW_QUERY_LENGTH} characters`);
    }
    if (query.trim() !== "") {
      parsed.query = query.trim();
    }
  }
  if (paths != null) {
    parsed.paths = stringList(paths, "paths");
  }
  if (globs != null) {
    parsed.globs = stringList(globs, "globs");
    if (parsed.globs.length > MAX_OVERVIEW_GLOBS) {
      throw new QueryError(`globs must hold at most ${MAX_OVERVIEW_GLOBS} patterns`);
    }
  }
  return parsed;
}

/** The budget sent: the one asked for (default 2000), no more than the chat's room, within the
 * server's bounds. */
export function overviewTokens(requested?: number, room?: number): number {
  let tokens = requested ?? DEFAULT_OVERVIEW_TOKENS;
  if (room !== undefined && Number.isFinite(room)) {
    tokens = Math.min(tokens, room);
  }
  return Math.min(MAX_OVERVIEW_TOKENS, Math.max(MIN_OVERVIEW_TOKENS, Math.floor(tokens)));
}

export function overviewParams(query: OverviewQuery, room?: number): GetOverviewParams {
  return {
    tokens: overviewTokens(query.tokens, room),
    query: query.query ?? null,
    paths: query.paths ?? [],
    globs: query.globs ?? [],
  };
}

/** The one way chats ask for the overview: validates `input` and asks the server. */
export async function getOverview(
  connection: OverviewConnection,
  input: unknown,
  options: OverviewOptions = {},
): Promise<OverviewResult> {
  const params = overviewParams(parseOverviewInput(input), options.room);
  if (options.cancel?.isCancellationRequested) {
    throw new CancelledError();
  }
  try {
    // vscode-jsonrpc takes trailing arguments as params: pass a token only when there is one.
    return options.cancel
      ? await connection.sendRequest<OverviewResult>(Methods.getOverview, params, options.cancel)
      : await connection.sendRequest<OverviewResult>(Methods.getOverview, params);
  } catch (error) {
    throw requestError(error);
  }
}

/** The language model tool's invocation, minus the VS Code wrapping: the `<filescout-overview>`
 * block, or a QueryError, CancelledError, NoServerError or server error saying what went wrong. */
export async function invokeOverviewTool(
  connection: OverviewConnection | undefined,
  input: unknown,
  options: { tokenBudget?: number; cancel?: CancellationToken } = {},
): Promise<string> {
  if (connection === undefined) {
    throw new NoServerError();
  }
  const result = await getOverview(connection, input, { room: options.tokenBudget, cancel: options.cancel });
  return result.prompt;
}

/** The progress line the chat shows while the tool runs. */
export function overviewInvocationMessage(input: unknown): string {
  const query = isRecord(input) && typeof input.query === "string" ? input.query.replace(/\s+/g, " ").trim() : "";
  if (query === "") {
    return "Mapping the workspace";
  }
  const shown = query.length > SHOWN_QUERY_LENGTH ? `${query.slice(0, SHOWN_QUERY_LENGTH - 1)}…` : query;
  return `Mapping the workspace for “${shown}”`;
}

/** Workspace text shown as text: names and summaries must not become links, emphasis or HTML. */
export function escapeMarkdown(text: string): string {
  return text.replace(/\s+/g, " ").replace(/[\\`*_{}[\]()<>#+\-.!|~&$:]/g, (char) => `\\${char}`);
}

/** A link destination that cannot end the link early. */
function destination(uri: string): string {
  return `<${uri.replace(/[<>\s]/g, (char) => encodeURIComponent(char))}>`;
}

function moreFiles(count: number): string {
  return `… ${count} more file${count === 1 ? "" : "s"}`;
}

export interface OverviewMarkdownOptions {
  /** What the root (`.`) is called: the workspace folder's name. */
  rootName: string;
  /** The URI a file's line links to, from its workspace-relative path. */
  link: (path: string) => string;
  /** The question the overview is focused on, if any. */
  question?: string;
}

/** The overview for the chat view, from the result's entries: a nested list in the block's
 * order, each file a link, each partly shown directory ending with its "… N more files" line. */
export function overviewMarkdown(result: OverviewResult, options: OverviewMarkdownOptions): string {
  const focus = options.question ? `, focused on “${escapeMarkdown(options.question)}”` : "";
  if (result.files === 0 || result.entries.length === 0) {
    return `No indexed file in ${escapeMarkdown(options.rootName)} is in that scope${focus}.`;
  }
  const lines = [
    `**Workspace overview** of ${escapeMarkdown(options.rootName)}: ${result.shown} of ${result.files} ` +
      `files named, about ${result.estimatedTokens} tokens${focus}.`,
    "",
  ];
  const indent = (depth: number) => "  ".repeat(depth);
  const open: OverviewEntry[] = [];
  const close = (directory: OverviewEntry) => {
    if (directory.folded > 0 && directory.folded < directory.files) {
      lines.push(`${indent(directory.depth + 1)}- ${moreFiles(directory.folded)}`);
    }
  };
  for (const entry of result.entries) {
    while (open.length > 0 && open[open.length - 1].depth >= entry.depth) {
      close(open.pop() as OverviewEntry);
    }
    const parent = open[open.length - 1];
    const name =
      entry.path === "."
        ? options.rootName
        : parent === undefined || parent.path === "."
          ? entry.path
          : entry.path.slice(parent.path.length + 1);
    const summary = entry.summary ? ` — ${escapeMarkdown(entry.summary)}` : "";
    if (entry.type === "directory") {
      lines.push(`${indent(entry.depth)}- **${escapeMarkdown(name)}/**${summary}`);
      open.push(entry);
    } else {
      lines.push(`${indent(entry.depth)}- [${escapeMarkdown(name)}](${destination(options.link(entry.path))})${summary}`);
    }
  }
  while (open.length > 0) {
    close(open.pop() as OverviewEntry);
  }
  return `${lines.join("\n")}\n`;
}
