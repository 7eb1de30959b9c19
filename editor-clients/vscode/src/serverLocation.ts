// Which filescout server a folder starts, with no setting needed: the places a user's install puts
// it, in a fixed order (the README lists it), and the private environment the extension installs
// into when there is none. Independent of VS Code, for the tests.

import * as fs from "fs";
import * as os from "os";
import * as path from "path";

/** A command that starts the server, and where it was found (said to the user). */
export interface ServerCommand {
  command: string;
  args: string[];
  source: string;
}

export interface LocateOptions {
  /** The filescout.serverCommand setting (empty: not set). */
  serverCommand: string[];
  /** The filescout.pythonPath setting (empty: not set). */
  pythonPath: string;
  /** The server this extension carries for this platform, if any (bundledServer.ts). */
  bundled?: { command: string; args: string[] };
  /** The interpreter the Python extension selected for the folder, if it is installed. */
  pythonInterpreter?: string;
  /** The folder of the private environment the extension manages (in its global storage). */
  privateEnvironment?: string;
  env?: NodeJS.ProcessEnv;
  home?: string;
  platform?: NodeJS.Platform;
}

function isExecutable(file: string, platform: NodeJS.Platform): boolean {
  try {
    if (!fs.statSync(file).isFile()) {
      return false;
    }
    if (platform !== "win32") {
      fs.accessSync(file, fs.constants.X_OK);
    }
    return true;
  } catch {
    return false;
  }
}

/** The `filescout` program in a virtual environment's folder of programs. */
function programIn(binDir: string, platform: NodeJS.Platform): string {
  return path.join(binDir, platform === "win32" ? "filescout.exe" : "filescout");
}

/** The folder of programs of a virtual environment. */
export function binDirOf(environment: string, platform: NodeJS.Platform = process.platform): string {
  return path.join(environment, platform === "win32" ? "Scripts" : "bin");
}

/** The interpreter of a virtual environment. */
export function pythonOf(environment: string, platform: NodeJS.Platform = process.platform): string {
  return path.join(binDirOf(environment, platform), platform === "win32" ? "python.exe" : "python");
}

