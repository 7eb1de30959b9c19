// The VS Code side: one filescout server per workspace folder, commands, a status bar item, the
// #filescout language model tool, the @filescout chat participant and the API other extensions
// get from `activate`. Everything that talks to the server goes through client.ts; chats find
// files through relevantFiles.ts.

import { execFile } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  LogMessageNotification,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  StaticFeature,
  WorkDoneProgress,
  WorkDoneProgressBegin,
  WorkDoneProgressCreateRequest,
  WorkDoneProgressReport,
} from "vscode-languageclient/node";
import { FilescoutApi, WorkspaceRef, createFilescoutApi } from "./api";
import { FilescoutClient, RelevanceView } from "./client";
import {
  FolderState,
  READER_SETTINGS,
  describeProcess,
  quickPickFields,
  readerReindexMessage,
  readerSettingsMessage,
  reindexMessage,
  startFailure,
  statusBarEntry,
  statusMessage,
} from "./messages";
import { IndexStatus, Methods, RelevantItem, Settings, StatusResult } from "./protocol";
import {
  CancelledError,
  NoServerError,
  QueryError,
  RelevantFiles,
  TOOL_NAME,
  findRelevantFiles,
  invocationMessage,
  invokeFindRelevantFilesTool,
} from "./relevantFiles";
import { findBundledServer } from "./bundledServer";
import { OVERVIEW_TOOL_NAME } from "./overview";
import { OverviewServer, overviewTool, withOverviewCommand } from "./overviewChat";
import {
  SEARCH_ORDER,
  ServerCommand,
  installCommands,
  locateServer,
  offlineSteps,
  pythonOf,
  shellLine,
  systemPython,
} from "./serverLocation";
import { API_KEY_SECRET, configurationChange, serverSettings } from "./settings";

/** Settings that change how the server starts: a change restarts the folder's server. */
const START_SETTINGS = ["filescout.serverCommand", "filescout.pythonPath"];

/** A workspace folder and its server, running or not. */
interface Workspace extends FolderState {
  folder: vscode.WorkspaceFolder;
  language?: LanguageClient;
  client?: FilescoutClient;
  /** Settled once the server runs or has failed to start. */
  ready: Promise<void>;
  output: vscode.OutputChannel;
  /** The index had never been built when the server started: show its progress as a notification
   * (undefined until the server's status says). */
  firstIndex?: boolean;
  /** A pass has ended since the server started. */
  indexedOnce?: boolean;
  /** The user asked for a reindex: show its progress as a notification. */
  reindexing?: boolean;
  /** Where the server was found (ServerCommand.source). */
  source?: string;
}

const workspaces = new Map<string, Workspace>();
let statusItem: vscode.StatusBarItem;
/** The key from the "Set API Key" command, read once at activation and on every change. */
let storedApiKey: string | undefined;

/**
 * A language client that leaves the server's commands and progress to the extension.
 *
 * vscode-languageclient registers every command of the server's `executeCommandProvider` as a
 * VS Code command: each folder's server offers the same ones (filescout.reindex…), so a second
 * folder's client would fail to start on the collision. The extension sends
 * `workspace/executeCommand` itself (client.ts). Work-done progress is shown by the extension too,
 * in its one status bar entry and, for the first index and a reindex, as a cancellable notification.
 */
class FolderLanguageClient extends LanguageClient {
  registerFeature(feature: Parameters<LanguageClient["registerFeature"]>[0]): void {
    const method = (feature as { registrationType?: { method?: string } }).registrationType?.method;
    if (method === "workspace/executeCommand" || feature.constructor.name === "ProgressFeature") {
      return;
    }
    super.registerFeature(feature);
  }

  /** The client's own failure notifications duplicate the extension's: its messages go to the log only. */
  error(message: string, data?: unknown): void {
    super.error(message, data, false);
  }
}

/** Tells the server that the client shows work-done progress (the extension's handler does). */
const workDoneProgressCapability: StaticFeature = {
  fillClientCapabilities(capabilities) {
    capabilities.window = { ...(capabilities.window ?? {}), workDoneProgress: true };
  },
  initialize() {},
  getState() {
    return { kind: "static" };
  },
  clear() {},
};

function settingsFor(folder: vscode.WorkspaceFolder): Settings {
  return serverSettings(vscode.workspace.getConfiguration("filescout", folder), storedApiKey);
}

async function sendSettings(workspace: Workspace): Promise<void> {
  if (workspace.state === "running" && workspace.language) {
    await workspace.language.sendNotification(
      DidChangeConfigurationNotification.type,
      configurationChange(settingsFor(workspace.folder)),
    );
  }
}

