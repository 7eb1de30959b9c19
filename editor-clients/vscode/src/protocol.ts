// The filescout protocol as the client uses it. The reference is protocol/PROTOCOL.md and the
// JSON Schema generated next to it; the client tests run these shapes against the real server,
// which rejects any field it does not know.

export type ProgressToken = string | number;
export type FileStatus = "pending" | "annotated" | "stale" | "skipped";
export type FileKind = "source" | "test" | "docs" | "config" | "data" | "generated" | "binary" | "other";
export type RelevanceStage = "prefilter" | "judge" | "final";

export const Methods = {
  getFiles: "files/getFiles",
  findRelevant: "files/findRelevant",
  didAccess: "files/didAccess",
  status: "filescout/status",
} as const;

export const Commands = {
  reindex: "filescout.reindex",
  status: "filescout.status",
  annotate: "filescout.annotate",
} as const;

export interface FileItem {
  path: string;
  summary: string;
  tags: string[];
  language: string | null;
  kind: FileKind;
  size: number;
  mtime: number;
  status: FileStatus;
  annotator: string | null;
}

export interface GetFilesParams {
  globs?: string[];
  paths?: string[];
  tags?: string[];
  tagsMatch?: "any" | "all";
  query?: string;
  changedSince?: number;
  status?: FileStatus[];
  kinds?: FileKind[];
  languages?: string[];
  orderBy?: "path" | "recent" | "frecency" | "rank";
  limit?: number;
  cursor?: string;
  batchSize?: number;
}

export interface GetFilesPage {
  items: FileItem[];
  nextCursor: string | null;
}

export interface RelevanceOptions {
  useModel?: boolean;
  maxModelCalls?: number;
  maxTokens?: number;
  candidates?: number;
  selectTags?: boolean;
}

export interface FindRelevantParams {
  query: string;
  limit?: number;
  scope?: { globs?: string[]; paths?: string[] };
  options?: RelevanceOptions;
}

export interface RelevantItem {
  path: string;
  score: number;
  stage: RelevanceStage;
  reason: string;
  summary: string;
  tags: string[];
  language: string | null;
  kind: FileKind;
}

export interface FindRelevantResult {
  items: RelevantItem[];
  stages: RelevanceStage[];
  degraded: boolean;
  message: string | null;
}

export interface IndexStatus {
  phase: "idle" | "scanning" | "annotating" | "failed";
  files: number;
  annotated: number;
  pending: number;
  message: string | null;
}

export interface ModelStatus {
  annotator: string;
  state: string;
  message: string | null;
  tokensToday: number;
  tokensThisMonth: number;
  dailyBudget: number | null;
  monthlyBudget: number | null;
  calls: number;
  failures: number;
  queuedFiles: number;
  estimatedTokensToFinish: number;
  estimatedCostToFinish: number | null;
}

export interface StatusResult {
  protocolVersion: number;
  serverVersion: string;
  root: string;
  dbPath: string;
  phase: IndexStatus["phase"];
  files: number;
  byStatus: Record<string, number>;
  byKind: Record<string, number>;
  annotator: string;
  lastScan: string | null;
  role: "writer" | "reader";
  writerPid: number | null;
  queued: number;
  model: ModelStatus | null;
  lastError: string | null;
}

export interface ReindexResult {
  added: number;
  changed: number;
  removed: number;
  renamed: number;
  unchanged: number;
  files: number;
  elapsedMs: number;
}

/** The settings the server accepts (initializationOptions, didChangeConfiguration). */
export interface ServerSettings {
  dbPath?: string;
  maxFileSize?: number;
  exclude?: string[];
  include?: string[];
  reconcileInterval?: number;
  logLevel?: "error" | "warning" | "info" | "debug";
  model?: {
    model?: string | null;
    baseUrl?: string | null;
    apiKey?: string | null;
    concurrency?: number;
  };
  budget?: { dailyTokens?: number | null; monthlyTokens?: number | null };
  privacyMode?: boolean;
}