function onPath(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string | undefined {
  const separator = platform === "win32" ? ";" : ":";
  const entries = (env.PATH ?? env.Path ?? "").split(separator).filter(Boolean);
  for (const entry of entries) {
    const program = programIn(entry, platform);
    if (isExecutable(program, platform)) {
      return program;
    }
  }
  return undefined;
}

/** Where pipx, `uv tool` and `pip install --user` put filescout, in that order. */
export function installPlaces(env: NodeJS.ProcessEnv, home: string, platform: NodeJS.Platform): Array<{ program: string; source: string }> {
  const places: Array<{ program: string; source: string }> = [];
  const dataHome = env.XDG_DATA_HOME || path.join(home, ".local", "share");
  const pipxHomes = env.PIPX_HOME ? [env.PIPX_HOME] : [path.join(home, ".local", "pipx"), path.join(dataHome, "pipx")];
  for (const pipx of pipxHomes) {
    places.push({ program: programIn(binDirOf(path.join(pipx, "venvs", "filescout"), platform), platform), source: "pipx" });
  }
  const uvTools = env.UV_TOOL_DIR || (platform === "win32" && env.APPDATA ? path.join(env.APPDATA, "uv", "tools") : path.join(dataHome, "uv", "tools"));
  places.push({ program: programIn(binDirOf(path.join(uvTools, "filescout"), platform), platform), source: "uv tool" });
  // pipx's and uv's links, and `pip install --user`'s programs.
  const userBin = env.PIPX_BIN_DIR || path.join(home, ".local", "bin");
  places.push({ program: programIn(userBin, platform), source: "~/.local/bin" });
  if (platform === "darwin") {
    for (const version of pythonVersions(path.join(home, "Library", "Python"))) {
      places.push({ program: path.join(home, "Library", "Python", version, "bin", "filescout"), source: "pip --user" });
    }
  } else if (platform === "win32" && env.APPDATA) {
    for (const version of pythonVersions(path.join(env.APPDATA, "Python"))) {
      places.push({ program: path.join(env.APPDATA, "Python", version, "Scripts", "filescout.exe"), source: "pip --user" });
    }
  }
  return places;
}

/** The per-version folders of a user site (3.12, Python312...), newest first. */
function pythonVersions(folder: string): string[] {
  try {
    return fs
      .readdirSync(folder)
      .filter((name) => /\d/.test(name))
      .sort((a, b) => b.localeCompare(a, undefined, { numeric: true }));
  } catch {
    return [];
  }
}

/** The order in which a server is looked for (the README's list). */
export const SEARCH_ORDER = [
  "the filescout.serverCommand setting",
  "the filescout.pythonPath setting",
  "the server this extension carries (a platform-specific build)",
  "the Python extension's selected interpreter, when filescout is installed in it",
  "filescout on the PATH",
  "pipx, uv tool and pip --user installs (~/.local/bin and their environments)",
  "the private environment this extension installs into",
];

/** The server to start, or undefined when none is there (then: offer to install one). The
 * settings win even when what they name does not exist: starting it then says so. */
export function locateServer(options: LocateOptions): ServerCommand | undefined {
  const platform = options.platform ?? process.platform;
  const env = options.env ?? process.env;
  const home = options.home ?? os.homedir();
  if (options.serverCommand.length > 0) {
    const [command, ...args] = options.serverCommand;
    return { command, args, source: "the filescout.serverCommand setting" };
  }
  if (options.pythonPath) {
    return { command: options.pythonPath, args: ["-m", "filescout", "serve"], source: "the filescout.pythonPath setting" };
  }
  if (options.bundled) {
    return { ...options.bundled, source: "the server this extension carries" };
  }
  if (options.pythonInterpreter) {
    // filescout's program next to the interpreter: it is installed in that environment.
    const program = programIn(path.dirname(options.pythonInterpreter), platform);
    if (isExecutable(program, platform)) {
      return { command: options.pythonInterpreter, args: ["-m", "filescout", "serve"], source: "the Python extension's interpreter" };
    }
  }
  const found = onPath(env, platform);
  if (found) {
    return { command: found, args: ["serve"], source: "the PATH" };
  }
  for (const place of installPlaces(env, home, platform)) {
    if (isExecutable(place.program, platform)) {
      return { command: place.program, args: ["serve"], source: place.source };
    }
  }
  if (options.privateEnvironment) {
    const program = programIn(binDirOf(options.privateEnvironment, platform), platform);
    if (isExecutable(program, platform)) {
      return { command: program, args: ["serve"], source: "the extension's private environment" };
    }
  }
  return undefined;
}

/** The commands that install filescout into the private environment, as run and as shown. */
export function installCommands(
  python: string,
  environment: string,
  platform: NodeJS.Platform = process.platform,
): Array<{ command: string; args: string[] }> {
  return [
    { command: python, args: ["-m", "venv", environment] },
    { command: pythonOf(environment, platform), args: ["-m", "pip", "install", "--upgrade", "filescout"] },
  ];
}

/** A command line as a user would type it. */
export function shellLine({ command, args }: { command: string; args: string[] }): string {
  return [command, ...args].map((part) => (/^[\w@%+=:,./-]+$/.test(part) ? part : `"${part}"`)).join(" ");
}

/** What to do without a connection to the package index. */
export function offlineSteps(environment: string, platform: NodeJS.Platform = process.platform): string[] {
  const python = shellLine({ command: pythonOf(environment, platform), args: [] });
  return [
    "Without internet access: on a machine that has it, run",
    "  python3 -m pip download filescout -d filescout-wheels",
    "copy the filescout-wheels folder here, then run",
    `  ${python} -m pip install --no-index --find-links filescout-wheels filescout`,
    "(or install filescout any other way and set filescout.serverCommand to [\"/path/to/filescout\", \"serve\"]).",
  ];
}

/** The interpreter that creates the private environment: python3 (Windows: python) on the PATH. */
export function systemPython(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string | undefined {
  const separator = platform === "win32" ? ";" : ":";
  const names = platform === "win32" ? ["python.exe", "py.exe"] : ["python3", "python"];
  for (const entry of (env.PATH ?? env.Path ?? "").split(separator).filter(Boolean)) {
    for (const name of names) {
      if (isExecutable(path.join(entry, name), platform)) {
        return path.join(entry, name);
      }
    }
  }
  return undefined;
}
