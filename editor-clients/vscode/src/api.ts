// What `activate` returns: filescout for other extensions, independent of VS Code so the Node
// tests drive it against the real server. It talks to the servers the extension already runs.

import { CancellationToken } from "vscode-jsonrpc";
import { FilescoutClient } from "./client";
import { GetFilesPage, GetFilesParams, RelevanceStage, RelevantItem, StatusResult } from "./protocol";
import { CancelledError, RelevantFiles, RelevantFilesQuery, findRelevantFiles, requestError } from "./relevantFiles";

export type { RelevantFiles, RelevantFilesQuery } from "./relevantFiles";
export type { FileItem, GetFilesPage, GetFilesParams, RelevanceStage, RelevantItem, StatusResult } from "./protocol";

/** A workspace folder, or any file in it: a `vscode.Uri`, a URI string or an absolute path. */
export type WorkspaceRef = string | { toString(): string };

export interface WorkspaceOptions {
  /** The workspace folder to ask; default: the folder of the active editor, else the first. */
  folder?: WorkspaceRef;
}

export interface RequestOptions extends WorkspaceOptions {
  /** Cancelling stops the server's work; the call then rejects with an error named "Canceled". */
  cancel?: CancellationToken;
}

export interface FindRelevantFilesApiOptions extends RequestOptions {
  /** Most tokens `prompt` may take (200–200000, default 4000). */
  promptTokens?: number;
  /** false: the model-free ranking only; default: the configured model, if any. */
  useModel?: boolean;
  /** Called with each batch the server streams: a later stage supersedes the earlier ones,
   * judge batches add up (see the protocol's `files/findRelevant`). */
  onItems?: (items: RelevantItem[], stage: RelevanceStage) => void;
}

/** A page of `files/getFiles`; set `prompt: { tokens }` to get the page as a prompt-ready block too. */
export type FilesPageParams = Omit<GetFilesParams, "partialResultToken" | "workDoneToken">;

export interface FilescoutApi {
  /** Changes only in ways that keep callers of this version working. */
  readonly version: 1;
  /** The files that matter for a question, best first, with the ranking as a prompt-ready block. */
  findRelevantFiles(query: RelevantFilesQuery, options?: FindRelevantFilesApiOptions): Promise<RelevantFiles>;
  /** One page of indexed files with their summaries; `nextCursor` asks for the next. */
  getFiles(params?: FilesPageParams, options?: RequestOptions): Promise<GetFilesPage>;
  /** What the index holds and what indexing is doing. */
  status(options?: WorkspaceOptions): Promise<StatusResult>;
}

/** `clientFor` finds the running server for a workspace (waiting while it starts), or throws
 * saying why there is none. */
export function createFilescoutApi(
  clientFor: (folder?: WorkspaceRef) => FilescoutClient | Promise<FilescoutClient>,
): FilescoutApi {
  return {
    version: 1,
    async findRelevantFiles(query, options = {}) {
      const { onItems } = options;
      return findRelevantFiles(await clientFor(options.folder), query, {
        promptTokens: options.promptTokens,
        useModel: options.useModel,
        cancel: options.cancel,
        onUpdate: (_view, batch) => {
          if (onItems && batch && batch.length > 0) {
            onItems(batch, batch[0].stage);
          }
        },
      });
    },
    async getFiles(params = {}, options = {}) {
      const client = await clientFor(options.folder);
      if (options.cancel?.isCancellationRequested) {
        throw new CancelledError();
      }
      return client.filesPage(pageParams(params), options.cancel).catch((error: unknown) => Promise.reject(requestError(error)));
    },
    async status(options = {}) {
      const client = await clientFor(options.folder);
      return client.status().catch((error: unknown) => Promise.reject(requestError(error)));
    },
  };
}

/** Only the page's fields: a streaming token from a JavaScript caller would turn the page into `[]`. */
function pageParams(params: FilesPageParams): GetFilesParams {
  const { partialResultToken: _streaming, workDoneToken: _progress, ...page } = params as GetFilesParams;
  return page;
}
