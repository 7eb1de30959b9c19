"""Load benchmark over the LSP face: bursts of 50 requests sent at once to `filescout serve`,
during the cold index of a large workspace and again on the same workspace once it is idle.

    python bench/load_bench.py --workspace /path/to/ws100k [--cache DIR] [--burst 50]
        [--first-burst-after 3] [--pause 3] [--idle-bursts 5] [--keep-cache]
    python bench/load_bench.py --workspace /path/to/ws100k --cache DIR --probe

The server runs as a subprocess driven over stdio with nothing in between (times are when a
reply's bytes arrive). A burst mixes findRelevant questions (bench/latency_bench.py's, model-free)
with getFiles pages with and without filters; once the burst is under way, a status command and
one page of getFiles are sent together and timed: what an editor's status bar and file picker wait
for while a chat panel asks many questions. Bursts repeat `--pause` seconds after the previous
one finished, from `--first-burst-after` seconds after initialize until the index is idle (cold
run, on a fresh empty cache); then the server is restarted on the cache the cold run filled and,
once idle, gets `--idle-bursts` more. The server's RSS, open fds and threads are sampled from
/proc throughout. Errors are error replies and replies that never came. `--burst 0` is the
reference: the status and the page alone, every `--pause` seconds, during the same cold index.

`--probe` (on a cache a run kept) times what the status and the page wait for: each alone, the
two sent together, and the two sent during a burst of 30 questions only or of 20 listings only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.procfs import Sampler, load_average
from harness.stats import percentile
from harness.wire import REPLY_TIMEOUT, Reply, WireClient
from harness.workspaces import GET_FILES_FILTERS, queries

# Bursts


def burst_requests(size: int, texts: list[str], rng: random.Random) -> list[tuple[str, str, dict[str, Any]]]:
    """Three fifths questions, one fifth plain getFiles pages, one fifth filtered pages."""
    made: list[tuple[str, str, dict[str, Any]]] = []
    for number in range(size):
        slot = number % 5
        if slot < 3:
            params = {"query": rng.choice(texts), "limit": 20, "partialResultToken": f"r{rng.random()}"}
            made.append(("findRelevant", "files/findRelevant", params))
        elif slot == 3:
            made.append(("getFiles", "files/getFiles", {"limit": rng.choice([100, 500, 1000])}))
        else:
            filters = rng.choice(GET_FILES_FILTERS)
            made.append(("getFiles+filters", "files/getFiles", {"limit": 200, **filters}))
    rng.shuffle(made)
    return made


@dataclass
class BurstResult:
    phase: str
    started: float
    elapsed: float
    replies: list[Reply]
    status: Reply
    page: Reply


async def burst(client: WireClient, size: int, texts: list[str], rng: random.Random) -> BurstResult:
    phase = client.phase
    started = time.perf_counter()
    futures = [client.send(method, params, kind) for kind, method, params in burst_requests(size, texts, rng)]
    await asyncio.sleep(0.05)  # the burst is under way
    status = client.send(
        "workspace/executeCommand", {"command": "filescout.status", "arguments": []}, "status (mid-burst)"
    )
    page = client.send("files/getFiles", {"limit": 100}, "getFiles page (mid-burst)")
    await settle([*futures, status, page])
    return BurstResult(
        phase,
        started,
        time.perf_counter() - started,
        [future.reply for future in futures],  # type: ignore[attr-defined]
        status.reply,  # type: ignore[attr-defined]
        page.reply,  # type: ignore[attr-defined]
    )


async def settle(futures: list[asyncio.Future[dict[str, Any]]]) -> None:
    """Wait for replies, up to REPLY_TIMEOUT; one that does not come stays unanswered."""
    await asyncio.wait(futures, timeout=REPLY_TIMEOUT)


# A run


@dataclass
class Run:
    name: str
    bursts: list[BurstResult]
    sampler: Sampler
    index_seconds: float | None
    phases: list[tuple[float, str]]
    load_before: str
    load_after: str
    stderr_errors: int


async def cold_run(args: argparse.Namespace, cache: Path, texts: list[str], log: Path) -> Run:
    load_before = load_average()
    started = time.perf_counter()
    client = await WireClient.start(args.workspace, cache, stderr=log)
    sampler = Sampler(client.pid, label=lambda: client.phase)
    sampling = asyncio.get_running_loop().create_task(sampler.run())
    rng = random.Random(5)
    bursts = []
    await asyncio.sleep(args.first_burst_after)
    while client.phase != "idle" or not any(phase != "idle" for _, phase in client.phases):
        result = await burst(client, args.burst, texts, rng)
        bursts.append(result)
        print(describe(len(bursts), result), file=sys.stderr, flush=True)
        await asyncio.sleep(args.pause)
    index_seconds = next(at for at, phase in reversed(client.phases) if phase == "idle") - started
    await asyncio.sleep(2 * sampler.every)
    sampling.cancel()  # what the process looks like while it exits is not of interest
    await client.stop()
    return Run(
        "cold", bursts, sampler, index_seconds, client.phases, load_before, load_average(), count_errors(log)
    )


async def idle_run(args: argparse.Namespace, cache: Path, texts: list[str], log: Path) -> Run:
    client = await WireClient.start(args.workspace, cache, stderr=log)
    sampler = Sampler(client.pid, label=lambda: client.phase)
    sampling = asyncio.get_running_loop().create_task(sampler.run())
    while client.phase != "idle":  # the startup pass over an unchanged tree
        await asyncio.sleep(0.2)
    await asyncio.sleep(2)
    load_before = load_average()
    rng = random.Random(6)
    bursts = []
    for number in range(args.idle_bursts):
        result = await burst(client, args.burst, texts, rng)
        bursts.append(result)
        print(describe(number + 1, result), file=sys.stderr, flush=True)
        await asyncio.sleep(args.pause)
    load_after = load_average()
    sampling.cancel()
    await client.stop()
    return Run("idle", bursts, sampler, None, client.phases, load_before, load_after, count_errors(log))


def count_errors(log: Path) -> int:
    """Tracebacks and error lines the server logged."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return sum(1 for line in text.splitlines() if "Traceback" in line or " ERROR " in line)


