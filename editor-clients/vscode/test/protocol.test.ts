// The generated protocol types against the schema they come from: regenerating them must give the
// committed src/protocol.generated.ts, and the client's method and command names must be the
// messages the schema lists.

import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { Commands, Methods } from "../src/protocol";

interface Generator {
  SCHEMA: string;
  OUTPUT: string;
  generate(): Promise<string>;
}

// This file runs from out/test/; the generator is plain JavaScript in the package's scripts/.
const generator = require(join(__dirname, "..", "..", "scripts", "generate-protocol.js")) as Generator;

function firstDifference(committed: string, generated: string): string {
  const left = committed.split("\n");
  const right = generated.split("\n");
  for (let line = 0; line < Math.max(left.length, right.length); line++) {
    if (left[line] !== right[line]) {
      return `line ${line + 1} is ${JSON.stringify(left[line] ?? null)}, the schema gives ${JSON.stringify(right[line] ?? null)}`;
    }
  }
  return "";
}

test("src/protocol.generated.ts is what the schema generates", async () => {
  const committed = readFileSync(generator.OUTPUT, "utf8");
  const generated = await generator.generate();
  assert.ok(
    committed === generated,
    "src/protocol.generated.ts does not match protocol/filescout.schema.json " +
      `(${firstDifference(committed, generated)}): run \`npm run generate\` in editor-clients/vscode.`,
  );
});

test("the client's method and command names are the schema's messages", () => {
  const schema = JSON.parse(readFileSync(generator.SCHEMA, "utf8")) as { "x-messages": Record<string, unknown> };
  const names: string[] = [...Object.values(Methods), ...Object.values(Commands)];
  assert.deepEqual(names.sort(), Object.keys(schema["x-messages"]).sort());
});
