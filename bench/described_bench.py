"""The description search: FTS5 against the top-k store filescout keeps of the same rows, for
bench/latency_bench.py's questions, each with every term kept.

    python bench/described_bench.py [--workspace DIR] [--cache DIR] [--queries 50] [--repeat 3]
                                    [--rebuild] [--json OUT]

The index is the one `filescout index WORKSPACE` keeps under --cache (made first when missing);
its description store (`index.sqlite3-described`, filescout.index.topk.DescriptionTopK) is built
or reconciled as a server does, before anything is timed. For each question's terms, as the
prefilter analyses it (`relevance.query.analyse`), the top --pool files of:

- FTS5 over every term (the exact ranking; what the store stands in for);
- FTS5 over the terms the prefilter kept for it before the store (`telling_terms`);
- the store over every term, its hits checked against `files_fts` and turned into files (what
  the prefilter asks).

Printed: the time of each (median of --repeat, then p50 / p95 over the questions), and how far
the last two agree with the first: the files shared in the top --pool and in the top 20, and
how often the first file is the same. Also the store's size on disk and what building it from
scratch costs (`--rebuild`: the store is deleted first).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filescout.engine.settings import db_path_for, load_settings
from filescout.index import Index, topk
from filescout.index.described import DESCRIPTION_WEIGHTS
from filescout.index.topk import DescriptionTopK, directory_for
from filescout.relevance.evidence import telling_terms
from filescout.relevance.query import analyse, expression
from harness import launch
from harness.stats import percentile
from harness.workspaces import generate, queries


async def median_seconds(repeat: int, action: Callable[[], Awaitable[object]]) -> tuple[float, Any]:
    spent, found = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        found = await action()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent), found


def shared(reference: list[str], other: list[str], size: int) -> float:
    wanted = reference[:size]
    return len(set(wanted) & set(other[:size])) / len(wanted) if wanted else 1.0


async def build(db: Path, rebuild: bool) -> dict[str, float]:
    directory = directory_for(db, DescriptionTopK)
    if rebuild:
        shutil.rmtree(directory, ignore_errors=True)
    topk.START_DELAY, topk.QUIET = 0.0, 0.2
    index = await Index.open(db)
    try:
        started = time.perf_counter()
        index.keep_description_store()
        if not await index.descriptions.store_settled():
            raise SystemExit("the description store cannot answer (is tantivy installed?)")
        seconds = time.perf_counter() - started
    finally:
        await index.close()
    size = sum(path.stat().st_size for path in directory.iterdir() if path.is_file()) / 1e6
    return {"seconds": seconds, "size_mb": size}


async def from_fts5(index: Index, match: str | None, pool: int) -> list[str]:
    found = await index.descriptions.search(match, limit=pool, weights=DESCRIPTION_WEIGHTS) if match else []
    return [hit.path for hit in found]


async def from_store(index: Index, terms: list[str], pool: int) -> list[str]:
    found = await index.descriptions.search_terms(
        terms, limit=pool, weights=DESCRIPTION_WEIGHTS, fallback=None
    )
    return [hit.path for hit in found]


async def compare(db: Path, texts: list[str], pool: int, repeat: int) -> dict[str, Any]:
    index = await Index.open_readonly(db)
    index.keep_description_store()
    try:
        if not await index.descriptions.store_settled():
            raise SystemExit("the description store cannot answer")
        times: dict[str, list[float]] = {"fts5_every_term": [], "fts5_telling_terms": [], "store": []}
        agreement: dict[str, list[float]] = {
            "telling_shared_pool": [],
            "telling_shared_20": [],
            "telling_same_first": [],
            "store_shared_pool": [],
            "store_shared_20": [],
            "store_same_first": [],
        }
        for text in texts:
            terms = analyse(text).terms
            total, frequency = await index.contents.frequencies(terms)
            every, telling = expression(terms), expression(telling_terms(terms, frequency, total))

            spent, exact = await median_seconds(repeat, functools.partial(from_fts5, index, every, pool))
            times["fts5_every_term"].append(spent)
            spent, before = await median_seconds(repeat, functools.partial(from_fts5, index, telling, pool))
            times["fts5_telling_terms"].append(spent)
            spent, now = await median_seconds(repeat, functools.partial(from_store, index, terms, pool))
            times["store"].append(spent)
            for name, ranked in (("telling", before), ("store", now)):
                agreement[f"{name}_shared_pool"].append(shared(exact, ranked, pool))
                agreement[f"{name}_shared_20"].append(shared(exact, ranked, 20))
                agreement[f"{name}_same_first"].append(float(exact[:1] == ranked[:1]))
        return {
            "latency_ms": {
                name: {"p50": percentile(values, 0.5) * 1000, "p95": percentile(values, 0.95) * 1000}
                for name, values in times.items()
            },
            "agreement": {name: statistics.mean(values) for name, values in agreement.items()},
        }
    finally:
        await index.close()


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    root = args.workspace
    if not root.exists():
        print(f"generating {args.files} files in {root} ...", file=sys.stderr)
        generate(root, args.files, seed=7)
    env = launch.server_env(args.cache)
    print("indexing (kept in the cache between runs) ...", file=sys.stderr)
    subprocess.run(launch.command("index", str(root)), env=env, check=True, stdout=subprocess.DEVNULL)
    db = db_path_for(root, load_settings(root, None, env).settings, env)
    built = await build(db, args.rebuild)
    figures = await compare(db, queries(args.queries), args.pool, args.repeat)
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "workspace": root.name,
        "questions": args.queries,
        "pool": args.pool,
        "store": built,
        **figures,
    }


def table(figures: dict[str, Any]) -> None:
    print(f"## Description search — {figures['date']}, {figures['machine']}\n")
    print(f"{figures['questions']} questions on {figures['workspace']}, top {figures['pool']}\n")
    print("| search | p50 | p95 | shared with FTS5 over every term: top pool / top 20 | same first file |")
    print("|---|---|---|---|---|")
    latency, agreement = figures["latency_ms"], figures["agreement"]
    rows = (
        ("FTS5, every term", "fts5_every_term", None),
        ("FTS5, the terms it could afford (before the store)", "fts5_telling_terms", "telling"),
        ("the store, every term, hits checked in SQL", "store", "store"),
    )
    for label, name, key in rows:
        agree = (
            f"{agreement[f'{key}_shared_pool']:.3f} / {agreement[f'{key}_shared_20']:.3f} | "
            f"{agreement[f'{key}_same_first']:.2f}"
            if key
            else "1 / 1 | 1"
        )
        print(f"| {label} | {latency[name]['p50']:.1f} ms | {latency[name]['p95']:.1f} ms | {agree} |")
    store = figures["store"]
    print(f"\nstore: {store['size_mb']:.0f} MB on disk; built or reconciled in {store['seconds']:.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, default=Path(__file__).parent / ".work" / "ws100k")
    parser.add_argument("--cache", type=Path, default=Path(__file__).parent / ".work" / "latency-cache")
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--pool", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rebuild", action="store_true", help="delete the store first: time a build")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = asyncio.run(main_async(args))
    table(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