/** Where the extension installs filescout when the user asks it to (its global storage). */
let privateEnvironment: string | undefined;

/** The interpreter the Python extension selected for the folder, when that extension is installed. */
async function pythonInterpreter(folder: vscode.WorkspaceFolder): Promise<string | undefined> {
  const python = vscode.extensions.getExtension("ms-python.python");
  if (!python) {
    return undefined;
  }
  try {
    const activated = python.isActive ? Promise.resolve(python.exports) : python.activate();
    const api = await Promise.race([activated, new Promise((resolve) => setTimeout(() => resolve(undefined), 10_000))]);
    const environment = (api as { environments?: { getActiveEnvironmentPath?(resource?: vscode.Uri): { path?: string } } } | undefined)
      ?.environments?.getActiveEnvironmentPath?.(folder.uri);
    const found = environment?.path;
    if (!found) {
      return undefined;
    }
    return fs.statSync(found).isDirectory() ? pythonOf(found) : found;
  } catch {
    return undefined;
  }
}

/** The server for the folder: the settings, else the first one found (see SEARCH_ORDER). A
 * platform's VSIX carries a server (scripts/build-platform-vsix.py); the universal one does not. */
async function serverCommand(folder: vscode.WorkspaceFolder): Promise<ServerCommand | undefined> {
  const config = vscode.workspace.getConfiguration("filescout", folder);
  const serverCommand = config.get<string[]>("serverCommand", []);
  const pythonPath = config.get<string>("pythonPath", "");
  const explicit = serverCommand.length > 0 || pythonPath !== "";
  return locateServer({
    serverCommand,
    pythonPath,
    bundled: explicit ? undefined : findBundledServer(),
    pythonInterpreter: explicit ? undefined : await pythonInterpreter(folder),
    privateEnvironment,
  });
}

/** Starts the folder's server without waiting for it: activation never waits on a server or a toast. */
function start(folder: vscode.WorkspaceFolder): Workspace {
  const key = folder.uri.toString();
  const output =
    workspaces.get(key)?.output ?? vscode.window.createOutputChannel(`filescout (${folder.name})`);
  const workspace: Workspace = { folder, name: folder.name, state: "starting", status: null, output, ready: Promise.resolve() };
  workspaces.set(key, workspace);
  workspace.ready = run(workspace);
  updateStatusBar();
  return workspace;
}

async function run(workspace: Workspace): Promise<void> {
  const { folder, output } = workspace;
  const found = await serverCommand(folder);
  if (!found) {
    workspace.state = "failed";
    workspace.failure = NOT_FOUND;
    output.appendLine(`filescout: no server found for ${folder.name}; looked at, in order: ${SEARCH_ORDER.join("; ")}.`);
    updateStatusBar();
    void reportFailure([workspace], true);
    return;
  }
  const { command, args } = found;
  workspace.source = found.source;
  output.appendLine(`filescout: starting ${shellLine(found)} (from ${found.source}) for ${folder.name}`);
  const serverOptions: ServerOptions = { command, args, options: { cwd: folder.uri.fsPath } };
  let restarts: number[] = [];
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", pattern: `${folder.uri.fsPath}/**/*` }],
    workspaceFolder: folder,
    initializationOptions: settingsFor(folder),
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationFailedHandler: () => false,
    errorHandler: {
      error: () => ({ action: ErrorAction.Continue, handled: true }),
      closed: () => {
        const now = Date.now();
        restarts = [...restarts.filter((time) => now - time < 180_000), now];
        if (restarts.length <= 3 && workspace.state === "running") {
          return { action: CloseAction.Restart, handled: true };
        }
        if (workspace.state === "running") {
          workspace.state = "stopped";
          workspace.failure = "the server stopped; see the output";
          updateStatusBar();
          void reportFailure([workspace], false);
        }
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    },
    // File watching: the server registers its own watcher (dynamic registration).
  };
  const language = new FolderLanguageClient(
    `filescout-${folder.index}`,
    `filescout (${folder.name})`,
    serverOptions,
    clientOptions,
  );
  language.registerFeature(workDoneProgressCapability);
  workspace.language = language;
  workspace.client = new FilescoutClient(language);
  language.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
    trackProgress(workspace, language, token);
  });
  // The output shows the server's stderr, its whole log (with what comes before `initialized`,
  // the libraries' warnings and tracebacks); `window/logMessage` repeats filescout's lines of it.
  language.onNotification(LogMessageNotification.type, () => undefined);
  language.onNotification(Methods.status, (status: IndexStatus) => {
    if (workspace.firstIndex === undefined && status.phase === "scanning" && !workspace.indexedOnce) {
      // The first pass's start, which may come before the answer to the status asked below.
      workspace.firstIndex = status.files === 0;
    }
    workspace.status = status;
    if (workspace.reader) {
      void refreshRole(workspace); // a reader takes over once the other process exits
    }
    updateStatusBar();
  });
  try {
    await language.start();
  } catch (error) {
    const failure = startFailure([command, ...args].join(" "), error);
    workspace.state = "failed";
    workspace.failure = failure.text;
    output.appendLine(`filescout could not start for ${folder.name}: ${String(error)}`);
    updateStatusBar();
    void language.dispose().catch(() => undefined);
    void reportFailure([workspace], failure.notFound);
    return;
  }
  workspace.state = "running";
  updateStatusBar();
  try {
    const status = await workspace.client.status();
    workspace.firstIndex ??= status.lastScan === null && !workspace.indexedOnce;
    workspace.status ??= { phase: status.phase, files: status.files, annotated: status.byStatus["annotated"] ?? 0, pending: status.queued ?? 0 };
    noteRole(workspace, status);
    updateStatusBar();
    if (workspace.reader) {
      warnReaderSettings(workspace, READER_SETTINGS.filter((setting) => isSet(folder, setting)));
    }
  } catch {
    // The status notifications will tell.
  }
}

