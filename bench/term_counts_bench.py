"""How long the prefilter's first step takes: counting the contents that hold each of a
question's words (to leave out the words too common to tell files apart), in the writing
process, as the server does it, over bench/latency_bench.py's questions asked twice.

    python bench/term_counts_bench.py --cache DIR [--workspace DIR] [--queries 50]

The index is latency_bench.py's (`--cache`, made by a run of it first); it is opened for writing
but nothing is written, so the counts read stay valid for the whole run.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from filescout.engine.settings import db_path_for, load_settings
from filescout.index import Index
from filescout.relevance.query import analyse
from harness import launch
from harness.stats import percentile
from harness.workspaces import queries


async def run(args: argparse.Namespace) -> None:
    env = launch.server_env(args.cache)
    root = args.workspace.resolve()
    index = await Index.open(db_path_for(root, load_settings(root, None, env).settings, env))
    try:
        questions = [analyse(text).terms for text in queries(args.queries)]
        for label in ("asked first", "asked again"):
            timings = []
            for terms in questions:
                started = time.perf_counter()
                await index.contents.frequencies(terms)
                timings.append(time.perf_counter() - started)
            p50, p95 = (1000 * percentile(timings, q) for q in (0.5, 0.95))
            print(f"{label}: p50 {p50:.2f} ms, p95 {p95:.2f} ms over {len(questions)} questions")
    finally:
        await index.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, default=Path(__file__).parent / ".work" / "ws100k")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=50)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
