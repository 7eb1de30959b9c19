// @ts-check
// Writes src/protocol.generated.ts, the TypeScript types of the filescout protocol, from the JSON
// Schema in protocol/filescout.schema.json. Run it with `npm run generate` whenever the schema
// changes; test/protocol.test.ts fails while the committed file and the schema disagree.

"use strict";

const { readFileSync, writeFileSync } = require("node:fs");
const path = require("node:path");
const { compile } = require("json-schema-to-typescript");

const PACKAGE = path.resolve(__dirname, "..");
const SCHEMA = path.resolve(PACKAGE, "..", "..", "protocol", "filescout.schema.json");
const OUTPUT = path.join(PACKAGE, "src", "protocol.generated.ts");

const BANNER = [
  "// Generated from protocol/filescout.schema.json by json-schema-to-typescript; do not edit by hand.",
  "// Regenerate with `npm run generate` in editor-clients/vscode.",
].join("\n");

/** @type {Partial<import("json-schema-to-typescript").Options>} */
const OPTIONS = {
  bannerComment: "",
  // Each definition is compiled on its own (see generate): declare only that one, and refer to
  // the others by name.
  declareExternallyReferenced: false,
  // Where the schema leaves additionalProperties unset (results, notifications), the type lists
  // its fields and nothing else rather than gaining a `[k: string]: unknown` signature.
  additionalProperties: false,
  // minItems/maxItems stay in the doc comments instead of turning arrays into tuple unions.
  ignoreMinAndMaxItems: true,
  // Every $ref points into the schema's own $defs.
  $refOptions: { resolve: { external: false } },
  style: {
    bracketSpacing: true,
    printWidth: 120,
    semi: true,
    singleQuote: false,
    tabWidth: 2,
    trailingComma: "all",
    useTabs: false,
  },
};

/**
 * Descriptions come from Python docstrings; drop the indentation of their continuation lines.
 * @param {unknown} node
 * @returns {unknown}
 */
function dedentDescriptions(node) {
  if (Array.isArray(node)) {
    return node.map(dedentDescriptions);
  }
  if (node === null || typeof node !== "object") {
    return node;
  }
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      key === "description" && typeof value === "string"
        ? value.replace(/\n[ \t]+/g, "\n")
        : dedentDescriptions(value),
    ]),
  );
}

/**
 * The text of src/protocol.generated.ts: one declaration per schema definition, in the schema's
 * order. The schema's root only holds the definitions, so each is compiled as a root of its own
 * (with the definitions beside it for its $refs) and nothing is emitted for the root itself.
 * @param {string} [schemaPath]
 * @returns {Promise<string>}
 */
async function generate(schemaPath = SCHEMA) {
  const schema = /** @type {{ $defs: Record<string, object> }} */ (
    dedentDescriptions(JSON.parse(readFileSync(schemaPath, "utf8")))
  );
  const declarations = [];
  for (const [name, definition] of Object.entries(schema.$defs)) {
    declarations.push(await compile({ ...definition, $defs: schema.$defs }, name, OPTIONS));
  }
  return `${BANNER}\n\n${declarations.join("\n")}`;
}

async function main() {
  writeFileSync(OUTPUT, await generate());
  console.log(`wrote ${path.relative(process.cwd(), OUTPUT)}`);
}

module.exports = { SCHEMA, OUTPUT, generate };

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