/** The failure of a folder for which no server was found anywhere. */
const NOT_FOUND = "no filescout server was found";

function noteRole(workspace: Workspace, status: StatusResult): void {
  workspace.reader = status.role === "reader";
  workspace.writer = workspace.reader ? describeProcess(status.writerPid ?? undefined, readCommandLine(status.writerPid)) : undefined;
}

/** The command line of a local process (Linux's /proc), to name the process that indexes. */
function readCommandLine(pid: number | null | undefined): string[] | undefined {
  if (!pid || process.platform !== "linux") {
    return undefined;
  }
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return undefined;
  }
}

const refreshing = new WeakSet<Workspace>();

async function refreshRole(workspace: Workspace): Promise<void> {
  if (refreshing.has(workspace) || !workspace.client) {
    return;
  }
  refreshing.add(workspace);
  try {
    noteRole(workspace, await workspace.client.status());
    updateStatusBar();
  } catch {
    // The next notification tries again.
  } finally {
    refreshing.delete(workspace);
  }
}

/** Whether a `filescout.*` setting differs from its default for the folder. */
function isSet(folder: vscode.WorkspaceFolder, setting: string): boolean {
  const inspected = vscode.workspace.getConfiguration("filescout", folder).inspect(setting);
  const value = inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
  return value !== undefined && JSON.stringify(value) !== JSON.stringify(inspected?.defaultValue);
}

/** Settings that decide what the index holds cannot apply while another process writes it: say so. */
function warnReaderSettings(workspace: Workspace, settings: string[]): void {
  if (settings.length === 0) {
    return;
  }
  void vscode.window
    .showWarningMessage(readerSettingsMessage(workspace.name, settings, workspace.writer), "Show Index Status")
    .then((choice) => {
      if (choice === "Show Index Status") {
        void vscode.commands.executeCommand("filescout.showIndexStatus");
      }
    });
}

/** Failures reported once: one notification for the folders that failed the same way. */
const reported = new Set<string>();
/** Folders start together: failures within this time go into one notification. */
const REPORT_DELAY_MS = 500;

async function reportFailure(failed: Workspace[], notFound: boolean): Promise<void> {
  const why = failed[0].failure ?? "it stopped";
  const key = `${why}`;
  if (reported.has(key)) {
    return;
  }
  reported.add(key);
  await new Promise((resolve) => setTimeout(resolve, REPORT_DELAY_MS));
  const names = failed.map((workspace) => workspace.name);
  const others = [...workspaces.values()].filter((workspace) => workspace.failure === why).map((w) => w.name);
  const folders = [...new Set([...names, ...others])].join(", ");
  const nowhere = why === NOT_FOUND;
  const actions = nowhere
    ? ["Install filescout", "How to Install", "Open Settings"]
    : notFound
      ? ["Open Settings", "How to Install"]
      : ["Open Settings", "Show Output"];
  const choice = await vscode.window.showErrorMessage(
    `filescout is not running for ${folders}: ${why}.` +
      (nowhere
        ? " Install it into a private environment of this extension, or yourself (How to Install)."
        : notFound
          ? " Set filescout.serverCommand to your filescout."
          : ""),
    ...actions,
  );
  reported.delete(key);
  if (choice === "Open Settings") {
    void vscode.commands.executeCommand("workbench.action.openSettings", "filescout.serverCommand");
  } else if (choice === "Show Output") {
    failed[0].output.show(true);
  } else if (choice === "How to Install") {
    showInstallHelp(failed[0].output);
  } else if (choice === "Install filescout") {
    void installPrivately(failed[0].output);
  }
}

