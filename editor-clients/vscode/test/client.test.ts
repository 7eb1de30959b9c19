// Drives the real Python server over stdio with the extension's own client module (see harness.ts).

import { strict as assert } from "node:assert";
import { renameSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CancellationTokenSource } from "vscode-jsonrpc/node";
import { FilescoutClient, RelevanceView } from "../src/client";
import { FileItem, RelevantItem } from "../src/protocol";
import { SHOP as FILES, TestServer, startServer } from "./harness";

let server: TestServer;
let client: FilescoutClient;

before(async () => {
  server = await startServer();
  client = server.client;
});

after(async () => {
  await server?.close();
});

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
  renameSync(join(server.root, "web/checkoutForm.ts"), join(server.root, "web/checkout.ts"));
  const result = await client.reindex();
  assert.equal(result.renamed, 1);
  assert.equal(result.files, Object.keys(FILES).length);
  const status = await client.status();
  assert.equal(status.files, Object.keys(FILES).length);
  assert.equal(status.role, "writer");
  assert.ok(server.statuses.some((update) => update.phase === "idle"));
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
