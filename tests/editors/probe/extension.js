// Test-only: an extension that depends on filescout. Its status bar entry shows once it is
// activated (which VS Code does only after filescout's `activate` has returned); its commands
// use filescout's API and language-model tool and show the answers as notifications.
const vscode = require("vscode");

function show(prefix, value) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  void vscode.window.showInformationMessage(`${prefix}: ${text.replace(/\s+/g, " ").slice(0, 300)}`);
}

function activate(context) {
  const item = vscode.window.createStatusBarItem("filescoutProbe", vscode.StatusBarAlignment.Right, 0);
  item.text = "probe: activated";
  item.show();
  const api = vscode.extensions.getExtension("filescout.filescout").exports;
  context.subscriptions.push(
    item,
    vscode.commands.registerCommand("filescoutProbe.invokeTool", async () => {
      const query = await vscode.window.showInputBox({ prompt: "probe: question for the tool" });
      try {
        const result = await vscode.lm.invokeTool("filescout_findRelevantFiles", {
          input: { query, limit: 3 },
          toolInvocationToken: undefined,
        });
        show("probe tool", result.content.map((part) => part.value).join(""));
      } catch (error) {
        show("probe tool error", String(error && error.message ? error.message : error));
      }
    }),
    vscode.commands.registerCommand("filescoutProbe.overview", async () => {
      try {
        const result = await vscode.lm.invokeTool("filescout_workspaceOverview", {
          input: { tokens: 400 },
          toolInvocationToken: undefined,
        });
        show("probe overview", result.content.map((part) => part.value).join(""));
      } catch (error) {
        show("probe overview error", String(error && error.message ? error.message : error));
      }
    }),
    vscode.commands.registerCommand("filescoutProbe.find", async () => {
      const query = await vscode.window.showInputBox({ prompt: "probe: question for the API" });
      try {
        const answer = await api.findRelevantFiles({ query, limit: 3 }, { useModel: false });
        show("probe find", `${answer.items.map((item) => item.path).join(", ")} | ${(answer.prompt || "").length} chars`);
      } catch (error) {
        show("probe find error", String(error && error.message ? error.message : error));
      }
    }),
    vscode.commands.registerCommand("filescoutProbe.status", async () => {
      try {
        const status = await api.status();
        show("probe status", `${status.files} files, ${status.phase}`);
      } catch (error) {
        show("probe status error", String(error && error.message ? error.message : error));
      }
    }),
  );
}

module.exports = { activate };