/** How to get a server: the ways to install filescout, where the extension looks, what to do offline. */
function showInstallHelp(output: vscode.OutputChannel): void {
  const environment = privateEnvironment ?? "<the extension's storage>/venv";
  output.appendLine("");
  output.appendLine("filescout's server was not found. Install it one of these ways:");
  output.appendLine("  pipx install filescout");
  output.appendLine("  uv tool install filescout");
  output.appendLine("  python3 -m pip install --user filescout");
  output.appendLine("or run \"filescout: Install Server\", which runs:");
  for (const step of installCommands(systemPython() ?? "python3", environment)) {
    output.appendLine(`  ${shellLine(step)}`);
  }
  for (const line of offlineSteps(environment)) {
    output.appendLine(line);
  }
  output.appendLine(`Where the extension looks, in order: ${SEARCH_ORDER.join("; ")}.`);
  output.appendLine('Then run "filescout: Restart Server" (no reload needed).');
  output.show(true);
}

let installing: Promise<void> | undefined;

/** `python3 -m venv` and `pip install filescout` into the extension's global storage, each command
 * shown in the output; the folders without a server start once it is there. */
function installPrivately(output: vscode.OutputChannel): Promise<void> {
  installing ??= Promise.resolve(
    vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "filescout: installing the server" },
      async (progress) => {
        const environment = privateEnvironment;
        const python = systemPython();
        if (!environment || !python) {
          throw new Error(python ? "the extension has no storage folder" : "no python3 was found on the PATH");
        }
        output.show(true);
        output.appendLine("");
        for (const step of installCommands(python, environment)) {
          progress.report({ message: shellLine(step) });
          output.appendLine(`$ ${shellLine(step)}`);
          await runShown(step, output);
        }
      },
    ),
  )
    .then(
      () => {
        void vscode.window.showInformationMessage("filescout: the server is installed; starting it.");
        restartAll((workspace) => workspace.failure === NOT_FOUND);
      },
      (error: unknown) => {
        for (const line of ["", `The install failed: ${errorText(error)}`, ...offlineSteps(privateEnvironment ?? "venv")]) {
          output.appendLine(line);
        }
        void vscode.window.showErrorMessage(`filescout: installing the server failed: ${errorText(error)}. The output says what to do.`, "Show Output").then(
          (choice) => choice && output.show(true),
        );
      },
    )
    .then(() => {
      installing = undefined;
    });
  return installing ?? Promise.resolve();
}

function runShown(step: { command: string; args: string[] }, output: vscode.OutputChannel): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(step.command, step.args, { maxBuffer: 64 * 1024 * 1024 }, (error) => (error ? reject(error) : resolve()));
    child.stdout?.on("data", (data: Buffer | string) => output.append(data.toString()));
    child.stderr?.on("data", (data: Buffer | string) => output.append(data.toString()));
  });
}

/** Restarts the servers of the folders `which` picks (all by default), finding the server again. */
function restartAll(which: (workspace: Workspace) => boolean = () => true): void {
  reported.clear();
  for (const workspace of [...workspaces.values()].filter(which)) {
    void restart(workspace);
  }
}

/** Work-done progress: one line in the status bar entry; for the first index or a reindex the
 * user asked for, also a notification whose cancel button cancels the server's work. */
function trackProgress(workspace: Workspace, language: LanguageClient, token: string | number): void {
  let finish: (() => void) | undefined;
  let report: ((value: { message?: string; increment?: number }) => void) | undefined;
  let percentage = 0;
  let ended = false;
  const subscription = language.onProgress(WorkDoneProgress.type, token, (value) => {
    if (value.kind === "begin") {
      const begin = value as WorkDoneProgressBegin;
      workspace.note = undefined;
      workspace.progress = progressLine(begin.title, begin.message);
      updateStatusBar();
      // Only work that lasts gets a notification: a small folder is indexed before it would show.
      // Whether this is the first index is known once the status asked at start has come back,
      // which may be after the pass began: until then, look again.
      const notify = (): void => {
        const current = workspaces.get(workspace.folder.uri.toString()) === workspace;
        if (ended || !current || workspace.state === "failed" || workspace.state === "stopped") {
          return;
        }
        if (workspace.firstIndex === undefined && !workspace.reindexing) {
          setTimeout(notify, 250);
          return;
        }
        if (workspace.firstIndex || workspace.reindexing) {
          workspace.firstIndex = false;
          void vscode.window.withProgress(
          {
            location: vscode.ProgressLocation.Notification,
            title: `filescout: indexing ${workspace.name}`,
            cancellable: begin.cancellable ?? false,
          },
          (progress, cancel) =>
            new Promise<void>((resolve) => {
              finish = resolve;
              report = (update) => progress.report(update);
              cancel.onCancellationRequested(() => {
                void language.sendNotification("window/workDoneProgress/cancel", { token });
              });
            }),
          );
        }
      };
      setTimeout(notify, NOTIFY_AFTER_MS);
    } else if (value.kind === "report") {
      const update = value as WorkDoneProgressReport;
      workspace.progress = progressLine(undefined, update.message) ?? workspace.progress;
      const increment = update.percentage !== undefined ? Math.max(0, update.percentage - percentage) : undefined;
      percentage = update.percentage ?? percentage;
      report?.({ message: update.message, increment });
      updateStatusBar();
    } else {
      ended = true;
      workspace.indexedOnce = true;
      workspace.firstIndex = false;
      workspace.progress = undefined;
      const message = (value as { message?: string }).message ?? "";
      workspace.note = /cancelled/i.test(message) && workspace.state === "running" ? "indexing cancelled" : undefined;
      finish?.();
      subscription.dispose();
      updateStatusBar();
    }
  });
}

