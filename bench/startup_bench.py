"""Startup benchmark: a warm restart on an unchanged tree (server start to ready) and the time to
import the server, each round next to `git status` on the same tree; optionally the same for
another code tree (the code before a change), alternating round by round so that load drifts on
a shared machine hit both alike.

    python bench/startup_bench.py --workspace WS --cache DIR [--rounds 9]
        [--before TREE --before-cache DIR2]

DIR must hold an index of WS built by this code (`XDG_CACHE_HOME=DIR filescout index WS`), DIR2
one built by the code in TREE (a tree with `server/` and `protocol/`, e.g. from `git archive
COMMIT server protocol | tar x -C TREE`): an index of a newer schema is not opened by older
code. "Ready" is the `filescout/status` notification that reports the scan finished.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness.wire import ProgressClient

SERVE_PATH_IMPORTS = "import filescout.cli, filescout.lsp.app"


def code_env(tree: Path | None) -> dict[str, str]:
    """The environment that runs the code in `tree` (None: the installed code)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if tree is not None:
        env["PYTHONPATH"] = f"{tree / 'server'}{os.pathsep}{tree / 'protocol'}"
    return env


def import_seconds(tree: Path | None) -> float:
    """Interpreter start plus importing what `filescout serve` imports before it reads a message."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", SERVE_PATH_IMPORTS], env=code_env(tree), check=True)
    return time.perf_counter() - started


async def warm_restart(root: Path, cache: Path, tree: Path | None) -> float:
    """`cache` is an XDG_CACHE_HOME: the index is in its filescout/ folder."""
    client = await ProgressClient.start(root, cache / "filescout", base_env=code_env(tree))
    ready = await client.phase_time("annotating")
    await client.wait_for_progress("end")
    await client.stop()
    return ready - client.started


def git_status_seconds(root: Path) -> float | None:
    """None when the workspace is not a git work tree (filescout walks it)."""
    started = time.perf_counter()
    done = subprocess.run(
        ["git", "status", "--porcelain"], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - started if done.returncode == 0 else None


async def main_async(args: argparse.Namespace) -> dict[str, list[float]]:
    codes: list[tuple[str, Path | None, Path]] = [("after", None, args.cache)]
    if args.before is not None:
        codes.insert(0, ("before", args.before, args.before_cache))
    results: dict[str, list[float]] = {"load": [], "git_status": []}
    for round_number in range(args.rounds):
        results["load"].append(os.getloadavg()[0])
        for name, tree, cache in codes:
            results.setdefault(f"import_{name}", []).append(import_seconds(tree))
            results.setdefault(f"warm_{name}", []).append(await warm_restart(args.workspace, cache, tree))
        if (seconds := git_status_seconds(args.workspace)) is not None:
            results["git_status"].append(seconds)
        shown = ", ".join(f"{key} {values[-1]:.2f}" for key, values in results.items() if values)
        print(f"round {round_number + 1}: {shown}", file=sys.stderr, flush=True)
    return results


def report(results: dict[str, list[float]], codes: list[str]) -> str:
    git = statistics.median(results["git_status"]) if results["git_status"] else None

    def runs(key: str) -> str:
        return ", ".join(f"{value:.2f}" for value in results[key])

    lines = [
        f"{len(results['load'])} rounds; load average (1 min) at each round's start: "
        f"{', '.join(f'{value:.2f}' for value in results['load'])}",
        "",
        "| code | warm restart to ready, median (all rounds) | ratio to `git status` | import, median |",
        "|---|---|---|---|",
    ]
    for name in codes:
        warm = statistics.median(results[f"warm_{name}"])
        lines.append(
            f"| {name} | {warm:.2f} s ({runs(f'warm_{name}')}) | {f'×{warm / git:.2f}' if git else 'n/a'} "
            f"| {statistics.median(results[f'import_{name}']):.2f} s |"
        )
    if git is not None:
        lines.append(f"| `git status --porcelain` | {git:.2f} s ({runs('git_status')}) | | |")
    else:
        lines.append("| `git status` | not a git work tree: filescout walks it | | |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True, help="XDG_CACHE_HOME holding this code's index")
    parser.add_argument("--before", type=Path, help="another code tree (with server/ and protocol/)")
    parser.add_argument("--before-cache", type=Path, help="XDG_CACHE_HOME holding that code's index")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    if (args.before is None) != (args.before_cache is None):
        parser.error("--before and --before-cache go together")
    results = asyncio.run(main_async(args))
    print(report(results, ["before", "after"] if args.before is not None else ["after"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
