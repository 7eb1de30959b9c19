// What the user reads, independent of VS Code: the status bar entry and its tooltip, the texts of
// notifications and of the Find Relevant Files quick pick. Short, naming the folder, without the
// protocol's internal words (stage names, raw scores, "writer").

import { IndexStatus, ReindexResult, RelevantItem, StatusResult } from "./protocol";

/** A folder's server as the user sees it. */
export interface FolderState {
  name: string;
  state: "starting" | "running" | "failed" | "stopped";
  /** Why the server is not running, when it failed. */
  failure?: string;
  status: IndexStatus | null;
  /** The server's current work-done progress line, e.g. "scanning 120/929". */
  progress?: string;
  /** Another filescout process writes this folder's index; this window's server only reads it. */
  reader?: boolean;
}

/** The one status bar entry: its text (with a codicon) and a tooltip with a line per folder. */
export function statusBarEntry(folders: FolderState[]): { text: string; tooltip: string; warning: boolean } {
  const failed = folders.filter((folder) => folder.state === "failed" || folder.state === "stopped");
  const busy = folders.filter((folder) => folder.state === "starting" || folder.progress || (folder.status && folder.status.phase !== "idle"));
  let text: string;
  if (failed.length > 0) {
    text = `$(warning) filescout: ${failed.length === folders.length ? "not running" : `${failed.length} of ${folders.length} not running`}`;
  } else if (busy.length > 0) {
    const one = busy[0];
    text = `$(sync~spin) filescout: ${one.state === "starting" ? "starting" : one.progress ?? describePhase(one.status)}`;
  } else {
    const files = folders.reduce((sum, folder) => sum + (folder.status?.files ?? 0), 0);
    text = `$(search) filescout: ${files} files`;
  }
  const tooltip = folders.map(folderLine).join("\n") + (failed.length > 0 ? "\n\nClick for what to do." : "\n\nClick for the index status.");
  return { text, tooltip, warning: failed.length > 0 };
}

function describePhase(status: IndexStatus | null): string {
  if (status === null) {
    return "starting";
  }
  switch (status.phase) {
    case "scanning":
      return "indexing";
    case "annotating":
      return `summarizing ${status.annotated}/${status.files}`;
    case "failed":
      return "indexing failed";
    default:
      return `${status.files} files`;
  }
}

function folderLine(folder: FolderState): string {
  if (folder.state === "failed" || folder.state === "stopped") {
    return `${folder.name}: not running — ${folder.failure ?? "the server stopped"}`;
  }
  if (folder.state === "starting" || folder.status === null) {
    return `${folder.name}: starting`;
  }
  const reader = folder.reader ? " (indexed by another filescout process)" : "";
  if (folder.progress) {
    return `${folder.name}: ${folder.progress}${reader}`;
  }
  const status = folder.status;
  if (status.phase === "idle") {
    return `${folder.name}: ${status.files} files indexed${status.pending > 0 ? `, ${status.pending} waiting for a summary` : ""}${reader}`;
  }
  return `${folder.name}: ${describePhase(status)}${reader}`;
}

/** After Reindex: what changed, in one short sentence naming the folder. */
export function reindexMessage(folder: string, result: ReindexResult): string {
  const changes = [
    result.added ? `${result.added} new` : "",
    result.changed ? `${result.changed} changed` : "",
    result.removed ? `${result.removed} removed` : "",
  ].filter(Boolean);
  return `filescout: ${folder} reindexed, ${result.files} files (${changes.length ? changes.join(", ") : "no changes"}).`;
}

/** Show Index Status, in one short sentence naming the folder. */
export function statusMessage(folder: string, status: StatusResult): string {
  const summarized = status.byStatus["annotated"] ?? 0;
  const waiting = status.queued ?? 0;
  const reader =
    status.role === "reader"
      ? ` Indexed by another filescout process${status.writerPid ? ` (pid ${status.writerPid})` : ""}; this window only reads it.`
      : "";
  return (
    `filescout: ${folder} has ${status.files} files, ${summarized} summarized` +
    `${waiting ? `, ${waiting} waiting` : ""}; ${status.phase === "idle" ? "up to date" : describePhase({ ...status, annotated: summarized, pending: waiting })}.${reader}`
  );
}

/** A quick pick row for a relevant file: the path, its summary in full, then why it was chosen. */
export function quickPickFields(item: RelevantItem): { label: string; description: string; detail: string } {
  const slash = item.path.lastIndexOf("/");
  return {
    label: `$(file) ${item.path.slice(slash + 1)}`,
    description: slash >= 0 ? item.path.slice(0, slash) : "",
    detail: item.summary ? `${item.summary} — ${item.reason}` : item.reason,
  };
}

/** Why a server did not start, and whether it is because no filescout was found. */
export function startFailure(command: string, error: unknown): { text: string; notFound: boolean } {
  const detail = error instanceof Error ? error.message : String(error);
  if (/ENOENT|not found|No such file/i.test(detail)) {
    return { text: `\`${command}\` was not found`, notFound: true };
  }
  if (/EACCES/.test(detail)) {
    return { text: `\`${command}\` is not executable`, notFound: false };
  }
  const firstLine = detail.split("\n")[0].replace(/^.*?failed\.\s*/, "").trim();
  return { text: `\`${command}\` failed to start: ${firstLine || "see the output"}`, notFound: false };
}
