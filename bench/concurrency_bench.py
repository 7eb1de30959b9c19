"""Concurrency benchmark: 50 findRelevant questions at once on an idle index, and a small
request (status, then one page of getFiles) sent while they run.

    python bench/concurrency_bench.py [--workspace DIR] [--files 20000] [--runs 2]

The engine runs in this process on the workspace's index (indexed first, once). Reported: the 50
questions one after another, the same 50 at once (total, and each one's latency p50/p95), and
how long the small requests waited. Goals: the small request answers within 100 ms; the 50 at
once take no longer than one after another divided by the cores the work can use.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from filescout.engine import Workspace
from filescout_protocol.types import FindRelevantParams, GetFilesParams
from harness import launch
from harness.stats import percentile
from harness.workspaces import generate, queries


async def one_run(engine: Workspace, texts: list[str]) -> dict[str, float]:
    started = time.perf_counter()
    for text in texts:
        await engine.find_relevant(FindRelevantParams(query=text))
    sequential = time.perf_counter() - started

    async def timed(text: str) -> float:
        began = time.perf_counter()
        await engine.find_relevant(FindRelevantParams(query=text))
        return time.perf_counter() - began

    async def small() -> tuple[float, float]:
        await asyncio.sleep(0.05)  # the questions are all under way
        began = time.perf_counter()
        await engine.status()
        status = time.perf_counter() - began
        began = time.perf_counter()
        await engine.files_page(GetFilesParams(limit=100))
        return status, time.perf_counter() - began

    started = time.perf_counter()
    *latencies, (status, page) = await asyncio.gather(*(timed(text) for text in texts), small())
    together = time.perf_counter() - started
    latencies.sort()
    return {
        "sequential": sequential,
        "together": together,
        "p50": statistics.median(latencies),
        "p95": percentile(latencies, 0.95),
        "status": status,
        "page": page,
    }


async def main_async(args: argparse.Namespace) -> None:
    if not args.workspace.exists():
        print(f"generating {args.files} files in {args.workspace} ...", file=sys.stderr, flush=True)
        generate(args.workspace, args.files, seed=7)
    cache = Path(tempfile.mkdtemp(prefix="filescout-concurrency-"))
    engine = await Workspace.open(args.workspace, env=launch.server_env(cache))
    try:
        engine.start_indexing("index")
        await engine.wait_idle()
        texts = queries(50)
        for text in texts[:5]:  # warm the page cache
            await engine.find_relevant(FindRelevantParams(query=text))
        runs = [await one_run(engine, texts) for _ in range(args.runs)]
    finally:
        await engine.close()
    ms = lambda seconds: f"{seconds * 1000:.0f} ms"  # noqa: E731
    cores = os.cpu_count() or 1
    print(f"## Concurrency — {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, {cores} cores\n")
    print(
        "| run | 50 one after another | 50 at once | each, p50 / p95 | status during | getFiles page during |"
    )
    print("|---|---|---|---|---|---|")
    for number, run in enumerate(runs, 1):
        print(
            f"| {number} | {ms(run['sequential'])} | {ms(run['together'])} | {ms(run['p50'])} / "
            f"{ms(run['p95'])} | {ms(run['status'])} | {ms(run['page'])} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, default=Path(__file__).parent / ".work" / "ws20k")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=2)
    asyncio.run(main_async(parser.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
