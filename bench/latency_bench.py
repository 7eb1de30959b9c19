"""Query latency on a large workspace: findRelevant's model-free stage, its first streamed
result, and getFiles streaming, each against `git ls-files` on the same tree.

    python bench/latency_bench.py [--workspace DIR] [--cache DIR] [--queries 50] [--no-topk]

The workspace is bench/make_workspace.py's (generated if missing) and is indexed first (kept in
--cache between runs). Queries are drawn, with a fixed seed, from the workspace's own
vocabulary: three to eight words, as a chat message about the code would be.

The content search answers from the index's top-k store (filescout.index.topk), which is
brought up to date before anything is timed; with --no-topk, from FTS5 with common terms dropped,
in this process and in the server (FILESCOUT_NO_TOPK), on the same index.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from filescout.annotate.structural import ANNOTATOR_ID
from filescout.engine.settings import db_path_for, load_settings
from filescout.index import Index
from filescout.index.topk import DISABLED
from filescout.relevance.filters import PathFilter
from filescout.relevance.prefilter import prefilter
from filescout.relevance.query import analyse
from harness import launch
from harness.stats import percentile
from harness.wire import WireClient
from harness.workspaces import generate, queries


async def complete_store(db: Path) -> None:
    """Bring the index's top-k stores up to date (made or reconciled), as a server does in the
    background after it opens the index: the timings below are of stores that can answer."""
    index = await Index.open(db)
    try:
        index.keep_stores()
        if not await index.stores_settled():
            print("a top-k store cannot answer: its search is FTS5's", file=sys.stderr)
    finally:
        await index.close()


async def in_process(root: Path, env: dict[str, str], texts: list[str], topk: bool = True) -> list[float]:
    """The prefilter alone, on the workspace's index opened read-only in this process (with
    its top-k stores unless `topk` is false)."""
    db = db_path_for(root, load_settings(root, None, env).settings, env)
    if topk:
        await complete_store(db)
    index = await Index.open_readonly(db)
    if topk:
        index.keep_stores()
        await index.stores_settled()
    try:
        scope = PathFilter()
        timings = []
        for text in texts:
            started = time.perf_counter()
            await prefilter(index, analyse(text), limit=20, scope=scope, current=ANNOTATOR_ID)
            timings.append(time.perf_counter() - started)
        return timings
    finally:
        await index.close()


STORES_OPEN = 3.0
"""Seconds after the startup scan before the questions over stdio: the server opens its top-k
stores a second after it starts and reconciles them with the index (0.3 s for the content
words', 0.4 s for the descriptions' at 100K), and until then FTS5 answers, beside the
reconciliation (40-180 ms at 100K for the questions of those two seconds)."""


async def over_lsp(root: Path, cache: Path, texts: list[str], topk: bool = True) -> dict[str, list[float]]:
    client = await WireClient.start(root, cache, env=None if topk else {DISABLED: "1"})
    for _ in range(100):  # until the startup scan has finished (status says so)
        if (await client.command("filescout.status"))["phase"] == "idle":
            break
        await asyncio.sleep(0.1)
    if topk:
        await asyncio.sleep(STORES_OPEN)
    first, total = [], []
    for number, text in enumerate(texts):
        reply = await client.timed(
            "files/findRelevant", {"query": text, "limit": 20, "partialResultToken": f"q{number}"}
        )
        assert reply.arrived is not None
        first.append((reply.first_partial or reply.arrived) - reply.sent)
        total.append(reply.arrived - reply.sent)
    listed = await client.timed("files/getFiles", {"partialResultToken": "all", "batchSize": 1000})
    await client.stop()
    assert listed.arrived is not None and listed.first_partial is not None
    return {
        "first": first,
        "total": total,
        "files_first": [listed.first_partial - listed.sent],
        "files_all": [listed.arrived - listed.sent],
        "files_count": [sum(count for _, count in listed.partials)],
    }


async def main_async(args: argparse.Namespace) -> None:
    root: Path = args.workspace
    if not root.exists():
        print(f"generating {args.files} files in {root} ...", file=sys.stderr)
        generate(root, args.files, seed=7)
    env = launch.server_env(args.cache)
    print("indexing (kept in the cache between runs) ...", file=sys.stderr)
    subprocess.run(
        launch.command("index", str(root)),
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    texts = queries(args.queries)
    prefilter_times = await in_process(root, env, texts, topk=not args.no_topk)
    lsp = await over_lsp(root, args.cache, texts, topk=not args.no_topk)
    started = time.perf_counter()
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=False,
    )
    git_seconds = time.perf_counter() - started
    ms = lambda seconds: f"{seconds * 1000:.0f} ms"  # noqa: E731
    print(
        f"## Query latency — {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, "
        f"Python {platform.python_version()}\n"
    )
    print(f"{args.queries} queries on {root.name}; {lsp['files_count'][0]} files listed\n")
    print("| measure | p50 | p95 | goal | reference, same run |")
    print("|---|---|---|---|---|")
    print(
        f"| prefilter (in the engine) | {ms(percentile(prefilter_times, 0.5))} | "
        f"{ms(percentile(prefilter_times, 0.95))} | p95 ≤ 50 ms | |"
    )
    print(
        f"| findRelevant, request to first streamed result (over stdio) | "
        f"{ms(percentile(lsp['first'], 0.5))} | {ms(percentile(lsp['first'], 0.95))} | ≤ 100 ms | |"
    )
    print(
        f"| findRelevant, request to response | {ms(percentile(lsp['total'], 0.5))} | "
        f"{ms(percentile(lsp['total'], 0.95))} | | |"
    )
    print(f"| getFiles, request to first batch of 1,000 | {ms(lsp['files_first'][0])} | | ≤ 20 ms | |")
    print(
        f"| getFiles, the whole workspace streamed | {ms(lsp['files_all'][0])} | | ≤ 1.5 s | "
        f"`git ls-files`: {ms(git_seconds)} (×{lsp['files_all'][0] / git_seconds:.1f}) |"
    )
    del listed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, default=Path(__file__).parent / ".work" / "ws100k")
    parser.add_argument("--cache", type=Path, default=Path(__file__).parent / ".work" / "latency-cache")
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument(
        "--no-topk", action="store_true", help="the content search from FTS5 (common terms dropped), no store"
    )
    asyncio.run(main_async(parser.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
