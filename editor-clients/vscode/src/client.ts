// Requests and streaming, independent of VS Code: it talks to anything with `sendRequest` and
// `onProgress` (a vscode-languageclient LanguageClient in the editor, a vscode-jsonrpc
// MessageConnection in the tests), so the tests drive the real server with this very code.

import { CancellationToken, ProgressType } from "vscode-jsonrpc";
import {
  Commands,
  FileItem,
  FindRelevantParams,
  FindRelevantResult,
  GetFilesPage,
  GetFilesParams,
  Methods,
  ProgressToken,
  RelevanceStage,
  RelevantItem,
  ReindexResult,
  StatusResult,
} from "./protocol";

export interface Disposable {
  dispose(): void;
}

/** The part of a JSON-RPC connection the client needs. */
export interface Connection {
  sendRequest<R>(method: string, params: unknown, token?: CancellationToken): Promise<R>;
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  sendNotification(method: string, params: unknown): Promise<void> | void;
  onProgress<P>(type: ProgressType<P>, token: ProgressToken, handler: (params: P) => void): Disposable;
}

const STAGE_ORDER: Record<RelevanceStage, number> = { prefilter: 0, judge: 1, final: 2 };

/** The answer to a findRelevant request as it streams in: each stage supersedes the earlier
 * ones; judge batches add up. */
export class RelevanceView {
  stage: RelevanceStage | null = null;
  items: RelevantItem[] = [];
  stages: RelevanceStage[] = [];
  degraded = false;
  message: string | null = null;
  /** The final ranking as a prompt-ready block, when the request asked for one. */
  prompt: string | null = null;
  done = false;

  add(batch: RelevantItem[]): void {
    if (batch.length === 0) {
      return;
    }
    const stage = batch[0].stage;
    if (this.stage === "judge" && stage === "judge") {
      const seen = new Set(this.items.map((item) => item.path));
      this.items = [...this.items, ...batch.filter((item) => !seen.has(item.path))];
      this.items.sort((a, b) => b.score - a.score || a.path.localeCompare(b.path));
    } else if (this.stage === null || STAGE_ORDER[stage] >= STAGE_ORDER[this.stage]) {
      this.items = [...batch];
    } else {
      return; // a late batch of an earlier stage changes nothing
    }
    this.stage = stage;
  }

  finish(result: FindRelevantResult): void {
    if (result.items.length > 0) {
      this.items = [...result.items];
      this.stage = result.items[0].stage;
    }
    this.stages = result.stages;
    this.degraded = result.degraded ?? false;
    this.message = result.message ?? null;
    this.prompt = result.prompt ?? null;
    this.done = true;
  }
}

export class FilescoutClient {
  private counter = 0;

  constructor(private readonly connection: Connection) {}

  /** vscode-jsonrpc takes trailing arguments as params: pass a token only when there is one. */
  private request<R>(method: string, params: unknown, cancel?: CancellationToken): Promise<R> {
    return cancel
      ? this.connection.sendRequest<R>(method, params, cancel)
      : this.connection.sendRequest<R>(method, params);
  }

  private token(kind: string): string {
    this.counter += 1;
    return `filescout-${kind}-${Date.now().toString(36)}-${this.counter}`;
  }

  /** Every matching file, streamed in batches; resolves with how many arrived. */
  async streamFiles(
    params: GetFilesParams,
    onBatch: (items: FileItem[]) => void,
    cancel?: CancellationToken,
  ): Promise<number> {
    const token = this.token("files");
    let count = 0;
    const subscription = this.connection.onProgress(new ProgressType<FileItem[]>(), token, (items) => {
      count += items.length;
      onBatch(items);
    });
    try {
      await this.request(Methods.getFiles, { ...params, partialResultToken: token }, cancel);
    } finally {
      subscription.dispose();
    }
    return count;
  }

  filesPage(params: GetFilesParams, cancel?: CancellationToken): Promise<GetFilesPage> {
    return this.request<GetFilesPage>(Methods.getFiles, params, cancel);
  }

  /** The files that matter for `params.query`; `onUpdate` sees the answer improve stage by
   * stage, with the streamed batch that improved it (none for the final answer). Cancelling
   * stops the server's work, model calls included. */
  async findRelevant(
    params: FindRelevantParams,
    onUpdate: (view: RelevanceView, batch?: RelevantItem[]) => void = () => undefined,
    cancel?: CancellationToken,
  ): Promise<RelevanceView> {
    const token = this.token("relevant");
    const view = new RelevanceView();
    const subscription = this.connection.onProgress(new ProgressType<RelevantItem[]>(), token, (batch) => {
      view.add(batch);
      onUpdate(view, batch);
    });
    try {
      const result = await this.request<FindRelevantResult>(
        Methods.findRelevant,
        { ...params, partialResultToken: token },
        cancel,
      );
      view.finish(result);
      onUpdate(view);
      return view;
    } finally {
      subscription.dispose();
    }
  }

  reindex(): Promise<ReindexResult> {
    return this.command<ReindexResult>(Commands.reindex);
  }

  status(): Promise<StatusResult> {
    return this.command<StatusResult>(Commands.status);
  }

  annotate(paths: string[], timeout = 30): Promise<FileItem[]> {
    return this.command<FileItem[]>(Commands.annotate, { paths, timeout });
  }

  /** Tell the server these files were used (a chat attached them, say). */
  async didAccess(paths: string[]): Promise<void> {
    if (paths.length > 0) {
      await this.connection.sendNotification(Methods.didAccess, { paths });
    }
  }

  private command<R>(command: string, ...args: unknown[]): Promise<R> {
    return this.request<R>("workspace/executeCommand", {
      command,
      arguments: args.length > 0 ? args : undefined,
    });
  }
}

/** One line about the index, for a status bar. */
export function describeStatus(status: { phase: string; files: number; annotated?: number; pending?: number }): string {
  switch (status.phase) {
    case "scanning":
      return `filescout: scanning (${status.files} files)`;
    case "annotating":
      return `filescout: ${status.annotated ?? 0}/${status.files} annotated`;
    case "failed":
      return "filescout: indexing failed";
    default:
      return `filescout: ${status.files} files`;
  }
}
