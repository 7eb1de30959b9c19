// The server a platform-specific VSIX carries: found at server/<target>/ for this platform only,
// started with `serve`, and given back its execute bit when unpacking lost it.

import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { Platform, findBundledServer, targetsFor } from "../src/bundledServer";

const LINUX_X64: Platform = { platform: "linux", arch: "x64", musl: false };

function extensionWith(...programs: string[]): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "filescout-bundle-"));
  for (const program of programs) {
    fs.mkdirSync(path.dirname(path.join(root, program)), { recursive: true });
    fs.writeFileSync(path.join(root, program), "#!/bin/sh\n", { mode: 0o755 });
  }
  return root;
}

test("vsce's target names for each platform", () => {
  assert.deepEqual(targetsFor(LINUX_X64), ["linux-x64", "alpine-x64"]);
  assert.deepEqual(targetsFor({ platform: "linux", arch: "arm64", musl: true }), ["alpine-arm64", "linux-arm64"]);
  assert.deepEqual(targetsFor({ platform: "linux", arch: "arm", musl: false }), ["linux-armhf"]);
  assert.deepEqual(targetsFor({ platform: "darwin", arch: "arm64", musl: false }), ["darwin-arm64"]);
  assert.deepEqual(targetsFor({ platform: "win32", arch: "x64", musl: false }), ["win32-x64"]);
  assert.deepEqual(targetsFor({ platform: "linux", arch: "ia32", musl: false }), []);
  assert.deepEqual(targetsFor({ platform: "freebsd", arch: "x64", musl: false }), []);
});

test("the bundled server of this platform is started with serve", () => {
  const root = extensionWith("server/linux-x64/filescout", "server/linux-x64/_internal/libpython3.so");
  assert.deepEqual(findBundledServer(root, LINUX_X64), {
    command: path.join(root, "server", "linux-x64", "filescout"),
    args: ["serve"],
    target: "linux-x64",
  });
  const windows = extensionWith("server/win32-x64/filescout.exe");
  assert.equal(
    findBundledServer(windows, { platform: "win32", arch: "x64", musl: false })?.command,
    path.join(windows, "server", "win32-x64", "filescout.exe"),
  );
});

test("no bundled server: the universal VSIX, or another platform's", () => {
  assert.equal(findBundledServer(extensionWith(), LINUX_X64), undefined);
  assert.equal(findBundledServer(extensionWith("server/darwin-arm64/filescout"), LINUX_X64), undefined);
  assert.equal(findBundledServer(extensionWith("server/linux-x64/filescout.exe"), LINUX_X64), undefined);
});

test("a program that lost its execute bit gets it back", { skip: process.platform === "win32" }, () => {
  const root = extensionWith("server/linux-x64/filescout");
  const program = path.join(root, "server", "linux-x64", "filescout");
  fs.chmodSync(program, 0o644);
  assert.equal(findBundledServer(root, LINUX_X64)?.command, program);
  assert.equal(fs.statSync(program).mode & 0o111, 0o111);
});

test("a folder where the program should be is not a server", () => {
  const root = extensionWith();
  fs.mkdirSync(path.join(root, "server", "linux-x64", "filescout"), { recursive: true });
  assert.equal(findBundledServer(root, LINUX_X64), undefined);
});