/** How long indexing runs before its notification shows. */
const NOTIFY_AFTER_MS = 1500;

function progressLine(title?: string, message?: string): string | undefined {
  const text = [title, message].filter(Boolean).join(" ").replace(/^filescout:?\s*/i, "").trim();
  return text || undefined;
}

function updateStatusBar(): void {
  if (workspaces.size === 0) {
    statusItem.hide();
    return;
  }
  const entry = statusBarEntry([...workspaces.values()]);
  statusItem.text = entry.text;
  statusItem.tooltip = entry.tooltip;
  statusItem.backgroundColor = entry.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  statusItem.show();
}

/** Which folder a command is for: the active editor's, the only one, else the user's choice. */
async function pickWorkspace(purpose: string): Promise<Workspace | undefined> {
  const all = [...workspaces.values()];
  const active = vscode.window.activeTextEditor?.document.uri;
  const folder = active ? vscode.workspace.getWorkspaceFolder(active) : undefined;
  let workspace = folder ? workspaces.get(folder.uri.toString()) : undefined;
  if (!workspace && all.length === 1) {
    workspace = all[0];
  }
  if (!workspace && all.length > 1) {
    const choice = await vscode.window.showQuickPick(
      all.map((w) => ({ label: w.name, description: w.state === "running" ? "" : "not running", workspace: w })),
      { placeHolder: `Which folder ${purpose}?` },
    );
    workspace = choice?.workspace;
  }
  if (!workspace) {
    if (all.length === 0) {
      void vscode.window.showWarningMessage("filescout: open a folder first.");
    }
    return undefined;
  }
  await workspace.ready;
  if (workspace.state !== "running") {
    void showStatusDetails(workspace);
    return undefined;
  }
  return workspace;
}

/** What to do about a folder whose server is not running. */
async function showStatusDetails(workspace: Workspace): Promise<void> {
  const nowhere = workspace.failure === NOT_FOUND;
  const choice = await vscode.window.showWarningMessage(
    `filescout is not running for ${workspace.name}: ${workspace.failure ?? "it stopped"}.`,
    ...(nowhere ? ["Install filescout", "How to Install", "Open Settings"] : ["Open Settings", "Show Output"]),
  );
  if (choice === "Open Settings") {
    void vscode.commands.executeCommand("workbench.action.openSettings", "filescout.serverCommand");
  } else if (choice === "Show Output") {
    workspace.output.show(true);
  } else if (choice === "How to Install") {
    showInstallHelp(workspace.output);
  } else if (choice === "Install filescout") {
    void installPrivately(workspace.output);
  }
}

function uriOf(ref: WorkspaceRef): vscode.Uri {
  return typeof ref === "string" && path.isAbsolute(ref) ? vscode.Uri.file(ref) : vscode.Uri.parse(ref.toString());
}

/** The workspace a tool call or another extension means, without asking: the folder of `ref`,
 * else of the active editor, else the first running one. */
function workspaceFor(ref?: WorkspaceRef): Workspace | undefined {
  const target = ref !== undefined ? uriOf(ref) : vscode.window.activeTextEditor?.document.uri;
  const folder = target ? vscode.workspace.getWorkspaceFolder(target) : undefined;
  if (folder) {
    return workspaces.get(folder.uri.toString());
  }
  return ref === undefined ? workspaces.values().next().value : undefined;
}

