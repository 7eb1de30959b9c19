"""The frozen server a platform's VSIX carries (packaging/filescout.spec, built by
editor-clients/vscode/scripts/build-platform-vsix.py) against the same code run by this Python:
start-up (`filescout --version`; `filescout serve` to its initialize reply), median of N each,
the two alternating round by round; then a cold index of a generated workspace with each, to the
end of the pass's progress, with the worker processes each started and what the index holds; and
the VSIX's size when one is given.

    python bench/frozen_bench.py --frozen build/frozen/linux-x64/dist/filescout/filescout
        [--vsix editor-clients/vscode/filescout-linux-x64-0.1.0.vsix] [--rounds 5] [--files 2000]
        [--work DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from harness import launch, procfs
from harness.wire import ProgressClient, WireClient, start_command
from harness.workspaces import generate

NO_HANDOFF = {"FILESCOUT_BACKGROUND": "0"}
"""A server stopped right after its initialize reply leaves its first scan to nobody."""
WORKER_MARK = b"--multiprocessing-fork"
"""In the command line of every worker of the pool, frozen or not (multiprocessing's spawn)."""


def version_seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([*command, "--version"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


async def initialize_seconds(command: list[str], root: Path, cache: Path) -> float:
    """From spawning `serve` to the bytes of its initialize reply."""
    started = time.perf_counter()
    process = await launch.spawn([*command, "serve"], launch.server_env(cache, NO_HANDOFF))
    client = WireClient(process)
    reply = await client.timed(
        "initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}}
    )
    assert reply.arrived is not None and reply.error is None, reply.error
    client.notify("initialized", {})
    await client.stop()
    return reply.arrived - started


async def watch_workers(pid: int, seen: set[int], stop: asyncio.Event) -> None:
    """The pids of the server's pool workers, sampled until `stop`."""
    while not stop.is_set():
        for child in procfs.descendants(pid):
            if WORKER_MARK in procfs.command_line(child):
                seen.add(child)
        try:
            await asyncio.wait_for(stop.wait(), 0.1)
        except asyncio.TimeoutError:
            pass


async def cold_index(command: list[str], root: Path, cache: Path) -> dict[str, object]:
    """A cold index to the end of the pass's progress: seconds, the pool's workers seen, the
    files by status."""
    client = await start_command([*command, "serve"], root, cache, kind=ProgressClient)
    assert isinstance(client, ProgressClient)
    seen: set[int] = set()
    stop = asyncio.Event()
    watcher = asyncio.create_task(watch_workers(client.pid, seen, stop))
    try:
        ended = await client.wait_for_progress("end")
        status = await client.command("filescout.status")
    finally:
        stop.set()
        await watcher
        await client.stop()
    return {"seconds": ended - client.started, "workers": len(seen), "by_status": status["byStatus"]}


def vsix_figures(vsix: Path) -> dict[str, int]:
    with zipfile.ZipFile(vsix) as archive:
        entries = archive.infolist()
        return {
            "vsix_bytes": vsix.stat().st_size,
            "unpacked_bytes": sum(entry.file_size for entry in entries),
            "entries": len(entries),
        }


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


async def main_async(args: argparse.Namespace, work: Path) -> dict[str, object]:
    commands = {"frozen": [str(args.frozen.resolve())], "python": launch.command()[:-1]}
    small = work / "small"
    generate(small, 20, seed=7)
    results: dict[str, object] = {}
    timings: dict[str, list[float]] = {}
    for round_number in range(args.rounds):
        for name, command in commands.items():
            timings.setdefault(f"version_{name}", []).append(version_seconds(command))
            cache = work / f"cache-init-{name}-{round_number}"
            timings.setdefault(f"initialize_{name}", []).append(
                await initialize_seconds(command, small, cache)
            )
        print(
            f"round {round_number + 1}: "
            + ", ".join(f"{key} {values[-1]:.3f}" for key, values in timings.items()),
            file=sys.stderr,
            flush=True,
        )
    results["startup"] = timings
    for key, values in timings.items():
        print(f"{key}: median {median_ms(values)} of {len(values)}")

    tree = work / "workspace"
    generate(tree, args.files, seed=7)
    for name, command in commands.items():
        index = await cold_index(command, tree, work / f"cache-cold-{name}")
        results[f"cold_index_{name}"] = index
        print(
            f"cold index, {args.files} files, {name}: {index['seconds']:.2f} s, {index['workers']} workers, "
            f"files by status {index['by_status']}"
        )
    if args.vsix is not None:
        results["vsix"] = vsix_figures(args.vsix)
        figures = results["vsix"]
        assert isinstance(figures, dict)
        print(
            f"{args.vsix.name}: {figures['vsix_bytes'] / 1e6:.1f} MB, {figures['unpacked_bytes'] / 1e6:.1f} MB "
            f"unpacked, {figures['entries']} files"
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--frozen", type=Path, required=True, help="the frozen filescout program")
    parser.add_argument("--vsix", type=Path, help="a VSIX to report the size of")
    parser.add_argument("--rounds", type=int, default=5, help="start-ups of each kind (median)")
    parser.add_argument("--files", type=int, default=2000, help="files of the workspace indexed cold")
    parser.add_argument(
        "--work", type=Path, help="where the workspaces and indexes go (default: a temporary folder)"
    )
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args(argv)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        results = asyncio.run(main_async(args, args.work))
    else:
        with tempfile.TemporaryDirectory(prefix="frozen-bench-") as folder:
            results = asyncio.run(main_async(args, Path(folder)))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
