// The #filescout language model tool's invocation (relevantFiles.ts), driven against the real
// server: what the extension's `invoke` wraps in a LanguageModelToolResult.

import { strict as assert } from "node:assert";
import { after, before, test } from "node:test";
import { CancellationTokenSource } from "vscode-jsonrpc/node";
import { Connection, FilescoutClient } from "../src/client";
import {
  CancelledError,
  DEFAULT_PROMPT_TOKENS,
  NoServerError,
  QueryError,
  findRelevantFiles,
  invocationMessage,
  invokeFindRelevantFilesTool,
  toolPromptTokens,
} from "../src/relevantFiles";
import { SHOP, TestServer, estimateTokens, startServer } from "./harness";

// The shop, and enough payment code that a dozen files' block outgrows a small budget.
const FILES: Record<string, string> = {
  ...SHOP,
  "src/shop/payments/paypal_gateway.py":
    '"""PayPal gateway: captures payments, issues refunds and partial refunds, and follows disputes and chargebacks."""\n\ndef refund_capture(capture_id):\n    pass\n',
  "src/shop/payments/refund_policy.py":
    '"""Refund policy: which orders may be refunded, how much of the charge comes back, and when store credit replaces a refund."""\n\ndef refundable_amount(order):\n    pass\n',
  "src/shop/payments/ledger.py":
    '"""Payments ledger: records every charge, refund and payout with its currency, so totals reconcile with the payment providers."""\n\ndef record_refund(entry):\n    pass\n',
  "src/shop/orders/cancel_order.py":
    '"""Order cancellation: cancels an order, refunds the charge through the payment gateway and restocks the items."""\n\ndef cancel_order(order_id):\n    pass\n',
  "src/shop/payments/webhooks.py":
    '"""Payment webhooks: verifies provider signatures and applies charge, refund and dispute events to orders."""\n\ndef handle_refund_event(event):\n    pass\n',
};
const STRIPE = "src/shop/payments/stripe_gateway.py";

let server: TestServer;

before(async () => {
  server = await startServer(FILES);
});

after(async () => {
  await server?.close();
});

/** The paths a block lists, in its order. */
function listedPaths(block: string): string[] {
  return block
    .split("\n")
    .map((line) => /^\d+\. (.+)$/.exec(line)?.[1])
    .filter((path): path is string => path !== undefined);
}

test("the tool answers with the prompt-ready block, the file the question is about first", async () => {
  const block = await invokeFindRelevantFilesTool(server.client, { query: "refund a stripe charge" });
  assert.ok(block.startsWith("<filescout-files"), block);
  assert.ok(block.trimEnd().endsWith("</filescout-files>"), block);
  assert.ok(block.includes("Request: refund a stripe charge"), block);
  assert.equal(listedPaths(block)[0], STRIPE, block);
});

test("a small token budget keeps the block within it and names what did not fit", async () => {
  const question = { query: "refunds of payment charges", limit: 12 };
  const roomy = await invokeFindRelevantFilesTool(server.client, question);
  assert.ok(estimateTokens(roomy) > 200, `the default block (${estimateTokens(roomy)} tokens) must outgrow the small budget`);
  const small = await invokeFindRelevantFilesTool(server.client, question, { tokenBudget: 200 });
  assert.ok(small.startsWith("<filescout-files"), small);
  assert.ok(estimateTokens(small) <= 200, `${estimateTokens(small)} tokens: ${small}`);
  assert.match(small, /did not fit in 200 tokens/);
  assert.ok(listedPaths(small).length < listedPaths(roomy).length);
});

test("the tool's budget is the chat's room when smaller, within the server's bounds", () => {
  assert.equal(toolPromptTokens(undefined), DEFAULT_PROMPT_TOKENS);
  assert.equal(toolPromptTokens(100000), DEFAULT_PROMPT_TOKENS);
  assert.equal(toolPromptTokens(900.7), 900);
  assert.equal(toolPromptTokens(50), 200);
});