/** The folder's running server, once it has started; a NoServerError saying why when it has not. */
async function clientFor(ref?: WorkspaceRef): Promise<FilescoutClient> {
  const workspace = workspaceFor(ref);
  if (!workspace) {
    throw new NoServerError(
      ref === undefined ? "filescout is not running for any workspace folder" : `filescout is not running for ${ref.toString()}`,
    );
  }
  await workspace.ready;
  if (workspace.state !== "running" || !workspace.client) {
    throw new NoServerError(`filescout is not running for ${workspace.name}: ${workspace.failure ?? "it stopped"}`);
  }
  return workspace.client;
}

interface FileQuickPickItem extends vscode.QuickPickItem {
  uri: vscode.Uri;
}

function quickPickItems(workspace: Workspace, view: RelevanceView): FileQuickPickItem[] {
  return view.items.map((item: RelevantItem) => ({
    ...quickPickFields(item),
    uri: vscode.Uri.joinPath(workspace.folder.uri, item.path),
  }));
}

async function findRelevantFilesCommand(): Promise<void> {
  const workspace = await pickWorkspace("to search");
  const client = workspace?.client;
  if (!workspace || !client) {
    return;
  }
  const question = await vscode.window.showInputBox({
    prompt: "Which files matter for…",
    placeHolder: "e.g. where are refunds sent to the payment provider",
  });
  if (!question) {
    return;
  }
  const pick = vscode.window.createQuickPick<FileQuickPickItem>();
  pick.title = `filescout (${workspace.name}): ${question}`;
  pick.matchOnDetail = true;
  pick.busy = true;
  pick.placeholder = "Finding relevant files…";
  const cancel = new vscode.CancellationTokenSource();
  pick.onDidHide(() => cancel.cancel());
  pick.onDidAccept(async () => {
    const chosen = pick.selectedItems[0];
    if (chosen) {
      pick.hide();
      await vscode.window.showTextDocument(chosen.uri);
      void client.didAccess([path.relative(workspace.folder.uri.fsPath, chosen.uri.fsPath)]);
    }
  });
  pick.show();
  try {
    const view = await client.findRelevant({ query: question, limit: 30 }, (current) => {
      pick.items = quickPickItems(workspace, current);
      pick.placeholder = "Finding relevant files… (the list improves as it goes)";
    }, cancel.token);
    pick.items = quickPickItems(workspace, view);
    pick.placeholder = view.message ?? (view.items.length ? "Open a file" : "No file matches");
  } catch (error) {
    if (!cancel.token.isCancellationRequested) {
      void vscode.window.showErrorMessage(`filescout (${workspace.name}): ${errorText(error)}`);
    }
  } finally {
    pick.busy = false;
    cancel.dispose();
  }
}

function pidIn(text: string): number | undefined {
  const match = /pid (\d+)/.exec(text);
  return match ? Number(match[1]) : undefined;
}

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/^(Error: )?(filescout: )?/, "");
}

async function reindexWorkspace(): Promise<void> {
  const workspace = await pickWorkspace("to reindex");
  const client = workspace?.client;
  if (!workspace || !client) {
    return;
  }
  workspace.reindexing = true;
  try {
    const result = await client.reindex();
    workspace.note = undefined;
    updateStatusBar();
    void vscode.window.showInformationMessage(reindexMessage(workspace.name, result));
  } catch (error) {
    const text = errorText(error);
    if (/another filescout process/.test(text)) {
      await refreshRole(workspace);
      void vscode.window.showWarningMessage(readerReindexMessage(workspace.name, workspace.writer ?? describeProcess(pidIn(text))));
    } else {
      void vscode.window.showErrorMessage(`filescout: reindexing ${workspace.name} failed: ${text}`);
    }
  } finally {
    workspace.reindexing = false;
  }
}

async function showIndexStatus(): Promise<void> {
  const all = [...workspaces.values()];
  const failed = all.find((workspace) => workspace.state === "failed" || workspace.state === "stopped");
  if (failed && all.length === 1) {
    void showStatusDetails(failed);
    return;
  }
  const workspace = await pickWorkspace("for the status");
  const client = workspace?.client;
  if (!workspace || !client) {
    return;
  }
  try {
    const status = await client.status();
    noteRole(workspace, status);
    updateStatusBar();
    void vscode.window.showInformationMessage(statusMessage(workspace.name, status, workspace.writer, workspace.note));
  } catch (error) {
    void vscode.window.showErrorMessage(`filescout (${workspace.name}): ${errorText(error)}`);
  }
}

