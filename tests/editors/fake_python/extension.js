// Test-only: what filescout uses of the Python extension's API (`environments`), answering with
// the interpreter named by $FILESCOUT_TEST_INTERPRETER, as if the user had selected it.
const vscode = require("vscode");

function activate() {
  const changed = new vscode.EventEmitter();
  return {
    environments: {
      getActiveEnvironmentPath() {
        const path = process.env.FILESCOUT_TEST_INTERPRETER;
        return { id: path || "none", path: path || "" };
      },
      onDidChangeActiveEnvironmentPath: changed.event,
    },
  };
}

module.exports = { activate };
