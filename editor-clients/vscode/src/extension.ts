// The VS Code side: one filescout server per workspace folder, commands, a status bar item, the
// #filescout language model tool, the @filescout chat participant and the API other extensions
// get from `activate`. Everything that talks to the server goes through client.ts; chats find
// files through relevantFiles.ts.

import * as path from "path";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import { FilescoutApi, WorkspaceRef, createFilescoutApi } from "./api";
import { FilescoutClient, RelevanceView, describeStatus } from "./client";
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
import { API_KEY_SECRET, configurationChange, serverSettings } from "./settings";

const INSTALL_HINT = "pipx install filescout   (or: python -m pip install filescout)";

interface Workspace {
  folder: vscode.WorkspaceFolder;
  language: LanguageClient;
  client: FilescoutClient;
  status: IndexStatus | null;
}

const workspaces = new Map<string, Workspace>();
let statusItem: vscode.StatusBarItem;
/** The key from the "Set API Key" command, read once at activation and on every change. */
let storedApiKey: string | undefined;

function settingsFor(folder: vscode.WorkspaceFolder): Settings {
  return serverSettings(vscode.workspace.getConfiguration("filescout", folder), storedApiKey);
}

async function sendSettings(workspace: Workspace): Promise<void> {
  await workspace.language.sendNotification(
    DidChangeConfigurationNotification.type,
    configurationChange(settingsFor(workspace.folder)),
  );
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
  return { command: "filescout", args: ["serve"] };
}

async function start(folder: vscode.WorkspaceFolder, output: vscode.OutputChannel): Promise<void> {
  const { command, args } = serverCommand(folder);
  const serverOptions: ServerOptions = { command, args, options: { cwd: folder.uri.fsPath } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", pattern: `${folder.uri.fsPath}/**/*` }],
    workspaceFolder: folder,
    initializationOptions: settingsFor(folder),
    outputChannel: output,
    // File watching: the server registers its own watcher (dynamic registration).
  };
  const language = new LanguageClient(`filescout-${folder.index}`, `filescout (${folder.name})`, serverOptions, clientOptions);
  const workspace: Workspace = { folder, language, client: new FilescoutClient(language), status: null };
  workspaces.set(folder.uri.toString(), workspace);
  language.onDidChangeState((change) => {
    if (change.newState === State.Stopped) {
      updateStatusBar();
    }
  });
  try {
    await language.start();
  } catch (error) {
    workspaces.delete(folder.uri.toString());
    const choice = await vscode.window.showErrorMessage(
      `filescout could not start \`${[command, ...args].join(" ")}\` (${String(error)}). Install it with: ${INSTALL_HINT}, ` +
        "or point filescout.serverCommand or filescout.pythonPath at it.",
      "Open Settings",
    );
    if (choice) {
      void vscode.commands.executeCommand("workbench.action.openSettings", "filescout");
    }
    return;
  }
  language.onNotification(Methods.status, (status: IndexStatus) => {
    workspace.status = status;
    updateStatusBar();
  });
}

function updateStatusBar(): void {
  const statuses = [...workspaces.values()].map((workspace) => workspace.status).filter((s): s is IndexStatus => s !== null);
  if (workspaces.size === 0) {
    statusItem.hide();
    return;
  }
  const busy = statuses.find((status) => status.phase !== "idle");
  const shown = busy ?? statuses[0];
  statusItem.text = shown ? `$(${busy ? "sync~spin" : "search"}) ${describeStatus(shown)}` : "$(search) filescout";
  statusItem.show();
}

async function pickWorkspace(): Promise<Workspace | undefined> {
  const active = vscode.window.activeTextEditor?.document.uri;
  const folder = active ? vscode.workspace.getWorkspaceFolder(active) : undefined;
  if (folder && workspaces.has(folder.uri.toString())) {
    return workspaces.get(folder.uri.toString());
  }
  const all = [...workspaces.values()];
  if (all.length <= 1) {
    if (all.length === 0) {
      void vscode.window.showWarningMessage("filescout is not running for any workspace folder.");
    }
    return all[0];
  }
  const choice = await vscode.window.showQuickPick(all.map((w) => ({ label: w.folder.name, workspace: w })));
  return choice?.workspace;
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

function clientFor(ref?: WorkspaceRef): FilescoutClient {
  const workspace = workspaceFor(ref);
  if (!workspace) {
    throw new NoServerError(
      ref === undefined ? "filescout is not running for any workspace folder" : `filescout is not running for ${ref.toString()}`,
    );
  }
  return workspace.client;
}

interface FileQuickPickItem extends vscode.QuickPickItem {
  uri: vscode.Uri;
}

function quickPickItems(workspace: Workspace, view: RelevanceView): FileQuickPickItem[] {
  return view.items.map((item: RelevantItem) => ({
    label: `$(file) ${item.path}`,
    description: `${item.stage} ${item.score.toFixed(2)}`,
    detail: `${item.reason} — ${item.summary}`,
    uri: vscode.Uri.joinPath(workspace.folder.uri, item.path),
  }));
}

async function findRelevantFilesCommand(): Promise<void> {
  const workspace = await pickWorkspace();
  if (!workspace) {
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
  pick.title = `filescout: ${question}`;
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
      void workspace.client.didAccess([path.relative(workspace.folder.uri.fsPath, chosen.uri.fsPath)]);
    }
  });
  pick.show();
  try {
    const view = await workspace.client.findRelevant({ query: question, limit: 30 }, (current) => {
      pick.items = quickPickItems(workspace, current);
      pick.placeholder = `${current.stage ?? "searching"}…`;
    }, cancel.token);
    pick.items = quickPickItems(workspace, view);
    pick.placeholder = view.message ?? (view.items.length ? "Open a file" : "No file matches");
  } catch (error) {
    if (!cancel.token.isCancellationRequested) {
      void vscode.window.showErrorMessage(`filescout: ${String(error)}`);
    }
  } finally {
    pick.busy = false;
    cancel.dispose();
  }
}

