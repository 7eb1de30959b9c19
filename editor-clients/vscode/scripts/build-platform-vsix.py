#!/usr/bin/env python3
"""Build the self-contained VSIX of this platform: the extension with the filescout server inside
it, so that installing the extension is all a user does.

    .venv/bin/python editor-clients/vscode/scripts/build-platform-vsix.py

1. freezes the server with PyInstaller (packaging/filescout.spec: one folder, the program and
   the libraries it loads) under build/frozen/TARGET/dist, resolves its symbolic links (a VSIX
   keeps none) and checks that it runs;
2. copies the extension folder to build/frozen/TARGET/extension with the frozen server in it
   at server/TARGET/ (src/bundledServer.ts finds it there), so that the extension folder itself
   never holds one platform's server (a plain `npm run package` would take it along);
3. runs `vsce package --target TARGET` in that copy (TARGET is this machine's: linux-x64,
   darwin-arm64, win32-x64, alpine-x64, ...), which compiles the extension first;
4. prints the VSIX's size, unpacked size and the time each step took.

PyInstaller does not cross-compile: each platform's VSIX is built on that platform. The Python
that runs this script must have filescout installed with the `freeze` extra (`pip install -e
'.[freeze]'`; `[freeze,team,mcp,images]` for a server with every face and pictures for a model
that can see; the spec takes `mcp`, `team` and Pillow when they are installed). Needs Node.js 20
and npm; vsce comes from the npm registry through npx. Nothing else is downloaded.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

EXTENSION = Path(__file__).resolve().parents[1]
REPO = EXTENSION.parents[1]
SPEC = REPO / "packaging" / "filescout.spec"
VSCE = "@vscode/vsce@4"
SERVERS_IGNORED = "server/**"
"""The line of .vscodeignore that keeps servers out of the universal VSIX; not in the copy."""
ARCHITECTURES = {
    "x86_64": "x64",
    "amd64": "x64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "armv7l": "armhf",
}


def vsce_target() -> str:
    """This machine's platform as vsce names it (`vsce package --target`)."""
    machine = platform.machine().lower()
    arch = ARCHITECTURES.get(machine)
    if arch is None:
        raise SystemExit(f"no VS Code target for the architecture {machine!r}")
    if sys.platform == "win32":
        system = "win32"
    elif sys.platform == "darwin":
        system = "darwin"
    elif sys.platform.startswith("linux"):
        system = "linux" if platform.libc_ver()[0] == "glibc" else "alpine"  # musl: Alpine's builds
    else:
        raise SystemExit(f"no VS Code target for the platform {sys.platform!r}")
    if arch == "armhf" and system != "linux":
        raise SystemExit(f"no VS Code target for {system} on {machine}")
    return f"{system}-{arch}"


def executable_name(target: str) -> str:
    return "filescout.exe" if target.startswith("win32") else "filescout"


def run(command: list[str], **options: object) -> None:
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, **options)  # type: ignore[call-overload]


def freeze(python: str, target: str, build: Path, without: list[str]) -> tuple[Path, float]:
    """The frozen server's folder (with the program in it), and the seconds it took."""
    has_pyinstaller = (
        subprocess.run([python, "-c", "import PyInstaller"], capture_output=True).returncode == 0
    )
    if not has_pyinstaller:
        raise SystemExit(f"{python} has no PyInstaller: pip install -e '.[freeze]' (in {REPO})")
    started = time.perf_counter()
    command = [
        python,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--log-level",
        "WARN",
        "--distpath",
        str(build / "dist"),
        "--workpath",
        str(build / "work"),
        str(SPEC),
    ]
    if without:
        command += ["--", *(f"--without={face}" for face in without)]
    run(command, cwd=REPO)
    frozen = build / "dist" / "filescout"
    without_links(frozen)
    return frozen, time.perf_counter() - started


def without_links(frozen: Path) -> None:
    """The frozen folder with no symbolic links, as it will be unpacked from the VSIX (a zip keeps
    none; vsce would store a copy of each target). PyInstaller links the libraries a wheel
    carries in its `<package>.libs` folder into the top folder too; the wheel's own extensions
    find them there through their RPATH (auditwheel sets it), so those links go. Any other link
    becomes a copy of what it points to."""
    for link in sorted(path for path in frozen.rglob("*") if path.is_symlink()):
        target = link.resolve()
        link.unlink()
        if target.parent.name.endswith(".libs") and target.is_relative_to(frozen.resolve()):
            continue
        if target.is_dir():
            shutil.copytree(target, link)
        else:
            shutil.copy2(target, link)