test("globs and paths narrow the search", async () => {
  const typescript = await invokeFindRelevantFilesTool(server.client, { query: "validate the checkout address", globs: ["*.ts"] });
  assert.deepEqual(listedPaths(typescript), ["web/checkoutForm.ts"]);
  const orders = await invokeFindRelevantFilesTool(server.client, { query: "refund the charge", paths: ["src/shop/orders"] });
  assert.deepEqual(listedPaths(orders), ["src/shop/orders/cancel_order.py"]);
  const unscoped = await invokeFindRelevantFilesTool(server.client, { query: "validate the checkout address", globs: null, limit: null });
  assert.equal(listedPaths(unscoped)[0], "web/checkoutForm.ts", "null counts as left out");
});

test("bad input is refused with a message naming the field", async () => {
  const refused = (input: unknown, message: RegExp) =>
    assert.rejects(invokeFindRelevantFilesTool(server.client, input), (error: Error) => {
      assert.ok(error instanceof QueryError, String(error));
      assert.match(error.message, message);
      return true;
    });
  await refused(undefined, /object with a `query`/);
  await refused({}, /query must be a non-empty string/);
  await refused({ query: "   " }, /query must be a non-empty string/);
  await refused({ query: "x".repeat(20001) }, /at most 20000/);
  await refused({ query: "cart", limit: 0 }, /limit must be a whole number from 1 to 100/);
  await refused({ query: "cart", limit: 2.5 }, /limit/);
  await refused({ query: "cart", paths: "src" }, /paths must be a list/);
  await refused({ query: "cart", globs: [""] }, /globs must be a list of non-empty strings/);
  await refused({ query: "cart", scope: "src" }, /unknown field scope/);
});

test("what the server refuses comes back as an error saying why, and the server keeps serving", async () => {
  await assert.rejects(
    invokeFindRelevantFilesTool(server.client, { query: "cart", paths: ["../elsewhere"] }),
    /^Error: filescout: scope\.paths\[0\]: '\.\.\/elsewhere' is outside the workspace$/,
  );
  const block = await invokeFindRelevantFilesTool(server.client, { query: "shopping cart discount" });
  assert.equal(listedPaths(block)[0], "src/shop/cart.py");
});

test("without a server the tool says how to get one", async () => {
  await assert.rejects(invokeFindRelevantFilesTool(undefined, { query: "cart" }), (error: Error) => {
    assert.ok(error instanceof NoServerError);
    assert.match(error.message, /not running/);
    assert.match(error.message, /filescout\.serverCommand/);
    return true;
  });
});

test("an invocation cancelled before it starts sends nothing", async () => {
  const source = new CancellationTokenSource();
  source.cancel();
  const sent: string[] = [];
  const recording: Connection = {
    sendRequest: async (method: string) => void sent.push(method),
    sendNotification: () => undefined,
    onProgress: () => ({ dispose: () => undefined }),
  } as unknown as Connection;
  await assert.rejects(
    invokeFindRelevantFilesTool(new FilescoutClient(recording), { query: "cart" }, { cancel: source.token }),
    CancelledError,
  );
  assert.deepEqual(sent, []);
});

test("the chat participant's path streams the ranking as it improves, with the block at the end", async () => {
  const batches: string[][] = [];
  const answer = await findRelevantFiles(server.client, { query: "refund a stripe charge", limit: 3 }, {
    onUpdate: (_view, batch) => batch && batches.push(batch.map((item) => item.path)),
  });
  assert.ok(batches.length >= 1, "a streamed batch arrived before the answer");
  assert.equal(batches[0][0], STRIPE);
  assert.deepEqual(answer.stages, ["prefilter"]);
  assert.equal(answer.items[0].path, STRIPE);
  assert.deepEqual(listedPaths(answer.prompt ?? ""), answer.items.map((item) => item.path));
});

test("the progress message names the question, shortened", () => {
  assert.equal(invocationMessage({ query: "refund a stripe charge" }), "Finding files relevant to “refund a stripe charge”");
  const long = invocationMessage({ query: `where ${"is the thing ".repeat(20)}` });
  assert.ok(long.endsWith("…”") && long.length < 100, long);
  assert.equal(invocationMessage({}), "Finding relevant files");
});
