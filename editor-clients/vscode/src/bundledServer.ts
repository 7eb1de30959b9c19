// The server a platform-specific VSIX carries: scripts/build-platform-vsix.py freezes filescout
// and puts it at `server/<target>/filescout[.exe]` in the extension folder, <target> being
// vsce's name of the platform (linux-x64, darwin-arm64, win32-x64, alpine-arm64, ...). The
// extension starts it when no filescout.serverCommand or filescout.pythonPath says otherwise,
// so installing the extension is all a user does. Independent of VS Code, for the tests.

import * as fs from "fs";
import * as path from "path";

export interface BundledServer {
  command: string;
  args: string[];
  /** vsce's name of the platform the server was built for. */
  target: string;
}

export interface Platform {
  platform: NodeJS.Platform;
  arch: string;
  /** Linux with musl (Alpine), whose VSIX is a target of its own. */
  musl: boolean;
}

const ARCHITECTURES: Record<string, string> = { x64: "x64", arm64: "arm64", arm: "armhf" };

/** The folder of the installed extension: this file is `<extension>/out/src/bundledServer.js`. */
export const EXTENSION_ROOT = path.resolve(__dirname, "..", "..");

/** musl's loader is /lib/ld-musl-<arch>.so.1; glibc has none of that name. */
function runsOnMusl(): boolean {
  if (process.platform !== "linux") {
    return false;
  }
  try {
    return fs.readdirSync("/lib").some((name) => name.startsWith("ld-musl-"));
  } catch {
    return false;
  }
}

export function currentPlatform(): Platform {
  return { platform: process.platform, arch: process.arch, musl: runsOnMusl() };
}

/** vsce's names for the platform, the likeliest first (none where VS Code has no target). */
export function targetsFor({ platform, arch, musl }: Platform): string[] {
  const cpu = ARCHITECTURES[arch];
  if (cpu === undefined) {
    return [];
  }
  switch (platform) {
    case "win32":
    case "darwin":
      return cpu === "armhf" ? [] : [`${platform}-${cpu}`];
    case "linux":
      if (cpu === "armhf") {
        return ["linux-armhf"];
      }
      return musl ? [`alpine-${cpu}`, `linux-${cpu}`] : [`linux-${cpu}`, `alpine-${cpu}`];
    default:
      return [];
  }
}

function executable(file: string, platform: NodeJS.Platform): boolean {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    if (platform === "win32") {
      return true; // Windows has no execute bit: an .exe that is there runs
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The bundled server's command, or undefined when this extension carries none for this
 * platform (the universal VSIX, a development checkout). A program that lost its execute bit
 * in unpacking gets it back. */
export function findBundledServer(
  extensionRoot: string = EXTENSION_ROOT,
  platform: Platform = currentPlatform(),
): BundledServer | undefined {
  const name = platform.platform === "win32" ? "filescout.exe" : "filescout";
  for (const target of targetsFor(platform)) {
    const program = path.join(extensionRoot, "server", target, name);
    if (!fs.existsSync(program)) {
      continue;
    }
    if (!executable(program, platform.platform)) {
      try {
        fs.chmodSync(program, 0o755);
      } catch {
        continue; // a read-only installation: nothing to be done here
      }
      if (!executable(program, platform.platform)) {
        continue;
      }
    }
    return { command: program, args: ["serve"], target };
  }
  return undefined;
}