/** @filescout in the chat view: stream the relevant files as references, with reasons. */
async function chatHandler(
  request: vscode.ChatRequest,
  _context: vscode.ChatContext,
  stream: vscode.ChatResponseStream,
  token: vscode.CancellationToken,
): Promise<vscode.ChatResult> {
  const workspace = workspaceFor();
  let client: FilescoutClient;
  try {
    client = await clientFor(workspace?.folder.uri);
  } catch (error) {
    stream.markdown(errorText(error));
    return {};
  }
  stream.progress("Finding the files that matter…");
  let announced: string | null = null;
  try {
    const answer = await findRelevantFiles(client, { query: request.prompt, limit: 12 }, {
      cancel: token,
      onUpdate: (current) => {
        if (current.stage && current.stage !== announced && !current.done) {
          announced = current.stage;
          stream.progress(`${current.stage}: ${current.items.length} candidates…`);
        }
      },
    });
    renderChatAnswer(workspace as Workspace, answer, stream);
  } catch (error) {
    if (!(error instanceof CancelledError)) {
      stream.markdown(
        error instanceof QueryError && request.prompt.trim() === ""
          ? "Ask a question after @filescout, e.g. `@filescout where are refunds sent to the payment provider`."
          : String(error instanceof Error ? error.message : error),
      );
    }
  }
  return {};
}

function renderChatAnswer(workspace: Workspace, answer: RelevantFiles, stream: vscode.ChatResponseStream): void {
  if (answer.items.length === 0) {
    stream.markdown(answer.message ?? "No file in the index matches that question.");
    return;
  }
  stream.markdown(`**Relevant files** (${answer.stages.join(" → ")}${answer.degraded ? ", degraded" : ""}):\n\n`);
  for (const item of answer.items) {
    const uri = vscode.Uri.joinPath(workspace.folder.uri, item.path);
    stream.reference(uri);
    stream.markdown(`- [${item.path}](${uri.toString()}) — ${item.reason}\n`);
  }
  if (answer.message) {
    stream.markdown(`\n_${answer.message}_`);
  }
}

/** #filescout in any chat, and a tool agent mode may call: the prompt-ready block of the ranking.
 * Read-only, so it asks for no confirmation. */
const findRelevantFilesTool: vscode.LanguageModelTool<unknown> = {
  prepareInvocation(options) {
    return { invocationMessage: invocationMessage(options.input) };
  },
  async invoke(options, token) {
    try {
      const client = await clientFor().catch(() => undefined);
      const text = await invokeFindRelevantFilesTool(client, options.input, {
        tokenBudget: options.tokenizationOptions?.tokenBudget,
        cancel: token,
      });
      return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(text)]);
    } catch (error) {
      throw error instanceof CancelledError ? new vscode.CancellationError() : error;
    }
  },
};

/** "filescout: Set API Key": the key goes to secret storage, never to settings.json; an empty
 * answer removes it. Secret storage reports the change, which re-sends the settings. */
async function setApiKey(secrets: vscode.SecretStorage): Promise<void> {
  const answer = await vscode.window.showInputBox({
    title: "filescout: API key for the model endpoint",
    prompt: "Kept in VS Code's secret storage and sent only to the filescout server. Leave empty to remove the stored key.",
    password: true,
    ignoreFocusOut: true,
  });
  if (answer === undefined) {
    return; // dismissed: nothing changes
  }
  const key = answer.trim();
  try {
    if (key) {
      await secrets.store(API_KEY_SECRET, key);
      void vscode.window.showInformationMessage("filescout: API key stored.");
    } else {
      await secrets.delete(API_KEY_SECRET);
      void vscode.window.showInformationMessage("filescout: stored API key removed.");
    }
  } catch (error) {
    void vscode.window.showErrorMessage(`filescout: the secret storage refused the key (${String(error)}).`);
  }
}

/** The stored key, or none when the system keychain cannot be read (the setting still works). */
async function readStoredApiKey(secrets: vscode.SecretStorage, output: vscode.OutputChannel): Promise<string | undefined> {
  try {
    return await secrets.get(API_KEY_SECRET);
  } catch (error) {
    output.appendLine(`filescout: cannot read the stored API key (${String(error)}); using the filescout.model.apiKey setting.`);
    return undefined;
  }
}

async function onSecretChange(
  secrets: vscode.SecretStorage,
  output: vscode.OutputChannel,
  event: vscode.SecretStorageChangeEvent,
): Promise<void> {
  if (event.key !== API_KEY_SECRET) {
    return;
  }
  storedApiKey = await readStoredApiKey(secrets, output);
  await Promise.all([...workspaces.values()].map(sendSettings));
}

/** Starts a server per workspace folder, without waiting for any, and returns the API other
 * extensions use (see README). */
