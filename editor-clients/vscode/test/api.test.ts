// The API `activate` returns to other extensions (api.ts), driven against the real server.

import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { CancellationTokenSource } from "vscode-jsonrpc/node";
import { FilescoutApi, RelevanceStage, WorkspaceRef, createFilescoutApi } from "../src/api";
import { CancelledError, NoServerError } from "../src/relevantFiles";
import { SHOP, TestServer, startServer } from "./harness";

const HERE = "file:///workspaces/shop";

let server: TestServer;
let api: FilescoutApi;
const asked: (string | undefined)[] = [];

before(async () => {
  server = await startServer();
  // One workspace, as the extension would resolve it: its folder (or the default), nothing else.
  api = createFilescoutApi((folder?: WorkspaceRef) => {
    asked.push(folder?.toString());
    if (folder !== undefined && !folder.toString().startsWith(HERE)) {
      throw new NoServerError(`filescout is not running for ${folder.toString()}`);
    }
    return server.client;
  });
});

after(async () => {
  await server?.close();
});

test("findRelevantFiles streams each batch to onItems and resolves with the ranking and its block", async () => {
  const batches: { paths: string[]; stage: RelevanceStage }[] = [];
  const answer = await api.findRelevantFiles(
    { query: "refund a stripe charge", limit: 3 },
    { onItems: (items, stage) => batches.push({ paths: items.map((item) => item.path), stage }), promptTokens: 300 },
  );
  assert.ok(batches.length >= 1, "a streamed batch arrived before the answer");
  assert.equal(batches[0].stage, "prefilter");
  assert.equal(batches[0].paths[0], "src/shop/payments/stripe_gateway.py");
  assert.equal(answer.items[0].path, "src/shop/payments/stripe_gateway.py");
  assert.deepEqual(answer.stages, ["prefilter"]);
  assert.equal(answer.degraded, false);
  assert.ok(answer.prompt?.startsWith("<filescout-files"), String(answer.prompt));
  assert.ok(Math.ceil((answer.prompt ?? "").length / 4) <= 300);
});

test("findRelevantFiles refuses a query without words, as the tool does", async () => {
  await assert.rejects(api.findRelevantFiles({ query: "" }), /query must be a non-empty string/);
});

test("getFiles answers one page, with a prompt-ready block when asked, and the next page by cursor", async () => {
  const first = await api.getFiles({ limit: 2, prompt: { tokens: 400 } });
  assert.equal(first.items.length, 2);
  assert.ok(first.nextCursor);
  assert.ok(first.prompt?.startsWith('<filescout-files count="2">'), String(first.prompt));
  for (const item of first.items) {
    assert.ok(first.prompt?.includes(item.path), `${item.path} in ${first.prompt}`);
  }
  const seen = new Set(first.items.map((item) => item.path));
  let cursor: string | null = first.nextCursor;
  while (cursor) {
    const page = await api.getFiles({ limit: 2, cursor });
    assert.equal(page.prompt ?? null, null);
    page.items.forEach((item) => seen.add(item.path));
    cursor = page.nextCursor;
  }
  assert.deepEqual([...seen].sort(), Object.keys(SHOP).sort());
});

test("getFiles reports what the server refuses, and a page cancelled before it is sent as Canceled", async () => {
  await assert.rejects(api.getFiles({ limit: 0 }), /^Error: filescout: .*limit/);
  const source = new CancellationTokenSource();
  source.cancel();
  await assert.rejects(api.getFiles({}, { cancel: source.token }), CancelledError);
});

test("getFiles stays a page even when a JavaScript caller passes a streaming token", async () => {
  const page = await api.getFiles({ kinds: ["test"], partialResultToken: "stream-me" } as never);
  assert.deepEqual(page.items.map((item) => item.path), ["tests/test_cart.py"]);
});

test("status reports the index", async () => {
  const status = await api.status();
  assert.equal(status.files, Object.keys(SHOP).length);
  assert.equal(status.role, "writer");
  assert.ok(status.dbPath.startsWith(server.root), status.dbPath);
});

test("calls go to the workspace named by folder, and reject when none runs there", async () => {
  asked.length = 0;
  const status = await api.status({ folder: `${HERE}/src/shop/cart.py` });
  assert.equal(status.files, Object.keys(SHOP).length);
  assert.deepEqual(asked, [`${HERE}/src/shop/cart.py`]);
  await assert.rejects(api.status({ folder: "file:///elsewhere" }), /not running for file:\/\/\/elsewhere/);
  await assert.rejects(api.getFiles({}, { folder: "file:///elsewhere" }), NoServerError);
  await assert.rejects(api.findRelevantFiles({ query: "cart" }, { folder: "file:///elsewhere" }), NoServerError);
});