def describe(number: int, result: BurstResult) -> str:
    failed = sum(1 for reply in result.replies if reply.error or reply.arrived is None)
    return (
        f"burst {number} ({result.phase}): {result.elapsed * 1000:.0f} ms, {failed} failed, "
        f"status {ms(result.status.latency)}, page {ms(result.page.latency)}"
    )


# Report


def ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.0f} ms"


def latency_row(label: str, replies: list[Reply]) -> str:
    answered = [reply.latency for reply in replies if reply.latency is not None and reply.error is None]
    errors = sum(1 for reply in replies if reply.error is not None)
    missing = sum(1 for reply in replies if reply.arrived is None)
    if not answered:
        return f"| {label} | {len(replies)} | — | — | — | {errors} | {missing} |"
    return (
        f"| {label} | {len(replies)} | {ms(percentile(answered, 0.5))} | {ms(percentile(answered, 0.95))} | "
        f"{ms(max(answered))} | {errors} | {missing} |"
    )


def report(run: Run) -> None:
    print(f"\n### {run.name}: {len(run.bursts)} bursts; load average {run.load_before} → {run.load_after}\n")
    if run.index_seconds is not None:
        print(
            f"Initialize to idle (scan and structural annotation, under the bursts): {run.index_seconds:.0f} s\n"
        )
    print("| phase at burst start | request | count | p50 | p95 | max | error replies | missing |")
    print("|---|---|---|---|---|---|---|---|")
    for phase in dict.fromkeys(result.phase for result in run.bursts):
        bursts = [result for result in run.bursts if result.phase == phase]
        replies = [reply for result in bursts for reply in result.replies]
        rows = [
            *(
                latency_row(kind, [r for r in replies if r.kind == kind])
                for kind in dict.fromkeys(r.kind for r in replies)
            ),
            latency_row("status (mid-burst)", [result.status for result in bursts]),
            latency_row("getFiles page (mid-burst)", [result.page for result in bursts]),
            latency_row("whole burst", [Reply("burst", 0.0, result.elapsed) for result in bursts]),
        ]
        for row in rows:
            print(f"| {phase} {row}")
    print(
        "\n| server process, by phase | samples | RSS start / max / end | fds start / max / end | threads start / max / end |"
    )
    print("|---|---|---|---|---|")
    for phase in dict.fromkeys(tag for tag, _ in run.sampler.samples):
        samples = run.sampler.of(phase)
        print(
            f"| {phase} | {len(samples)} | {spread([s.rss_mb for s in samples], ' MB')} | "
            f"{spread([s.fds for s in samples])} | {spread([s.threads for s in samples])} |"
        )
    print(f"\nError or traceback lines in the server's log: {run.stderr_errors}")


