"""Soak benchmark: a developer's half hour with `filescout serve`, compressed, while the server's
memory, open file descriptors and threads are sampled.

    python bench/soak_bench.py [--files 5000] [--minutes 30] [--speed 20] [--model]

"30 minutes of simulated use" is a fixed, seeded script of what one developer's editor and chat
panel send in that time, per simulated minute: 8 edit cycles (didOpen; two didChange; the new
text written to disk; didSave; didClose) on a working set of 40 files, 3 questions
(findRelevant), 4 getFiles pages (half with filters, some followed by their next page), 2
didAccess, 4 watched-file changes made on disk first (creates, deletes, renames as a delete and a
create, changes from outside the editor, such as a checkout), a status poll every 15 s, and a
`filescout.reindex` every 10 minutes. The script runs `--speed` times faster than real time (or
as fast as the server answers, if slower): requests are awaited, notifications are not.

The server runs as a subprocess on a workspace bench/make_workspace.py generates in a temporary
directory (the script changes it), with a fresh index. Its RSS, open fds (/proc/PID/fd) and
threads (/proc/PID/status) are sampled every `--sample` seconds. The first `--warm-up` of the
script warms the server up (every kind of event has happened, the caches have filled); there the
script pauses until the server is idle, and the figures are compared with the sample taken then
and with the one taken once the server is idle after the script. Goals (flat): the end RSS, once the server is idle again,
within 10% of the post-warm-up value, and no growth over the second half of the script (least-
squares trend across it under 5% of the post-warm-up RSS); fds back at their post-warm-up value
once idle, threads too or above it only by threads of asyncio's default executor, which starts
them as work overlaps (up to min(32, cores + 4)) and keeps them; no error replies, no missing
replies, nothing logged at ERROR.

`--model` runs the same script with a model: bench/harness/fake_openai.py's OpenAI-compatible server on
127.0.0.1 writes the annotations and judges the questions.
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
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.procfs import ProcessSample, Sampler, load_average
from harness.wire import Reply, WireClient
from harness.workspaces import GET_FILES_FILTERS, generate, queries

PER_MINUTE = {"edit": 8, "question": 3, "list": 4, "access": 2, "watched": 4}
STATUS_EVERY = 15.0  # simulated seconds
REINDEX_EVERY = 600.0
WORKING_SET = 40
CREATED, CHANGED, DELETED = 1, 2, 3
POOL_THREADS = min(32, (os.cpu_count() or 1) + 4)
"""Threads asyncio's default executor starts as work overlaps, and keeps (the server's is the
same size: same machine)."""


@dataclass(order=True)
class Event:
    at: float  # simulated seconds
    kind: str = field(compare=False)


def script(minutes: float, rng: random.Random) -> list[Event]:
    """Every event of `minutes` of use, spread at random within each minute, in time order."""
    events = [
        Event(minute * 60 + rng.random() * 60, kind)
        for minute in range(int(minutes))
        for kind, count in PER_MINUTE.items()
        for _ in range(count)
    ]
    events += [Event(at, "status") for at in frange(STATUS_EVERY, minutes * 60, STATUS_EVERY)]
    events += [Event(at, "reindex") for at in frange(REINDEX_EVERY / 2, minutes * 60, REINDEX_EVERY)]
    return sorted(events)


def frange(start: float, stop: float, step: float) -> list[float]:
    return [
        start + step * number
        for number in range(int((stop - start) / step) + 1)
        if start + step * number < stop
    ]


class Developer:
    """Turns script events into what an editor sends, changing the workspace on disk first."""

    def __init__(self, client: WireClient, root: Path, rng: random.Random) -> None:
        self.client = client
        self.root = root
        self.rng = rng
        self.sources = sorted(
            path
            for path in root.rglob("*")
            if path.suffix in (".py", ".ts", ".go") and "node_modules" not in path.parts
        )
        self.working_set = rng.sample(self.sources, WORKING_SET)
        self.others = [path for path in self.sources if path not in set(self.working_set)]
        self.created: list[Path] = []
        self.texts = queries(200, seed=23)
        self.replies: list[Reply] = []
        self.counts: dict[str, int] = {}
        self.reindexed: list[float] = []
        self.versions = 0

    async def do(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        await getattr(self, kind)()

    async def call(self, method: str, params: Any, kind: str) -> dict[str, Any] | None:
        future = self.client.send(method, params, kind)
        self.replies.append(future.reply)  # type: ignore[attr-defined]
        try:
            return await asyncio.wait_for(future, 120)
        except (TimeoutError, asyncio.TimeoutError, ConnectionError):
            return None

    async def edit(self) -> None:
        path = self.rng.choice(self.working_set)
        uri = path.as_uri()
        text = path.read_text()
        self.client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "plaintext", "version": 1, "text": text}},
        )
        for version in (2, 3):
            self.versions += 1
            text += f"\ndef edited_{self.versions}(value):\n    return value + {version}\n"
            self.client.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
            )
        path.write_text(text)
        self.client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    async def question(self) -> None:
        params = {
            "query": self.rng.choice(self.texts),
            "limit": 20,
            "partialResultToken": f"q{self.rng.random()}",
        }
        await self.call("files/findRelevant", params, "findRelevant")

    async def list(self) -> None:
        filters = self.rng.choice(GET_FILES_FILTERS) if self.rng.random() < 0.5 else {}
        page = await self.call("files/getFiles", {"limit": 100, **filters}, "getFiles")
        cursor = ((page or {}).get("result") or {}).get("nextCursor")
        if cursor and self.rng.random() < 0.3:
            await self.call("files/getFiles", {"limit": 100, **filters, "cursor": cursor}, "getFiles")

    async def access(self) -> None:
        paths = [str(path.relative_to(self.root)) for path in self.rng.sample(self.sources, 3)]
        self.client.notify("files/didAccess", {"paths": paths})

    async def status(self) -> None:
        await self.call(
            "workspace/executeCommand", {"command": "filescout.status", "arguments": []}, "status"
        )

    async def reindex(self) -> None:
        self.reindexed.append(time.perf_counter())
        await self.call(
            "workspace/executeCommand", {"command": "filescout.reindex", "arguments": []}, "reindex"
        )

    async def watched(self) -> None:
        roll = self.rng.random()
        if roll < 0.35 or not self.created:
            changes = self.create()
        elif roll < 0.55:
            changes = self.delete()
        elif roll < 0.8:
            changes = self.rename()
        else:
            changes = self.change_outside()
        self.client.notify(
            "workspace/didChangeWatchedFiles",
            {"changes": [{"uri": path.as_uri(), "type": change} for path, change in changes]},
        )

    def create(self) -> list[tuple[Path, int]]:
        path = self.rng.choice(self.others).with_name(
            f"added_{len(self.created)}_{self.rng.randrange(10**6)}.py"
        )
        path.write_text(
            f'"""Added while working: {self.rng.choice(self.texts)}."""\n\ndef added():\n    return 1\n'
        )
        self.created.append(path)
        return [(path, CREATED)]

    def delete(self) -> list[tuple[Path, int]]:
        path = self.created.pop(self.rng.randrange(len(self.created)))
        path.unlink()
        return [(path, DELETED)]

    def rename(self) -> list[tuple[Path, int]]:
        old = self.created.pop(self.rng.randrange(len(self.created)))
        new = old.with_name(f"renamed_{self.rng.randrange(10**6)}_{old.name}")
        old.rename(new)
        self.created.append(new)
        return [(old, DELETED), (new, CREATED)]

    def change_outside(self) -> list[tuple[Path, int]]:
        path = self.rng.choice(self.others)
        path.write_text(path.read_text() + f"\n# changed by a checkout {self.rng.random()}\n")
        return [(path, CHANGED)]


@dataclass
class Soak:
    mode: str
    files: int
    minutes: float
    wall: float
    sampler: Sampler
    initial: ProcessSample
    warm: ProcessSample
    end: ProcessSample
    second_half: list[ProcessSample]
    counts: dict[str, int]
    replies: list[Reply]
    load_before: str
    load_after: str
    logged_errors: int
    model_calls: int | None


async def wait_idle(client: WireClient, timeout: float = 600) -> None:
    """Until the server says it is idle and the annotation queue is empty."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        reply = await client.request(
            "workspace/executeCommand", {"command": "filescout.status", "arguments": []}
        )
        result = reply.get("result") or {}
        model = result.get("model") or {}
        quiet = not result.get("queued") and not model.get("queuedFiles") and model.get("state") != "active"
        if result.get("phase") == "idle" and quiet:
            return
        await asyncio.sleep(0.5)
    raise TimeoutError("the server did not become idle")