def check(program: Path) -> str:
    """`filescout --version` from the frozen program: it starts, and says which release it is."""
    done = subprocess.run([str(program), "--version"], capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not done.stdout.startswith("filescout "):
        raise SystemExit(f"the frozen server does not start: {done.stdout}{done.stderr}")
    return done.stdout.strip()


def ignore_at_top(*names: str) -> Callable[[str, list[str]], set[str]]:
    """shutil.copytree's `ignore` for entries of the extension folder itself (node_modules has
    folders named `server` too)."""

    def ignored(folder: str, entries: list[str]) -> set[str]:
        if Path(folder) != EXTENSION:
            return set()
        return {entry for entry in entries if entry in names or entry.endswith(".vsix")}

    return ignored


def stage(frozen: Path, target: str, staging: Path) -> Path:
    """A copy of the extension folder with the frozen server at server/TARGET, and a .vscodeignore
    that lets it in."""
    if not (EXTENSION / "node_modules").is_dir():
        run([shutil.which("npm") or "npm", "ci", "--no-audit", "--no-fund"], cwd=EXTENSION)
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(EXTENSION, staging, symlinks=True, ignore=ignore_at_top("server", "out", ".vscode-test"))
    shutil.copytree(frozen, staging / "server" / target)
    ignore = staging / ".vscodeignore"
    kept = [
        line for line in ignore.read_text(encoding="utf-8").splitlines() if line.strip() != SERVERS_IGNORED
    ]
    ignore.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return staging


def npx() -> str:
    found = shutil.which("npx")
    if found is None:
        raise SystemExit("npx not found: install Node.js 20 (with npm)")
    return found


def package(staging: Path, target: str, output: Path) -> float:
    """`vsce package --target` in the staged copy (its prepublish script compiles the extension);
    the seconds it took."""
    started = time.perf_counter()
    output.parent.mkdir(parents=True, exist_ok=True)
    scripts = json.loads((staging / "package.json").read_text(encoding="utf-8")).get("scripts", {})
    if "vscode:prepublish" not in scripts:
        run([shutil.which("npm") or "npm", "run", "build"], cwd=staging)
    command = [
        npx(),
        "--yes",
        VSCE,
        "package",
        "--target",
        target,
        "--allow-missing-repository",
        "-o",
        str(output),
    ]
    run(command, cwd=staging)
    return time.perf_counter() - started


def describe_vsix(vsix: Path) -> dict[str, object]:
    with zipfile.ZipFile(vsix) as archive:
        entries = archive.infolist()
        server = [entry for entry in entries if entry.filename.startswith("extension/server/")]
        return {
            "vsix_bytes": vsix.stat().st_size,
            "unpacked_bytes": sum(entry.file_size for entry in entries),
            "entries": len(entries),
            "server_unpacked_bytes": sum(entry.file_size for entry in server),
            "server_entries": len(server),
        }


def megabytes(size: object) -> str:
    return f"{int(size) / 1e6:.1f} MB"  # type: ignore[call-overload]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", help="vsce's name of this platform (default: worked out)")
    parser.add_argument(
        "--python", default=sys.executable, help="the Python that runs PyInstaller (default: this one)"
    )
    parser.add_argument("--build", type=Path, help="PyInstaller's folders (default: build/frozen/TARGET)")
    parser.add_argument(
        "--output", type=Path, help="the VSIX (default: editor-clients/vscode/filescout-TARGET.vsix)"
    )
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        choices=["mcp", "team"],
        help="leave out a face (repeatable)",
    )
    parser.add_argument("--freeze-only", action="store_true", help="freeze and check the server; no VSIX")
    parser.add_argument(
        "--reuse", action="store_true", help="package the server frozen before, without freezing"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    target = args.target or vsce_target()
    if target != vsce_target():
        raise SystemExit(
            f"this machine builds {vsce_target()}, not {target}: PyInstaller does not cross-compile"
        )
    build = (args.build or REPO / "build" / "frozen" / target).resolve()
    figures: dict[str, object] = {"target": target}

    if args.reuse:
        frozen = build / "dist" / "filescout"
        if not (frozen / executable_name(target)).is_file():
            raise SystemExit(f"nothing frozen in {frozen}: run without --reuse first")
    else:
        frozen, figures["freeze_seconds"] = freeze(args.python, target, build, args.without)
    program = frozen / executable_name(target)
    figures["program"] = str(program)
    figures["version"] = check(program)
    figures["frozen_bytes"] = sum(path.stat().st_size for path in frozen.rglob("*") if path.is_file())
    print(
        f"frozen server: {program} ({figures['version']}, {megabytes(figures['frozen_bytes'])})", flush=True
    )
    if args.freeze_only:
        print(json.dumps(figures))
        return 0

    version = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))["version"]
    output = (args.output or EXTENSION / f"filescout-{target}-{version}.vsix").resolve()
    staging = stage(frozen, target, build / "extension")
    figures["package_seconds"] = package(staging, target, output)
    figures |= {"vsix": str(output), **describe_vsix(output)}
    print(
        f"{output}: {megabytes(figures['vsix_bytes'])} ({megabytes(figures['unpacked_bytes'])} unpacked, "
        f"{figures['entries']} files; the server {megabytes(figures['server_unpacked_bytes'])})",
        flush=True,
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