def spread(values: list[float], unit: str = "") -> str:
    return f"{values[0]:.0f} / {max(values):.0f} / {values[-1]:.0f}{unit}"


async def what_small_requests_wait_for(args: argparse.Namespace, texts: list[str]) -> None:
    """On an indexed, idle workspace: the status command and a page of getFiles alone, sent
    together, and sent during a burst of questions only or of listings only (each twice)."""
    client = await WireClient.start(args.workspace, args.cache)
    while client.phase != "idle":
        await asyncio.sleep(0.2)
    await asyncio.sleep(2)
    print(f"## What a small request waits for — load average {load_average()}\n")
    print("| sent with | status | getFiles page (100) | burst's slowest |")
    print("|---|---|---|---|")
    for _ in range(2):
        status = await timed(client.send("workspace/executeCommand", {"command": "filescout.status"}))
        page = await timed(client.send("files/getFiles", {"limit": 100}))
        print(f"| nothing (each alone) | {ms(status)} | {ms(page)} | |")
    listings = [
        {"limit": 200, **GET_FILES_FILTERS[n % len(GET_FILES_FILTERS)]} if n % 2 else {"limit": 1000}
        for n in range(20)
    ]
    bursts = {
        "each other": [],
        "30 questions": [("files/findRelevant", {"query": text, "limit": 20}) for text in texts[:30]],
        "20 listings": [("files/getFiles", params) for params in listings],
    }
    for label, requests in bursts.items():
        for _ in range(2):
            futures = [client.send(method, params) for method, params in requests]
            await asyncio.sleep(0.05)
            status = client.send("workspace/executeCommand", {"command": "filescout.status"})
            page = client.send("files/getFiles", {"limit": 100})
            await settle([*futures, status, page])
            slowest = max((f.reply.latency or 0.0 for f in futures), default=None)  # type: ignore[attr-defined]
            print(
                f"| {label} | {ms(status.reply.latency)} | {ms(page.reply.latency)} | {ms(slowest)} |"  # type: ignore[attr-defined]
            )
    print(f"\nload average after: {load_average()}")
    await client.stop()


async def timed(future: asyncio.Future[dict[str, Any]]) -> float | None:
    await settle([future])
    return future.reply.latency  # type: ignore[attr-defined]


async def main_async(args: argparse.Namespace) -> None:
    texts = queries(50)
    if args.probe:
        await what_small_requests_wait_for(args, texts)
        return
    cache = args.cache or Path(tempfile.mkdtemp(prefix="filescout-load-"))
    if cache.exists() and any(cache.iterdir()):
        raise SystemExit(f"{cache} is not empty: the cold run needs an empty cache")
    cache.mkdir(parents=True, exist_ok=True)
    log = cache.parent / f"{cache.name}.server.log"
    print(f"cache {cache}, server log {log}", file=sys.stderr, flush=True)
    runs = [await cold_run(args, cache, texts, log), await idle_run(args, cache, texts, log)]
    print(
        f"## Load — {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, {os.cpu_count()} cores\n\n"
        f"{args.workspace} (model-free); "
        + (
            f"bursts of {args.burst}: 3/5 findRelevant, 1/5 getFiles pages, 1/5 getFiles pages with filters"
            if args.burst
            else "no bursts (reference): the status command and a page of getFiles alone"
        )
        + f"; {args.pause:g} s between bursts"
    )
    for run in runs:
        report(run)
    if not args.keep_cache:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, default=Path(__file__).parent / ".work" / "ws100k")
    parser.add_argument("--cache", type=Path, help="an empty directory (default: a new temporary one)")
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--first-burst-after", type=float, default=3.0)
    parser.add_argument("--pause", type=float, default=3.0)
    parser.add_argument("--idle-bursts", type=int, default=5)
    parser.add_argument("--keep-cache", action="store_true")
    parser.add_argument(
        "--probe",
        action="store_true",
        help="instead: on --cache, already indexed, what a status and a page wait for",
    )
    asyncio.run(main_async(parser.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