async function reindexWorkspace(): Promise<void> {
  const workspace = await pickWorkspace();
  if (!workspace) {
    return;
  }
  try {
    const result = await workspace.client.reindex();
    void vscode.window.showInformationMessage(
      `filescout: ${result.files} files (${result.added} new, ${result.changed} changed, ${result.removed} removed) ` +
        `in ${result.elapsedMs} ms; annotating in the background.`,
    );
  } catch (error) {
    void vscode.window.showErrorMessage(`filescout: ${String(error)}`);
  }
}

async function showIndexStatus(): Promise<void> {
  const workspace = await pickWorkspace();
  if (!workspace) {
    return;
  }
  const status = await workspace.client.status();
  const counts = Object.entries(status.byStatus).map(([name, count]) => `${count} ${name}`).join(", ");
  const model = status.model && status.model.state !== "off"
    ? ` Model ${status.model.annotator}: ${status.model.state}, ${status.model.tokensToday} tokens today, ` +
      `about ${status.model.estimatedTokensToFinish} to finish.`
    : "";
  void vscode.window.showInformationMessage(
    `filescout (${status.role}): ${status.files} files — ${counts}. Phase: ${status.phase}. ` +
      `Last scan: ${status.lastScan ?? "never"}.${model} Index: ${status.dbPath}`,
  );
}

/** @filescout in the chat view: stream the relevant files as references, with reasons. */
async function chatHandler(
  request: vscode.ChatRequest,
  _context: vscode.ChatContext,
  stream: vscode.ChatResponseStream,
  token: vscode.CancellationToken,
): Promise<vscode.ChatResult> {
  const workspace = await pickWorkspace();
  if (!workspace) {
    stream.markdown("filescout is not running for this workspace.");
    return {};
  }
  stream.progress("Finding the files that matter…");
  let announced: string | null = null;
  try {
    const answer = await findRelevantFiles(workspace.client, { query: request.prompt, limit: 12 }, {
      cancel: token,
      onUpdate: (current) => {
        if (current.stage && current.stage !== announced && !current.done) {
          announced = current.stage;
          stream.progress(`${current.stage}: ${current.items.length} candidates…`);
        }
      },
    });
    renderChatAnswer(workspace, answer, stream);
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
      const text = await invokeFindRelevantFilesTool(workspaceFor()?.client, options.input, {
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

/** Starts a server per workspace folder and returns the API other extensions use (see README). */
export async function activate(context: vscode.ExtensionContext): Promise<FilescoutApi> {
  const output = vscode.window.createOutputChannel("filescout");
  statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  statusItem.command = "filescout.showIndexStatus";
  storedApiKey = await readStoredApiKey(context.secrets, output);
  context.subscriptions.push(
    output,
    statusItem,
    vscode.commands.registerCommand("filescout.reindexWorkspace", reindexWorkspace),
    vscode.commands.registerCommand("filescout.findRelevantFiles", findRelevantFilesCommand),
    vscode.commands.registerCommand("filescout.showIndexStatus", showIndexStatus),
    vscode.commands.registerCommand("filescout.setApiKey", () => setApiKey(context.secrets)),
    context.secrets.onDidChange((event) => onSecretChange(context.secrets, output, event)),
    vscode.workspace.onDidChangeWorkspaceFolders(async (event) => {
      for (const folder of event.removed) {
        await workspaces.get(folder.uri.toString())?.language.stop();
        workspaces.delete(folder.uri.toString());
      }
      for (const folder of event.added) {
        await start(folder, output);
      }
      updateStatusBar();
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      for (const workspace of workspaces.values()) {
        if (event.affectsConfiguration("filescout", workspace.folder)) {
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
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    await start(folder, output);
  }
  updateStatusBar();
  return createFilescoutApi(clientFor);
}

export async function deactivate(): Promise<void> {
  await Promise.all([...workspaces.values()].map((workspace) => workspace.language.stop()));
  workspaces.clear();
}
