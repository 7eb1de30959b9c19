// The filescout protocol as the client uses it. The reference is protocol/PROTOCOL.md and the
// JSON Schema generated next to it. The payload types are generated from that schema into
// protocol.generated.ts (`npm run generate`); the method and command names stay here, checked
// against the schema's messages by test/protocol.test.ts. The client tests run these shapes
// against the real server, which rejects any field it does not know.

import { FileItem, GetFilesParams, RelevantItem } from "./protocol.generated";

export * from "./protocol.generated";

export type ProgressToken = NonNullable<GetFilesParams["partialResultToken"]>;
export type FileStatus = FileItem["status"];
export type FileKind = FileItem["kind"];
export type RelevanceStage = RelevantItem["stage"];

export const Methods = {
  getFiles: "files/getFiles",
  findRelevant: "files/findRelevant",
  getOverview: "files/getOverview",
  didAccess: "files/didAccess",
  status: "filescout/status",
} as const;

export const Commands = {
  reindex: "filescout.reindex",
  status: "filescout.status",
  annotate: "filescout.annotate",
} as const;
