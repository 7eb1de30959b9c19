"""Cold full index of a large workspace with the worker processes, and how the server answers
meanwhile.

    python bench/responsiveness_bench.py --workspace /path/to/ws100k [--workers N] [--ctags]
        [--probe-every 0.5] [--saves 10] [--json out.json]

One `filescout serve` on a fresh cache, driven over stdio (times are when a reply's bytes
arrive), `{"index": {"workers": N}}` in its initializationOptions (no --workers: the default,
one per core). Measured: query-ready (the scan stored: the `annotating` status), the full cold
index (progress end: every file annotated), and, during the annotation of the backlog, every
`--probe-every` seconds one getFiles page (1,000 files) and one findRelevant question
(bench/latency_bench.py's, model-free) one after the other, and `--saves` times a didSave of a
file just changed until it shows the new content's annotation (each file is put back as it was
afterwards). The RSS and PSS of the server and of every process it started (the workers,
multiprocessing's resource tracker) are sampled from /proc every 0.2 s: peaks per process and
of the sum (git and other short-lived commands left out: a fork about to exec one shows the
server's pages). Each process's CPU time is read at the end, for files per CPU-second of the workers
and of the server's own process (the writer and the event loop: what bounds more workers).
`--probe-every 0` measures the cold index alone. `--ctags` times `ctags -R` on the same tree
right before (index_bench.py's: the same files, the tree read first), as the reference.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.procfs import command_line, cpu_seconds, descendants, load_average, memory_kb, thread_cpu
from harness.references import ctags_seconds, warm_up
from harness.stats import percentile
from harness.wire import ProgressClient, save_until_annotated
from harness.workspaces import queries


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def busiest_threads(pid: int, count: int) -> list[tuple[str, float]]:
    """("name (tid)", CPU seconds) of the busiest threads of `pid`: the writer's connection
    thread is the part of the server that more workers cannot share."""
    return [(f"{name} ({tid})", seconds) for name, tid, seconds in thread_cpu(pid)[:count]]


def name_of(pid: int, server: int) -> str:
    if pid == server:
        return "server"
    command = command_line(pid)
    if not command:
        return "gone"
    if b"resource_tracker" in command:
        return "resource tracker"
    return "worker" if b"spawn_main" in command else "other"


@dataclass
class Sampler:
    """Peaks of every process below the server, and their CPU time as last seen."""

    server: int
    peak_rss: dict[int, int] = field(default_factory=dict)
    peak_pss: dict[int, int] = field(default_factory=dict)
    cpu: dict[int, float] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    peak_sum_rss: int = 0
    peak_sum_pss: int = 0

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.to_thread(self.sample)  # /proc reads off the loop that times replies
            try:
                await asyncio.wait_for(stop.wait(), 0.2)
            except asyncio.TimeoutError:
                pass

    def sample(self) -> None:
        total_rss = total_pss = 0
        for pid in descendants(self.server):
            rss, pss = memory_kb(pid)
            if not rss:
                continue
            self.names.setdefault(pid, name_of(pid, self.server))
            self.peak_rss[pid] = max(self.peak_rss.get(pid, 0), rss)
            self.peak_pss[pid] = max(self.peak_pss.get(pid, 0), pss)
            self.cpu[pid] = cpu_seconds(pid)
            if self.names[pid] != "other":  # git, or a fork about to exec it: not ours to count
                total_rss += rss
                total_pss += pss
        self.peak_sum_rss = max(self.peak_sum_rss, total_rss)
        self.peak_sum_pss = max(self.peak_sum_pss, total_pss)


async def start(root: Path, cache: Path, workers: int | None) -> ProgressClient:
    """The server with `workers` annotation workers (its own choice when None, the environment's
    FILESCOUT_WORKERS left out)."""
    environment = {name: value for name, value in os.environ.items() if name != "FILESCOUT_WORKERS"}
    options = {"index": {"workers": workers}} if workers is not None else {}
    return await ProgressClient.start(
        root, cache, watch=False, initialization_options=options, base_env=environment
    )


async def timed(client: ProgressClient, method: str, params: Any) -> float:
    """Milliseconds from the request to its reply's arrival; an error reply raises."""
    reply = await client.timed(method, params)
    if reply.error is not None or reply.latency is None:
        raise RuntimeError(f"{method}: {reply.error}")
    return reply.latency * 1000


