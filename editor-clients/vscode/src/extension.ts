// The VS Code side: one filescout server per workspace folder, commands, a status bar item, the
// #filescout language model tool, the @filescout chat participant and the API other extensions
// get from `activate`. Everything that talks to the server goes through client.ts; chats find
// files through relevantFiles.ts.

import * as path from "path";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
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
import { FolderState, quickPickFields, reindexMessage, startFailure, statusBarEntry, statusMessage } from "./messages";
import { IndexStatus, Methods, RelevantItem, Settings } from "./protocol";
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
  /** The index had never been built when the server started: show its progress as a notification. */
  firstIndex?: boolean;
  /** The user asked for a reindex: show its progress as a notification. */
  reindexing?: boolean;
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

function serverCommand(folder: vscode.WorkspaceFolder): { command: string; args: string[] } {
  const config = vscode.workspace.getConfiguration("filescout", folder);
  const explicit = config.get<string[]>("serverCommand", []);
  if (explicit.length > 0) {
    return { command: explicit[0], args: explicit.slice(1) };
  }
  const python = config.get<string>("pythonPath", "");
  if (python) {
    return { command: python, args: ["-m", "filescout", "serve"] };
  }
  // A platform's VSIX carries the server (scripts/build-platform-vsix.py); the universal one does not.
  return findBundledServer() ?? { command: "filescout", args: ["serve"] };
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
  const { command, args } = serverCommand(folder);
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
  language.onNotification(Methods.status, (status: IndexStatus) => {
    workspace.status = status;
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
    workspace.reader = status.role === "reader";
    workspace.firstIndex = status.lastScan === null;
    workspace.status ??= { phase: status.phase, files: status.files, annotated: status.byStatus["annotated"] ?? 0, pending: status.queued ?? 0 };
    updateStatusBar();
  } catch {
    // The status notifications will tell.
  }
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
  const actions = notFound ? ["Open Settings", "How to Install"] : ["Open Settings", "Show Output"];
  const choice = await vscode.window.showErrorMessage(
    `filescout is not running for ${folders}: ${why}.` +
      (notFound ? " Set filescout.serverCommand to your filescout." : ""),
    ...actions,
  );
  reported.delete(key);
  if (choice === "Open Settings") {
    void vscode.commands.executeCommand("workbench.action.openSettings", "filescout.serverCommand");
  } else if (choice === "Show Output") {
    failed[0].output.show(true);
  } else if (choice === "How to Install") {
    const output = failed[0].output;
    output.appendLine("");
    output.appendLine("filescout is installed from its source (it is not on a package index yet):");
    output.appendLine("  python3 -m pip install --user /path/to/filescout   (or: pipx install /path/to/filescout)");
    output.appendLine('then set "filescout.serverCommand" to ["/path/to/the/installed/filescout", "serve"] if it is');
    output.appendLine("not on the PATH the editor sees. The server restarts as soon as the setting changes.");
    output.show(true);
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
      workspace.progress = progressLine(begin.title, begin.message);
      updateStatusBar();
      if (workspace.firstIndex || workspace.reindexing) {
        workspace.firstIndex = false;
        // Only work that lasts gets a notification: a small folder is indexed before it would show.
        setTimeout(() => {
          if (ended) {
            return;
          }
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
        }, NOTIFY_AFTER_MS);
      }
    } else if (value.kind === "report") {
      const update = value as WorkDoneProgressReport;
      workspace.progress = progressLine(undefined, update.message) ?? workspace.progress;
      const increment = update.percentage !== undefined ? Math.max(0, update.percentage - percentage) : undefined;
      percentage = update.percentage ?? percentage;
      report?.({ message: update.message, increment });
      updateStatusBar();
    } else {
      ended = true;
      workspace.progress = undefined;
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
  const choice = await vscode.window.showWarningMessage(
    `filescout is not running for ${workspace.name}: ${workspace.failure ?? "it stopped"}.`,
    "Open Settings",
    "Show Output",
  );
  if (choice === "Open Settings") {
    void vscode.commands.executeCommand("workbench.action.openSettings", "filescout.serverCommand");
  } else if (choice === "Show Output") {
    workspace.output.show(true);
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
    void vscode.window.showInformationMessage(reindexMessage(workspace.name, result));
  } catch (error) {
    const text = errorText(error);
    void vscode.window.showErrorMessage(
      /another filescout process/.test(text)
        ? `filescout: ${workspace.name} is indexed by another filescout process (an editor window or \`filescout\` ` +
            "command on the same folder); it reindexes there. Close that one to index from this window."
        : `filescout: reindexing ${workspace.name} failed: ${text}`,
    );
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
    void vscode.window.showInformationMessage(statusMessage(workspace.name, await client.status()));
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
  storedApiKey = await readStoredApiKey(context.secrets, log);
  context.subscriptions.push(
    log,
    statusItem,
    { dispose: () => workspaces.forEach((workspace) => workspace.output.dispose()) },
    vscode.commands.registerCommand("filescout.reindexWorkspace", reindexWorkspace),
    vscode.commands.registerCommand("filescout.findRelevantFiles", findRelevantFilesCommand),
    vscode.commands.registerCommand("filescout.showIndexStatus", showIndexStatus),
    vscode.commands.registerCommand("filescout.setApiKey", () => setApiKey(context.secrets)),
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
        }
      }
    }),
  );
  if (vscode.chat?.createChatParticipant) {
    const participant = vscode.chat.createChatParticipant("filescout.files", chatHandler);
    participant.iconPath = new vscode.ThemeIcon("search");
    context.subscriptions.push(participant);
  }
  if (vscode.lm?.registerTool) {
    context.subscriptions.push(vscode.lm.registerTool(TOOL_NAME, findRelevantFilesTool));
  }
  (vscode.workspace.workspaceFolders ?? []).forEach(start);
  updateStatusBar();
  return createFilescoutApi(clientFor);
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
