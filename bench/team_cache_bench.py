"""Team cache benchmark: a second machine gets its model annotations from the shared PostgreSQL
cache the first machine filled.

    python bench/team_cache_bench.py [--workspace DIR] [--files 10000]

A real PostgreSQL server is started for the run (as the tests start it: PostgreSQL's binaries,
a throwaway cluster on 127.0.0.1), and a local OpenAI-compatible server stands in for the model
(the figure of interest is the cache, not a model). Machine one indexes the workspace with the
model and shares what it wrote; machine two, a copy of the workspace at another path with its
own index, indexes it with the same settings. Reported: each machine's time to a fully
model-annotated index, its model calls and the tokens its cache hits saved, and the latency of
one lookup round trip for a batch of 16 hashes.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filescout.annotate.team_cache import SharedCache
from filescout.engine import Hooks, Workspace
from filescout_protocol.types import SharedCacheSettings
from harness.fake_openai import FakeOpenAI
from harness.postgres import PostgresDatabase, PostgresServer
from harness.stats import percentile
from harness.workspaces import generate

HERE = Path(__file__).resolve().parent

LOOKUP_BATCH = 16


async def index(root: Path, cache: Path, options: dict[str, Any], fake: FakeOpenAI) -> dict[str, Any]:
    calls = fake.calls("annotate")
    started = time.perf_counter()
    engine = await Workspace.open(
        root, options, env={"FILESCOUT_CACHE_DIR": str(cache)}, hooks=Hooks(persistent=False)
    )
    try:
        engine.start_indexing("index")
        await engine.wait_idle()
        elapsed = time.perf_counter() - started
        status = await engine.status()
    finally:
        await engine.close()
    shared = status.shared_cache
    assert shared is not None
    return {
        "seconds": elapsed,
        "files": status.files,
        "annotated": status.by_status.get("annotated", 0),
        "calls": fake.calls("annotate") - calls,
        "hits": shared.hits,
        "stored": shared.stored,
        "tokens_saved": shared.tokens_saved,
        "state": shared.state,
    }


async def lookup_latency(url: str, annotator: str, hashes: list[str]) -> list[float]:
    cache = SharedCache(SharedCacheSettings(url=url))
    timings = []
    try:
        await cache.lookup(annotator, hashes[:LOOKUP_BATCH])  # connect
        for start in range(0, min(len(hashes), 200 * LOOKUP_BATCH), LOOKUP_BATCH):
            began = time.perf_counter()
            await cache.lookup(annotator, hashes[start : start + LOOKUP_BATCH])
            timings.append(time.perf_counter() - began)
    finally:
        await cache.close()
    return timings


def stored_hashes(database: PostgresDatabase) -> tuple[str, list[str]]:
    with database.connect() as connection:
        rows = connection.execute("SELECT annotator, content_hash FROM filescout_annotations").fetchall()
    return rows[0][0], [row[1] for row in rows]


async def main_async(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="filescout-team-"))
    first = args.workspace
    if not first.exists():
        print(f"generating {args.files} files in {first} ...", file=sys.stderr, flush=True)
        generate(first, args.files, seed=7)
    second = work / "another-checkout" / first.name
    shutil.copytree(first, second, symlinks=True)
    fake = FakeOpenAI().start()
    server = PostgresServer()
    server.start()
    try:
        database = PostgresDatabase.create(server)
        options = {
            "model": {"model": "bench-model", "baseUrl": fake.base_url, "maxRetries": 0, "concurrency": 4},
            "sharedCache": {"url": database.url},
        }
        print("machine one: indexing with the model ...", file=sys.stderr, flush=True)
        one = await index(first, work / "cache-one", options, fake)
        print("machine two: indexing from the shared cache ...", file=sys.stderr, flush=True)
        two = await index(second, work / "cache-two", options, fake)
        annotator, hashes = stored_hashes(database)
        latency = await lookup_latency(database.url, annotator, hashes)
    finally:
        server.close()
        fake.stop()
        shutil.rmtree(work, ignore_errors=True)
    ms = lambda seconds: f"{seconds * 1000:.1f} ms"  # noqa: E731
    latency.sort()
    print(
        f"## Team cache — {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, Python {platform.python_version()}\n"
    )
    print(f"{one['files']} files; a local fake model server; PostgreSQL on 127.0.0.1\n")
    print(
        "| machine | time to fully model-annotated | model calls | annotated | from the cache | shared | tokens saved |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, run in (("one (fills the cache)", one), ("two (another checkout)", two)):
        print(
            f"| {name} | {run['seconds']:.1f} s | {run['calls']} | {run['annotated']} | {run['hits']} | "
            f"{run['stored']} | {run['tokens_saved']} |"
        )
    print(
        f"\nLookup of a batch of {LOOKUP_BATCH} hashes, one round trip ({len(latency)} batches): "
        f"p50 {ms(statistics.median(latency))}, p95 {ms(percentile(latency, 0.95))}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, default=HERE / ".work" / "ws10k")
    parser.add_argument("--files", type=int, default=10_000)
    asyncio.run(main_async(parser.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
