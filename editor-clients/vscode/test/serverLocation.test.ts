// Where the extension finds a server with no setting, in the README's order, on a fake home.

import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { describeProcess, readerReindexMessage, readerSettingsMessage, statusMessage } from "../src/messages";
import { StatusResult } from "../src/protocol";
import { installCommands, locateServer, offlineSteps, shellLine } from "../src/serverLocation";

function program(file: string): string {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, "#!/bin/sh\n");
  chmodSync(file, 0o755);
  return file;
}

function withHome(run: (home: string) => void): void {
  const home = mkdtempSync(join(tmpdir(), "filescout-home-"));
  try {
    run(home);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

const base = { serverCommand: [], pythonPath: "", platform: "linux" as const };

test("the settings win, even over a server that is there", () => {
  withHome((home) => {
    program(join(home, ".local", "bin", "filescout"));
    const env = { PATH: "/usr/bin" };
    assert.deepEqual(locateServer({ ...base, serverCommand: ["/opt/fs", "serve"], env, home }), {
      command: "/opt/fs",
      args: ["serve"],
      source: "the filescout.serverCommand setting",
    });
    assert.equal(locateServer({ ...base, pythonPath: "/usr/bin/python3", env, home })?.args.join(" "), "-m filescout serve");
  });
});

test("with no setting: the bundled server, the Python extension's, the PATH, then the install places", () => {
  withHome((home) => {
    const env = { PATH: join(home, "path-bin") };
    assert.equal(locateServer({ ...base, env, home }), undefined);
    const user = program(join(home, ".local", "bin", "filescout"));
    assert.deepEqual(locateServer({ ...base, env, home }), { command: user, args: ["serve"], source: "~/.local/bin" });
    const uv = program(join(home, ".local", "share", "uv", "tools", "filescout", "bin", "filescout"));
    assert.equal(locateServer({ ...base, env, home })?.command, uv);
    const pipx = program(join(home, ".local", "pipx", "venvs", "filescout", "bin", "filescout"));
    assert.equal(locateServer({ ...base, env, home })?.source, "pipx");
    assert.equal(locateServer({ ...base, env, home })?.command, pipx);
    const onPath = program(join(home, "path-bin", "filescout"));
    assert.equal(locateServer({ ...base, env, home })?.command, onPath);
    const venv = join(home, "project", ".venv", "bin");
    program(join(venv, "filescout"));
    const chosen = locateServer({ ...base, env, home, pythonInterpreter: join(venv, "python") });
    assert.deepEqual(chosen, { command: join(venv, "python"), args: ["-m", "filescout", "serve"], source: "the Python extension's interpreter" });
    // An interpreter without filescout is passed over.
    assert.equal(locateServer({ ...base, env, home, pythonInterpreter: "/usr/bin/python3" })?.command, onPath);
    const bundled = { command: "/ext/server/linux-x64/filescout", args: ["serve"] };
    assert.equal(locateServer({ ...base, env, home, bundled, pythonInterpreter: join(venv, "python") })?.command, bundled.command);
  });
});

test("the private environment is the last place looked at, and how to install into it is shown", () => {
  withHome((home) => {
    const environment = join(home, "storage", "venv");
    assert.equal(locateServer({ ...base, env: { PATH: "" }, home, privateEnvironment: environment }), undefined);
    const steps = installCommands("/usr/bin/python3", environment, "linux").map(shellLine);
    assert.deepEqual(steps, [
      `/usr/bin/python3 -m venv ${environment}`,
      `${environment}/bin/python -m pip install --upgrade filescout`,
    ]);
    program(join(environment, "bin", "filescout"));
    assert.equal(locateServer({ ...base, env: { PATH: "" }, home, privateEnvironment: environment })?.source, "the extension's private environment");
    assert.match(offlineSteps(environment, "linux").join("\n"), /pip download filescout[\s\S]*--no-index --find-links/);
  });
});

test("another process that indexes the folder is named so the user can find it", () => {
  assert.equal(describeProcess(42, ["/venv/bin/python", "/venv/bin/filescout", "serve"]), "pid 42, `filescout serve`");
  assert.equal(describeProcess(42, ["python3", "-m", "filescout", "index", "."]), "pid 42, `filescout index .`");
  assert.equal(describeProcess(42, undefined), "pid 42");
  assert.match(readerReindexMessage("shop", "pid 42, `filescout serve`"), /shop is indexed by another filescout process \(pid 42, `filescout serve`\).*takes over when that process exits/);
  assert.match(readerSettingsMessage("shop", ["exclude", "include"], "pid 42"), /^filescout: filescout.exclude, filescout.include do not apply to shop yet/);
  const status = { files: 5, byStatus: { annotated: 5 }, queued: 0, phase: "idle", role: "reader", writerPid: 42 } as unknown as StatusResult;
  assert.match(statusMessage("shop", status, "pid 42, `filescout serve`"), /up to date\. Indexed by another filescout process \(pid 42, `filescout serve`\): this window only reads it/);
  const cancelled = { ...status, role: "writer", writerPid: null } as unknown as StatusResult;
  assert.equal(
    statusMessage("shop", cancelled, undefined, "indexing cancelled"),
    "filescout: shop has 5 files, 5 summarized; indexing cancelled. Reindex Workspace indexes the rest.",
  );
});
