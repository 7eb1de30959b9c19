// The server with a model endpoint that never answers: which API key reaches the endpoint
// (settings.ts), and cancelling the #filescout tool while its request waits on the model.

import { strict as assert } from "node:assert";
import { createServer, Server } from "node:http";
import { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { CancellationTokenSource } from "vscode-jsonrpc/node";
import { CancelledError, findRelevantFiles, invokeFindRelevantFilesTool } from "../src/relevantFiles";
import { ConfigurationReader, configurationChange, effectiveApiKey, serverSettings } from "../src/settings";
import { INDEX_DIR, SHOP, TestServer, startServer, waitFor } from "./harness";

const STORED_KEY = "sk-from-secret-storage";
const SETTING_KEY = "sk-from-settings";
const ROTATED_KEY = "sk-rotated";
const QUESTION = "refund a stripe charge";

interface ModelCall {
  authorization: string | undefined;
  body: string;
  /** The caller closed the connection (the server gave up on the call). */
  closed: boolean;
}

/** An OpenAI-compatible endpoint that records each call and never answers, so a request that
 * reaches the model stage stays in flight until it is cancelled. */
class SilentModelEndpoint {
  readonly calls: ModelCall[] = [];
  private readonly http: Server = createServer((request, response) => {
    const call: ModelCall = { authorization: request.headers.authorization, body: "", closed: false };
    this.calls.push(call);
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => (call.body += chunk));
    response.on("close", () => (call.closed = true));
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.http.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}/v1`;
  }

  /** Resolves with the first call whose request mentions `text`. */
  async callAbout(text: string, after = 0): Promise<ModelCall> {
    const found = () => this.calls.slice(after).find((call) => call.body.includes(text));
    await waitFor(() => found() !== undefined, `a model call about "${text}"`);
    return found()!;
  }

  close(): void {
    this.http.closeAllConnections();
    this.http.close();
  }
}

function configuration(values: Record<string, unknown>): ConfigurationReader {
  return { get: <T>(key: string) => values[key] as T | undefined };
}

const endpoint = new SilentModelEndpoint();
let userSettings: ConfigurationReader;
let server: TestServer;

before(async () => {
  userSettings = configuration({
    exclude: [`${INDEX_DIR}/`],
    "model.model": "test-model",
    "model.baseUrl": await endpoint.listen(),
    "model.apiKey": SETTING_KEY,
    "model.concurrency": 16, // room for the request's calls beside the annotation calls that hang
  });
  server = await startServer(SHOP, serverSettings(userSettings, STORED_KEY));
});

after(async () => {
  await server?.close();
  endpoint.close();
});

test("the stored API key wins over the setting, and the setting counts when nothing is stored", () => {
  assert.equal(effectiveApiKey(STORED_KEY, SETTING_KEY), STORED_KEY);
  assert.equal(effectiveApiKey(undefined, SETTING_KEY), SETTING_KEY);
  assert.equal(effectiveApiKey("  ", SETTING_KEY), SETTING_KEY);
  assert.equal(effectiveApiKey(undefined, null), undefined);
  assert.equal(effectiveApiKey(undefined, ""), undefined);
  assert.equal(serverSettings(userSettings).model?.apiKey, SETTING_KEY);
});

test("the stored key is the one the model endpoint receives", async () => {
  await waitFor(() => endpoint.calls.length > 0, "a model call");
  assert.deepEqual(new Set(endpoint.calls.map((call) => call.authorization)), new Set([`Bearer ${STORED_KEY}`]));
});

// A bounded wait: without the cancel reaching the server, the model call would hang for a minute.
test("cancelling the tool mid-request ends it promptly, stops the model call, and the server keeps serving", { timeout: 20000 }, async () => {
  const source = new CancellationTokenSource();
  const pending = invokeFindRelevantFilesTool(server.client, { query: QUESTION }, { cancel: source.token });
  const settled = pending.then(
    () => "answered",
    (error: unknown) => error,
  );
  const call = await endpoint.callAbout(QUESTION);
  assert.equal(await Promise.race([settled, new Promise((resolve) => setTimeout(() => resolve("waiting"), 300))]), "waiting");
  const cancelledAt = Date.now();
  source.cancel();
  const outcome = await settled;
  assert.ok(outcome instanceof CancelledError, `the invocation ended with ${String(outcome)}`);
  assert.ok(Date.now() - cancelledAt < 3000, `it took ${Date.now() - cancelledAt} ms to end`);
  await waitFor(() => call.closed, "the server to drop the model call", 5000);
  const status = await server.client.status();
  assert.equal(status.files, Object.keys(SHOP).length);
  const answer = await findRelevantFiles(server.client, { query: QUESTION }, { useModel: false });
  assert.equal(answer.items[0].path, "src/shop/payments/stripe_gateway.py");
});

test("a changed key reaches the server with the other settings and is used from then on", { timeout: 20000 }, async () => {
  const earlier = endpoint.calls.length;
  await server.connection.sendNotification(
    "workspace/didChangeConfiguration",
    configurationChange(serverSettings(userSettings, ROTATED_KEY)),
  );
  // The new model client takes up the files still waiting for a summary: its first calls show it is in place.
  await waitFor(
    () => endpoint.calls.slice(earlier).some((call) => call.authorization === `Bearer ${ROTATED_KEY}`),
    "a model call with the new key",
  );
  const reconfigured = endpoint.calls.length;
  const source = new CancellationTokenSource();
  const pending = invokeFindRelevantFilesTool(server.client, { query: QUESTION }, { cancel: source.token });
  try {
    const call = await endpoint.callAbout(QUESTION, reconfigured);
    assert.equal(call.authorization, `Bearer ${ROTATED_KEY}`);
  } finally {
    source.cancel();
    await pending.catch(() => undefined);
  }
});
