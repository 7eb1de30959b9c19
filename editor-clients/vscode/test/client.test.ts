// Drives the real Python server over stdio with the extension's own client module.
// FILESCOUT_PYTHON picks the interpreter that has filescout installed (default: python3).

import { strict as assert } from "node:assert";
import { ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";
import {
  CancellationTokenSource,
  createMessageConnection,
  MessageConnection,
  ProgressType,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import { FilescoutClient, RelevanceView } from "../src/client";
import { FileItem, IndexStatus, Methods, RelevantItem } from "../src/protocol";

const FILES: Record<string, string> = {
  "README.md": "# Shop\n\nA small web shop.\n",
  "src/shop/cart.py": '"""Shopping cart: items and totals with discounts."""\n\nclass ShoppingCart:\n    pass\n\ndef apply_discount(total, code):\n    return total\n',
  "src/shop/payments/stripe_gateway.py": '"""Stripe gateway: charges and refunds."""\n\ndef refund_charge(charge_id):\n    pass\n',
  "web/checkoutForm.ts": "// Checkout form: validates the address.\nexport function validateAddress(a: string) { return a.length > 0 }\n",
  "tests/test_cart.py": "from shop.cart import ShoppingCart\n\ndef test_cart():\n    ShoppingCart()\n",
};

let root: string;
let server: ChildProcess;
let connection: MessageConnection;
let client: FilescoutClient;
const statuses: IndexStatus[] = [];
const progressEnds = new Set<string | number>();

before(async () => {
  root = mkdtempSync(join(tmpdir(), "filescout-vscode-"));
  for (const [relative, text] of Object.entries(FILES)) {
    mkdirSync(join(root, relative, ".."), { recursive: true });
    writeFileSync(join(root, relative), text);
  }
  const python = process.env.FILESCOUT_PYTHON ?? "python3";
  server = spawn(python, ["-m", "filescout", "serve"], {
    env: { ...process.env, FILESCOUT_CACHE_DIR: join(root, ".cache-index") },
    stdio: ["pipe", "pipe", "inherit"],
  });
  connection = createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  // The server announces each work-done progress; follow it to its end (onProgress, not a
  // $/progress notification handler, which would take partial results away from the client).
  connection.onRequest("window/workDoneProgress/create", (params: { token: string | number }) => {
    connection.onProgress(new ProgressType<{ kind: string }>(), params.token, (value) => {
      if (value.kind === "end") {
        progressEnds.add(params.token);
      }
    });
    return null;
  });
  connection.onRequest("client/registerCapability", () => null);
  connection.onNotification("window/logMessage", () => undefined);
  connection.onNotification("window/showMessage", () => undefined);
  connection.onNotification(Methods.status, (status: IndexStatus) => statuses.push(status));
  connection.listen();
  client = new FilescoutClient(connection);
  await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: pathToFileURL(root).toString(),
    capabilities: { window: { workDoneProgress: true } },
    initializationOptions: { exclude: [".cache-index/"] },
  });
  await connection.sendNotification("initialized", {});
  await waitFor(() => progressEnds.size > 0, "indexing to finish");
});

after(async () => {
  if (connection) {
    await connection.sendRequest("shutdown");
    await connection.sendNotification("exit");
    connection.dispose();
  }
  server?.kill();
  rmSync(root, { recursive: true, force: true });
});

async function waitFor(condition: () => boolean, what: string, timeoutMs = 30000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test("getFiles streams every indexed text file with a summary", async () => {
  const batches: FileItem[][] = [];
  const count = await client.streamFiles({ batchSize: 2 }, (items) => batches.push(items));
  const paths = batches.flat().map((item) => item.path).sort();
  assert.deepEqual(paths, Object.keys(FILES).sort());
  assert.equal(count, paths.length);
  assert.ok(batches.every((batch) => batch.length <= 2));
  assert.ok(batches.flat().every((item) => item.summary.length > 0 && item.status === "annotated"));
  const page = await client.filesPage({ kinds: ["test"], limit: 10 });
  assert.deepEqual(page.items.map((item) => item.path), ["tests/test_cart.py"]);
  assert.equal(page.nextCursor, null);
});

test("findRelevant streams the prefilter stage and finishes", async () => {
  const updates: string[][] = [];
  const view = await client.findRelevant({ query: "refund a stripe charge", limit: 3 }, (current) => {
    updates.push(current.items.map((item) => item.path));
  });
  assert.ok(view.done);
  assert.deepEqual(view.stages, ["prefilter"]);
  assert.equal(view.items[0].path, "src/shop/payments/stripe_gateway.py");
  assert.ok(view.items[0].reason.includes("stripe"));
  assert.ok(updates.length >= 1, "a streamed batch arrived before the answer");
});

test("cancelling a request answers it as cancelled", async () => {
  const source = new CancellationTokenSource();
  const pending = client.findRelevant({ query: "shopping cart discount" }, () => undefined, source.token);
  source.cancel();
  await pending.then(
    (view) => assert.ok(view.done), // it may finish before the cancel arrives
    (error: { code?: number }) => assert.equal(error.code, -32800),
  );
});

test("reindex sees a renamed file and status counts it", async () => {
  renameSync(join(root, "web/checkoutForm.ts"), join(root, "web/checkout.ts"));
  const result = await client.reindex();
  assert.equal(result.renamed, 1);
  assert.equal(result.files, Object.keys(FILES).length);
  const status = await client.status();
  assert.equal(status.files, Object.keys(FILES).length);
  assert.equal(status.role, "writer");
  assert.ok(statuses.some((update) => update.phase === "idle"));
  const [item] = (await client.filesPage({ paths: ["web/checkout.ts"] })).items;
  assert.ok(item.summary.includes("Checkout form"));
});

test("the relevance view merges stages the way the protocol says", () => {
  const view = new RelevanceView();
  const item = (path: string, stage: RelevantItem["stage"], score: number): RelevantItem =>
    ({ path, stage, score, reason: "", summary: "", tags: [], language: null, kind: "source" });
  view.add([item("a", "prefilter", 3), item("b", "prefilter", 2)]);
  view.add([item("b", "judge", 9)]);
  view.add([item("c", "judge", 7)]);
  assert.deepEqual(view.items.map((i) => i.path), ["b", "c"]);
  view.add([item("z", "prefilter", 1)]); // late and stale: ignored
  view.add([item("c", "final", 2), item("b", "final", 1)]);
  assert.deepEqual(view.items.map((i) => i.path), ["c", "b"]);
  view.finish({ items: [], stages: ["prefilter", "judge", "final"], degraded: false, message: null });
  assert.deepEqual(view.items.map((i) => i.path), ["c", "b"]);
});
