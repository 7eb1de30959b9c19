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
  /** That process, as describeProcess names it. */
  writer?: string;
  /** What the last indexing pass left undone, e.g. that the user cancelled it. */
  note?: string;
}

/** The settings that decide what the index holds: only the process that writes it applies them. */
export const READER_SETTINGS = ["exclude", "include", "maxFileSize"];

/** The process that writes a folder's index, for the user: its pid and, when known, its command
 * from `filescout` on (`filescout serve`, `filescout index .`), which says what it is. */
export function describeProcess(pid: number | undefined, commandLine?: string[]): string {
  const at = commandLine?.findIndex((part, index) => /(^|[/\\])filescout(\.exe)?$/.test(part) && commandLine[index - 1] !== "-m");
  const module = commandLine?.findIndex((part, index) => part === "filescout" && commandLine[index - 1] === "-m");
  let command: string | undefined;
  if (commandLine && at !== undefined && at >= 0) {
    command = ["filescout", ...commandLine.slice(at + 1)].join(" ");
  } else if (commandLine && module !== undefined && module >= 0) {
    command = ["filescout", ...commandLine.slice(module + 1)].join(" ");
  }
  if (command && command.length > 60) {
    command = `${command.slice(0, 57)}...`;
  }
  const id = pid ? `pid ${pid}` : "";
  return [id, command ? `\`${command}\`` : ""].filter(Boolean).join(", ") || "unknown";
}

/** Reindex asked of a window whose server only reads the index. */
export function readerReindexMessage(folder: string, writer?: string): string {
  return (
    `filescout: ${folder} is indexed by another filescout process (${writer ?? "unknown"}), so this window cannot ` +
    "reindex it. It takes over when that process exits: stop it (or close the other window), or reindex there."
  );
}

/** Settings that cannot apply while another process writes the index. */
export function readerSettingsMessage(folder: string, settings: string[], writer?: string): string {
  const names = settings.map((setting) => `filescout.${setting}`).join(", ");
  return (
    `filescout: ${names} ${settings.length > 1 ? "do" : "does"} not apply to ${folder} yet: another filescout process ` +
    `(${writer ?? "unknown"}) indexes it with its own settings. This window applies them once it takes over, when that process exits.`
  );
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
  const reader = folder.reader ? ` (indexed by another filescout process: ${folder.writer ?? "unknown"})` : "";
  if (folder.progress) {
    return `${folder.name}: ${folder.progress}${reader}`;
  }
  const status = folder.status;
  if (status.phase === "idle") {
    const note = folder.note ? ` (${folder.note})` : "";
    return `${folder.name}: ${status.files} files indexed${status.pending > 0 ? `, ${status.pending} waiting for a summary` : ""}${note}${reader}`;
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

/** Show Index Status, in one short sentence naming the folder (two when another process indexes
 * it, or when the last indexing was cancelled: what the user can do about it). */
export function statusMessage(folder: string, status: StatusResult, writer?: string, note?: string): string {
  const summarized = status.byStatus["annotated"] ?? 0;
  const waiting = status.queued ?? 0;
  let state = status.phase === "idle" ? "up to date" : describePhase({ ...status, annotated: summarized, pending: waiting });
  let advice = "";
  if (status.role === "reader") {
    advice =
      ` Indexed by another filescout process (${writer ?? (status.writerPid ? `pid ${status.writerPid}` : "unknown")}): ` +
      "this window only reads it, and takes over when that process exits.";
  } else if (note && status.phase === "idle") {
    state = note;
    advice = " Reindex Workspace indexes the rest.";
  }
  return `filescout: ${folder} has ${status.files} files, ${summarized} summarized${waiting ? `, ${waiting} waiting` : ""}; ${state}.${advice}`;
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
