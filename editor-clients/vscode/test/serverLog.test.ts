// What the server writes to stderr, which the extension shows as the folder's output: no
// traceback when the client stops it at awkward moments, as vscode-languageclient does when a
// start fails (it sends `shutdown` while the server's own requests are still unanswered, and
// answers them afterwards).

import assert from "node:assert/strict";
import { ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { createMessageConnection, MessageConnection, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node";
import { waitFor } from "./harness";

interface Served {
  root: string;
  server: ChildProcess;
  connection: MessageConnection;
  stderr: () => string;
  /** The server's requests, unanswered until `answer` runs. */
  held: Array<() => void>;
  exited: Promise<number | null>;
}

function serve(): Served {
  const root = mkdtempSync(join(tmpdir(), "filescout-log-"));
  writeFileSync(join(root, "a.py"), "print('a')\n");
  const python = process.env.FILESCOUT_PYTHON ?? "python3";
  const server = spawn(python, ["-m", "filescout", "serve"], {
    env: { ...process.env, FILESCOUT_CACHE_DIR: join(root, ".cache-index") },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  server.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => server.on("exit", (code) => resolve(code)));
  const connection = createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  const held: Array<() => void> = [];
  const hold = () => new Promise<null>((resolve) => held.push(() => resolve(null)));
  connection.onRequest("window/workDoneProgress/create", hold);
  connection.onRequest("client/registerCapability", hold);
  connection.onNotification("window/logMessage", () => undefined);
  connection.onNotification("window/showMessage", () => undefined);
  connection.onNotification("filescout/status", () => undefined);
  connection.listen();
  return { root, server, connection, stderr: () => stderr, held, exited };
}

function initializeParams(root: string): object {
  return {
    processId: process.pid,
    rootUri: pathToFileURL(root).toString(),
    capabilities: {
      window: { workDoneProgress: true },
      workspace: { didChangeWatchedFiles: { dynamicRegistration: true } },
    },
  };
}

async function finish(served: Served): Promise<string> {
  served.connection.sendNotification("exit").catch(() => undefined);
  const timer = setTimeout(() => served.server.kill(), 20000);
  await served.exited;
  clearTimeout(timer);
  served.connection.dispose();
  rmSync(served.root, { recursive: true, force: true });
  return served.stderr();
}

test("answers to the server's requests that come after shutdown leave no traceback", { timeout: 60000 }, async () => {
  const served = serve();
  let down: unknown;
  try {
    await served.connection.sendRequest("initialize", initializeParams(served.root));
    await served.connection.sendNotification("initialized", {});
    await waitFor(() => served.held.length >= 2, "the server's registerCapability and workDoneProgress/create");
    // The client stops: shutdown first, then it answers what it still had (before the reply).
    const shutdown = served.connection.sendRequest("shutdown").catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 5));
    served.held.forEach((answer) => answer());
    down = await shutdown;
  } finally {
    const stderr = await finish(served);
    assert.doesNotMatch(stderr, /Traceback|InvalidStateError|No more requests/, stderr);
  }
  assert.equal(down, null);
});

test("a shutdown while initialize is under way leaves no traceback", { timeout: 60000 }, async () => {
  const served = serve();
  let down: unknown;
  try {
    const initialized = served.connection.sendRequest("initialize", initializeParams(served.root)).catch((error: unknown) => error);
    down = await served.connection.sendRequest("shutdown").catch((error: unknown) => error);
    await initialized;
  } finally {
    const stderr = await finish(served);
    assert.doesNotMatch(stderr, /Traceback|RuntimeError/, stderr);
  }
  assert.equal(down, null);
});