async def idle_sample(client: WireClient, sampler: Sampler) -> ProcessSample:
    """The server's figures once it is idle and a few samples have passed."""
    await wait_idle(client)
    await asyncio.sleep(3 * sampler.every)
    return sampler.samples[-1][1]


async def soak(args: argparse.Namespace, model_url: str | None, model_calls: Any) -> Soak:
    work = Path(tempfile.mkdtemp(prefix="filescout-soak-"))
    root = work / "ws"
    print(f"generating {args.files} files in {root} ...", file=sys.stderr, flush=True)
    generate(root, args.files, seed=7)
    env = {"FILESCOUT_MODEL": "soak-model", "OPENAI_BASE_URL": model_url} if model_url else {}
    log = work / "server.log"
    load_before = load_average()
    client = await WireClient.start(root, work / "cache", env=env, stderr=log)
    sampler = Sampler(client.pid, every=args.sample)
    sampling = asyncio.get_running_loop().create_task(sampler.run())
    stage = "index"
    sampler.label = lambda: stage
    try:
        initial = await idle_sample(client, sampler)
        rng = random.Random(31)
        developer = Developer(client, root, rng)
        events = script(args.minutes, rng)
        warm_at = args.warm_up * args.minutes * 60
        started = time.perf_counter()
        warm: ProcessSample | None = None
        stage = "warm-up"
        for event in events:
            if warm is None and event.at >= warm_at:
                paused = time.perf_counter()
                warm = await idle_sample(client, sampler)
                started += time.perf_counter() - paused  # the script resumes where it stopped
                stage = "soak"
            delay = started + event.at / args.speed - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            await developer.do(event.kind)
        wall = time.perf_counter() - started
        stage = "settle"
        end = await idle_sample(client, sampler)
        assert warm is not None
        half = started + (warm_at + (args.minutes * 60 - warm_at) / 2) / args.speed
        second_half = [sample for tag, sample in sampler.samples if tag == "soak" and sample.at >= half]
    finally:
        sampling.cancel()  # what the process looks like while it exits is not of interest
        await client.stop()
    logged = sum(
        1 for line in log.read_text(errors="replace").splitlines() if "Traceback" in line or "ERROR" in line
    )
    result = Soak(
        "model (fake OpenAI server)" if model_url else "model-free",
        args.files,
        args.minutes,
        wall,
        sampler,
        initial,
        warm,
        end,
        second_half,
        developer.counts,
        developer.replies,
        load_before,
        load_average(),
        logged,
        model_calls() if model_url else None,
    )
    if args.samples:
        write_samples(args.samples, result, started, args.speed, developer.reindexed)
    if args.keep:
        print(f"kept {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return result


def write_samples(prefix: Path, run: Soak, started: float, speed: float, reindexed: list[float]) -> None:
    """Every sample as CSV (simulated minute, stage, RSS, fds, threads), and when each reindex
    began, to see what a rise lines up with. Warm-up's idle pause is not taken out."""
    path = prefix.with_name(f"{prefix.name}-{'model' if run.model_calls is not None else 'model-free'}.csv")
    rows = ["minute,stage,rss_mb,fds,threads"]
    rows += [
        f"{(sample.at - started) * speed / 60:.2f},{stage},{sample.rss_mb:.1f},{sample.fds},{sample.threads}"
        for stage, sample in run.sampler.samples
    ]
    rows += [f"{(at - started) * speed / 60:.2f},reindex,,," for at in reindexed]
    path.write_text("\n".join(rows) + "\n")
    print(f"samples in {path}", file=sys.stderr)


def trend(samples: list[ProcessSample]) -> float:
    """The least-squares change in RSS (MB) from the first sample to the last."""
    if len(samples) < 2:
        return 0.0
    times = [sample.at for sample in samples]
    values = [sample.rss_mb for sample in samples]
    mean_t, mean_v = sum(times) / len(times), sum(values) / len(values)
    spread = sum((t - mean_t) ** 2 for t in times)
    slope = (
        sum((t - mean_t) * (v - mean_v) for t, v in zip(times, values, strict=True)) / spread
        if spread
        else 0.0
    )
    return slope * (times[-1] - times[0])


def report(run: Soak) -> None:
    samples = [sample for stage, sample in run.sampler.samples if stage != "index"]
    errors = sum(1 for reply in run.replies if reply.error is not None)
    missing = sum(1 for reply in run.replies if reply.arrived is None)
    rise = trend(run.second_half)
    end_ratio = run.end.rss_mb / run.warm.rss_mb
    print(
        f"\n### {run.mode}: {run.files:,} files, {run.minutes:g} simulated minutes in {run.wall:.0f} s; "
        f"load average {run.load_before} → {run.load_after}\n"
    )
    print("Events: " + ", ".join(f"{count} {kind}" for kind, count in sorted(run.counts.items())))
    print(
        f"Replies: {len(run.replies)}, error replies {errors}, missing {missing}; "
        f"ERROR or traceback lines logged: {run.logged_errors}"
        + (f"; model calls {run.model_calls}" if run.model_calls is not None else "")
        + "\n"
    )
    print("| measure | indexed, idle | after warm-up | max | end (idle again) | goal | met |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| RSS | {run.initial.rss_mb:.0f} MB | {run.warm.rss_mb:.0f} MB | {max(s.rss_mb for s in samples):.0f} MB | "
        f"{run.end.rss_mb:.0f} MB ({(end_ratio - 1) * 100:+.1f}%) | end within 10% of after warm-up | "
        f"{'yes' if end_ratio <= 1.10 else 'no'} |"
    )
    print(
        f"| RSS trend over the second half | | | | {rise:+.1f} MB ({rise / run.warm.rss_mb * 100:+.1f}%) | "
        f"under 5% of after warm-up | {'yes' if rise < 0.05 * run.warm.rss_mb else 'no'} |"
    )
    print(
        f"| open fds | {run.initial.fds} | {run.warm.fds} | {max(s.fds for s in samples)} | {run.end.fds} | "
        f"back to after warm-up | {'yes' if run.end.fds <= run.warm.fds else 'no'} |"
    )
    bound = run.initial.threads - 1 + POOL_THREADS
    print(
        f"| threads | {run.initial.threads} | {run.warm.threads} | {max(s.threads for s in samples)} | "
        f"{run.end.threads} | back to after warm-up, or above it only by asyncio's pool (at most {bound}) | "
        f"{'yes' if run.end.threads <= run.warm.threads else 'within the pool' if run.end.threads <= bound else 'no'} |"
    )
    print(
        f"| error / missing replies | | | | {errors} / {missing} | none | "
        f"{'yes' if errors == missing == run.logged_errors == 0 else 'no'} |"
    )
    print("\nEach fifth of the script, the highest RSS / fds / threads sampled:")
    print(" → ".join(f"{rss:.0f} MB / {fds} / {threads}" for rss, fds, threads in fifths(run)))


def fifths(run: Soak) -> list[tuple[float, int, int]]:
    """The highest RSS, fds and threads in each fifth of the script (warm-up and soak)."""
    samples = [sample for stage, sample in run.sampler.samples if stage in ("warm-up", "soak")]
    size = max(1, len(samples) // 5)
    parts = [samples[start : start + size] for start in range(0, len(samples), size)][:5]
    return [
        (max(s.rss_mb for s in part), max(s.fds for s in part), max(s.threads for s in part))
        for part in parts
        if part
    ]


async def main_async(args: argparse.Namespace) -> None:
    runs = [await soak(args, None, None)]
    if args.model:
        from harness.fake_openai import FakeOpenAI

        fake = FakeOpenAI().start()
        try:
            runs.append(await soak(args, fake.base_url, fake.calls))
        finally:
            fake.stop()
    print(
        f"## Soak — {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, {os.cpu_count()} cores, "
        f"×{args.speed:g} compressed, sampled every {args.sample:g} s"
    )
    for run in runs:
        report(run)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--speed", type=float, default=20, help="simulated seconds per wall second")
    parser.add_argument("--sample", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--warm-up", type=float, default=0.2, help="share of the script that warms up")
    parser.add_argument("--model", action="store_true", help="also run with the fake OpenAI server")
    parser.add_argument("--keep", action="store_true", help="keep the workspace, index and server log")
    parser.add_argument("--samples", type=Path, help="also write every sample to PREFIX-<mode>.csv")
    asyncio.run(main_async(parser.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
