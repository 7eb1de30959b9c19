// Starts the real Python server over stdio on a temporary workspace, for the tests that drive it
// with the extension's own modules. FILESCOUT_PYTHON picks the interpreter that has filescout
// installed (default: python3).

import { ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  createMessageConnection,
  MessageConnection,
  ProgressType,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import { FilescoutClient } from "../src/client";
import { IndexStatus, Methods } from "../src/protocol";

/** The small shop every editor client test indexes. */
export const SHOP: Record<string, string> = {
  "README.md": "# Shop\n\nA small web shop.\n",
  "src/shop/cart.py": '"""Shopping cart: items and totals with discounts."""\n\nclass ShoppingCart:\n    pass\n\ndef apply_discount(total, code):\n    return total\n',
  "src/shop/payments/stripe_gateway.py": '"""Stripe gateway: charges and refunds."""\n\ndef refund_charge(charge_id):\n    pass\n',
  "web/checkoutForm.ts": "// Checkout form: validates the address.\nexport function validateAddress(a: string) { return a.length > 0 }\n",
  "tests/test_cart.py": "from shop.cart import ShoppingCart\n\ndef test_cart():\n    ShoppingCart()\n",
};

/** Where the server keeps its index, inside the workspace so one cleanup removes both. */
export const INDEX_DIR = ".cache-index";

export interface TestServer {
  root: string;
  connection: MessageConnection;
  client: FilescoutClient;
  /** Every `filescout/status` notification so far. */
  statuses: IndexStatus[];
  /** Shuts the server down and removes the workspace. */
  close(): Promise<void>;
}

export async function waitFor(condition: () => boolean, what: string, timeoutMs = 30000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function writeWorkspace(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "filescout-vscode-"));
  for (const [relative, text] of Object.entries(files)) {
    mkdirSync(join(root, relative, ".."), { recursive: true });
    writeFileSync(join(root, relative), text);
  }
  return root;
}

function spawnServer(root: string): ChildProcess {
  const python = process.env.FILESCOUT_PYTHON ?? "python3";
  return spawn(python, ["-m", "filescout", "serve"], {
    env: { ...process.env, FILESCOUT_CACHE_DIR: join(root, INDEX_DIR), NO_PROXY: "127.0.0.1,localhost" },
    stdio: ["pipe", "pipe", "inherit"],
  });
}

/** A server on a fresh workspace holding `files`, initialized with `initializationOptions`;
 * resolves once the first indexing pass has ended. */
export async function startServer(
  files: Record<string, string> = SHOP,
  initializationOptions: object = { exclude: [`${INDEX_DIR}/`] },
): Promise<TestServer> {
  const root = writeWorkspace(files);
  const server = spawnServer(root);
  const connection = createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  const statuses: IndexStatus[] = [];
  let indexed = false;
  // The server announces each work-done progress; follow the indexing pass to its end (onProgress,
  // not a $/progress notification handler, which would take partial results away from the client).
  connection.onRequest("window/workDoneProgress/create", (params: { token: string | number }) => {
    connection.onProgress(new ProgressType<{ kind: string }>(), params.token, (value) => {
      if (value.kind === "end" && String(params.token).startsWith("filescout/index/")) {
        indexed = true;
      }
    });
    return null;
  });
  connection.onRequest("client/registerCapability", () => null);
  connection.onNotification("window/logMessage", () => undefined);
  connection.onNotification("window/showMessage", () => undefined);
  connection.onNotification(Methods.status, (status: IndexStatus) => statuses.push(status));
  connection.listen();
  const close = async (): Promise<void> => {
    try {
      await connection.sendRequest("shutdown");
      await connection.sendNotification("exit");
    } finally {
      connection.dispose();
      server.kill();
      rmSync(root, { recursive: true, force: true });
    }
  };
  try {
    await connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(root).toString(),
      capabilities: { window: { workDoneProgress: true } },
      initializationOptions,
    });
    await connection.sendNotification("initialized", {});
    await waitFor(() => indexed, "indexing to finish");
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
  return { root, connection, client: new FilescoutClient(connection), statuses, close };
}

/** The server's estimate of a text's tokens: four characters a token. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