async def probe(
    client: ProgressClient, root: Path, every: float, saves: list[str], texts: list[str], annotating: float
) -> dict[str, list[float]]:
    """getFiles and findRelevant every `every` seconds, and the saves spread over the first
    part of the backlog, until the pass ends."""
    found: dict[str, list[float]] = {"getFiles": [], "findRelevant": [], "didSave": []}
    serial = 0
    while client.progress_at("end") is None:
        started = time.perf_counter()
        found["getFiles"].append(await timed(client, "files/getFiles", {"limit": 1000}))
        question = texts[len(found["findRelevant"]) % len(texts)]
        found["findRelevant"].append(await timed(client, "files/findRelevant", {"query": question}))
        if serial < len(saves) and time.perf_counter() - annotating > 2 + 3 * serial:
            found["didSave"].append(await save_until_annotated(client, root, saves[serial], serial) * 1000)
            serial += 1
        await asyncio.sleep(max(0.0, every - (time.perf_counter() - started)))
    return found


def save_candidates(root: Path, count: int) -> list[str]:
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True
    ).stdout.split()
    python = sorted(path for path in listed if path.endswith(".py") and not path.startswith("node_modules/"))
    return python[:: max(1, len(python) // max(count, 1))][:count]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    root = args.workspace.resolve()
    results: dict[str, Any] = {"workers": args.workers, "load_before": load_average()}
    if args.ctags:
        say("ctags -R (the tree read first, as filescout will find it: just read by ctags) ...")
        warm_up(root)
        results["ctags_s"] = ctags_seconds(root)
        say(f"  {results['ctags_s']:.2f} s" if results["ctags_s"] else "  ctags: not installed")
    saves = save_candidates(root, args.saves) if args.probe_every > 0 else []
    originals = {relative: (root / relative).read_bytes() for relative in saves}
    cache = Path(tempfile.mkdtemp(prefix="filescout-resp-"))
    stop = asyncio.Event()
    try:
        client = await start(root, cache, args.workers)
        sampler = Sampler(client.pid)
        sampling = asyncio.ensure_future(sampler.run(stop))
        annotating = await client.phase_time("annotating")
        results["query_ready_s"] = annotating - client.started
        say(f"query-ready after {results['query_ready_s']:.2f} s")
        measured: dict[str, list[float]] = {}
        if args.probe_every > 0:
            measured = await probe(client, root, args.probe_every, saves, queries(50), annotating)
        ended = await client.wait_for_progress("end")
        results["cold_index_s"] = ended - client.started
        results["annotation_s"] = ended - annotating
        status = await client.command("filescout.status")
        sampler.sample()
        results["server_threads_cpu_s"] = busiest_threads(sampler.server, 6)
        results["files"] = status["files"]
        results["by_status"] = dict(status.get("byStatus") or status.get("by_status") or {})
        for name, values in measured.items():
            if values:
                results[name] = {
                    "count": len(values),
                    "p50_ms": percentile(values, 0.5),
                    "p95_ms": percentile(values, 0.95),
                    "max_ms": max(values),
                }
                if len(values) <= 20:  # the saves: each one, in order (the first loads a parser)
                    results[name]["each_ms"] = [round(value) for value in values]
        results["processes"] = [
            {
                "pid": pid,
                "role": sampler.names[pid],
                "peak_rss_mb": sampler.peak_rss[pid] / 1024,
                "peak_pss_mb": sampler.peak_pss[pid] / 1024,
                "cpu_s": sampler.cpu.get(pid, 0.0),
            }
            for pid in sorted(sampler.peak_rss)
        ]
        results["peak_sum_rss_mb"] = sampler.peak_sum_rss / 1024
        results["peak_sum_pss_mb"] = sampler.peak_sum_pss / 1024
        annotated = results["by_status"].get("annotated", 0)
        worker_cpu = sum(p["cpu_s"] for p in results["processes"] if p["role"] == "worker")
        server_cpu = sum(p["cpu_s"] for p in results["processes"] if p["role"] == "server")
        results["files_per_worker_cpu_s"] = annotated / worker_cpu if worker_cpu else None
        results["files_per_server_cpu_s"] = annotated / server_cpu if server_cpu else None
        results["files_per_s"] = annotated / results["cold_index_s"]
        stop.set()
        await sampling
        await client.stop()
    finally:
        stop.set()
        for relative, data in originals.items():
            (root / relative).write_bytes(data)
        shutil.rmtree(cache, ignore_errors=True)
    results["load_after"] = load_average()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--probe-every", type=float, default=0.5)
    parser.add_argument("--saves", type=int, default=10)
    parser.add_argument("--ctags", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = asyncio.run(run(args))
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