export async function activate(context: vscode.ExtensionContext): Promise<FilescoutApi> {
  statusItem = vscode.window.createStatusBarItem("filescout.status", vscode.StatusBarAlignment.Left, 10);
  statusItem.name = "filescout";
  statusItem.command = "filescout.showIndexStatus";
  const log = vscode.window.createOutputChannel("filescout");
  privateEnvironment = path.join(context.globalStorageUri.fsPath, "venv");
  storedApiKey = await readStoredApiKey(context.secrets, log);
  context.subscriptions.push(
    log,
    statusItem,
    { dispose: () => workspaces.forEach((workspace) => workspace.output.dispose()) },
    vscode.commands.registerCommand("filescout.reindexWorkspace", reindexWorkspace),
    vscode.commands.registerCommand("filescout.findRelevantFiles", findRelevantFilesCommand),
    vscode.commands.registerCommand("filescout.showIndexStatus", showIndexStatus),
    vscode.commands.registerCommand("filescout.setApiKey", () => setApiKey(context.secrets)),
    vscode.commands.registerCommand("filescout.restartServer", () => restartAll()),
    vscode.commands.registerCommand("filescout.installServer", () => installPrivately(log)),
    context.secrets.onDidChange((event) => onSecretChange(context.secrets, log, event)),
    vscode.workspace.onDidChangeWorkspaceFolders((event) => {
      for (const folder of event.removed) {
        const workspace = workspaces.get(folder.uri.toString());
        workspaces.delete(folder.uri.toString());
        void workspace?.language?.stop().catch(() => undefined);
        workspace?.output.dispose();
      }
      event.added.forEach(start);
      updateStatusBar();
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      for (const workspace of [...workspaces.values()]) {
        if (START_SETTINGS.some((setting) => event.affectsConfiguration(setting, workspace.folder))) {
          void restart(workspace);
        } else if (event.affectsConfiguration("filescout", workspace.folder)) {
          await sendSettings(workspace);
          if (workspace.reader) {
            warnReaderSettings(
              workspace,
              READER_SETTINGS.filter((setting) => event.affectsConfiguration(`filescout.${setting}`, workspace.folder)),
            );
          }
        }
      }
    }),
  );
  // The overview (#filescout-overview, @filescout /overview) asks the chat's folder's server.
  const overviewServer = async (): Promise<OverviewServer> => {
    const client = await clientFor();
    const workspace = [...workspaces.values()].find((candidate) => candidate.client === client);
    if (!workspace?.language) {
      throw new NoServerError();
    }
    return { connection: workspace.language, folder: workspace.folder.uri, name: workspace.name };
  };
  if (vscode.chat?.createChatParticipant) {
    const participant = vscode.chat.createChatParticipant("filescout.files", withOverviewCommand(chatHandler, overviewServer));
    participant.iconPath = new vscode.ThemeIcon("search");
    context.subscriptions.push(participant);
  }
  if (vscode.lm?.registerTool) {
    context.subscriptions.push(vscode.lm.registerTool(TOOL_NAME, findRelevantFilesTool));
    context.subscriptions.push(vscode.lm.registerTool(OVERVIEW_TOOL_NAME, overviewTool(overviewServer)));
  }
  followPythonInterpreter(context);
  (vscode.workspace.workspaceFolders ?? []).forEach(start);
  updateStatusBar();
  return createFilescoutApi(clientFor);
}

/** When the Python extension's selected interpreter changes, the folders whose server came from it,
 * or that have none, look again. */
function followPythonInterpreter(context: vscode.ExtensionContext): void {
  const python = vscode.extensions.getExtension("ms-python.python");
  if (!python) {
    return;
  }
  void Promise.resolve(python.isActive ? python.exports : python.activate()).then(
    (api: { environments?: { onDidChangeActiveEnvironmentPath?: vscode.Event<unknown> } } | undefined) => {
      const changed = api?.environments?.onDidChangeActiveEnvironmentPath;
      if (changed) {
        context.subscriptions.push(
          changed(() =>
            restartAll((workspace) => workspace.failure === NOT_FOUND || workspace.source === "the Python extension's interpreter"),
          ),
        );
      }
    },
    () => undefined,
  );
}

/** A new server with the changed start settings; the old one stops first. */
async function restart(workspace: Workspace): Promise<void> {
  const language = workspace.language;
  workspace.state = "starting";
  updateStatusBar();
  await workspace.ready.catch(() => undefined);
  await language?.stop().catch(() => undefined);
  if (workspaces.get(workspace.folder.uri.toString()) === workspace) {
    start(workspace.folder);
  }
}

export async function deactivate(): Promise<void> {
  await Promise.all([...workspaces.values()].map((workspace) => workspace.language?.stop().catch(() => undefined)));
  workspaces.clear();
}
