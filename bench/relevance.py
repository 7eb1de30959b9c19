"""Relevance benchmark: which files matter for a request? Real commits of public repositories.

    python bench/relevance.py --cases CASES.jsonl --repos DIR [--work DIR] [--history]
        [--without SIGNALS] [--rankings OUT]

Each case (see the cases file's README) is a commit: the request is its message, the answer the
source files it modified, the workspace its parent's tree. `--repos` holds one git repository per
`owner/name`, as `DIR/owner+name` (an ordinary clone, or a bare one at `DIR/owner+name/repo`).
Workspaces are extracted with `git archive` under `--work` (plain trees, no history); with
`--history` each is instead a git work tree at the parent whose history holds the parent's
ancestors only (`git init`, the clone's objects as alternates, one branch at the parent), under
`--work`/with-history.

filescout indexes each workspace with the embedded default (structural annotations, no model) and
answers `files/findRelevant` through the same engine the server uses; the plain BM25-over-content
baseline of the cases' README runs on the same workspaces in the same run. Reported per
repository and overall: Recall@1/5/10, Acc@5 (all gold files in the top 5), MRR, and latency;
with `--history`, also what reading the history added to indexing. `--without history,imports`
leaves prefilter signals out (FILESCOUT_RELEVANCE_WITHOUT), to measure what each adds.

The content search answers as a server's does once its index is settled: from the index's top-k
store (built after indexing, before the question; index/topk.py). `--content-search fts5` asks
SQLite's FTS5 instead, with the words common to many files dropped, as a one-shot command or a
server whose store is not ready yet does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pathspec

from filescout.engine import Workspace
from filescout.engine.settings import default_db_path
from filescout.index import topk
from filescout.relevance.signals import ENVIRONMENT, SIGNALS, Signals
from filescout_protocol.types import FindRelevantParams
from harness import launch
from harness.repositories import workspace, workspace_with_history
from harness.stats import percentile

# -- the baseline, as the cases' README specifies it -----------------------------------------

BASELINE_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
RANKINGS_SHOWN = 20
"""How many of each case's first files --rankings writes."""
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def baseline_tokens(text: str) -> list[str]:
    tokens: list[str] = []
    for match in IDENTIFIER.finditer(text):
        word = match.group(0)
        parts = [p.lower() for chunk in word.split("_") for p in CAMEL.findall(chunk)]
        for token in {word.lower(), *parts} if len(parts) > 1 else parts or [word.lower()]:
            if len(token) >= 2 and token not in BASELINE_STOPWORDS:
                tokens.append(token)
    return tokens


def baseline_documents(root: Path) -> dict[str, list[str]]:
    ignore_file = root / ".gitignore"
    spec = (
        pathspec.GitIgnoreSpec.from_lines(ignore_file.read_text(errors="replace").splitlines())
        if ignore_file.is_file()
        else None
    )
    documents: dict[str, list[str]] = {}
    for current, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" and not os.path.islink(os.path.join(current, d))]
        for name in files:
            absolute = Path(current) / name
            relative = absolute.relative_to(root).as_posix()
            if absolute.is_symlink() or (spec is not None and spec.match_file(relative)):
                continue
            try:
                if absolute.stat().st_size > 1_000_000:
                    continue
                data = absolute.read_bytes()
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            path_tokens = baseline_tokens(relative)
            documents[relative] = path_tokens * 2 + baseline_tokens(data.decode("utf-8", errors="replace"))
    return documents


def bm25_rank(
    documents: dict[str, list[str]], query: str, *, k1: float = 1.5, b: float = 0.75, limit: int = 100
) -> list[str]:
    """Okapi BM25, Lucene variant (as bm25s computes it)."""
    n = len(documents)
    lengths = {path: len(tokens) for path, tokens in documents.items()}
    average = sum(lengths.values()) / max(n, 1)
    frequencies = {path: Counter(tokens) for path, tokens in documents.items()}
    df: Counter[str] = Counter()
    for counts in frequencies.values():
        df.update(counts.keys())
    terms = list(dict.fromkeys(baseline_tokens(query)))
    scores: dict[str, float] = {}
    for path, counts in frequencies.items():
        score = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[path] / average))
        if score > 0:
            scores[path] = score
    return sorted(scores, key=lambda path: (-scores[path], path))[:limit]


# -- metrics ---------------------------------------------------------------------------------


@dataclass
class Scores:
    r1: list[float] = field(default_factory=list)
    r5: list[float] = field(default_factory=list)
    r10: list[float] = field(default_factory=list)
    acc5: list[float] = field(default_factory=list)
    mrr: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)

    def add(self, ranked: list[str], gold: list[str], seconds: float) -> None:
        gold_set = set(gold)
        for k, target in ((1, self.r1), (5, self.r5), (10, self.r10)):
            target.append(len(gold_set & set(ranked[:k])) / len(gold_set))
        self.acc5.append(float(gold_set <= set(ranked[:5])))
        first = next((rank for rank, path in enumerate(ranked, 1) if path in gold_set), None)
        self.mrr.append(1 / first if first else 0.0)
        self.latency.append(seconds)

    def row(self) -> list[str]:
        mean = statistics.mean
        return [f"{mean(values):.3f}" for values in (self.r1, self.r5, self.r10, self.acc5, self.mrr)]


# -- workspaces ------------------------------------------------------------------------------


def history_seconds(root: Path, env: dict[str, str]) -> float | None:
    """How long the last full read of the workspace's history took (None: it has none)."""
    with sqlite3.connect(f"file:{default_db_path(root.resolve(), env)}?mode=ro", uri=True) as db:
        row = db.execute("SELECT built_ms FROM history_state WHERE tip IS NOT NULL").fetchone()
    return row[0] / 1000 if row else None


async def filescout_rank(
    root: Path, query: str, cache: Path, limit: int
) -> tuple[list[str], list[str], float, float, float | None]:
    env = launch.server_env(cache)
    engine = await Workspace.open(root, {"exclude": ["/.done"]}, env=env)
    try:
        started = time.perf_counter()
        engine.start_indexing("index")
        await engine.wait_idle()
        indexed = time.perf_counter() - started
        if topk.available() and not await engine.settle_stores():
            raise RuntimeError("a top-k store did not settle")
        started = time.perf_counter()
        result = await engine.find_relevant(FindRelevantParams(query=query, limit=limit))
        ranked = [item.path for item in result.items]
        reasons = [item.reason for item in result.items]
        return ranked, reasons, time.perf_counter() - started, indexed, history_seconds(root, env)
    finally:
        await engine.close()


def choose_content_search(kind: str) -> None:
    """The store built as soon as the index is quiet for a moment (a server waits QUIET seconds
    to stay out of a cold index's way), or not kept at all."""
    if kind == "fts5":
        os.environ[topk.DISABLED] = "1"
    else:
        topk.START_DELAY, topk.QUIET = 0.0, 0.2
        if not topk.available():
            raise SystemExit("tantivy is not installed: use --content-search fts5")


async def main_async(args: argparse.Namespace) -> int:
    choose_content_search(args.content_search)
    cases = [json.loads(line) for line in args.cases.read_text().splitlines() if line.strip()]
    if args.repo:
        cases = [case for case in cases if case["repo"] in args.repo]
    ours: dict[str, Scores] = defaultdict(Scores)
    base: dict[str, Scores] = defaultdict(Scores)
    index_seconds: list[float] = []
    history_index_seconds: list[float] = []
    misses: list[str] = []
    rankings = args.rankings.open("w", encoding="utf-8") if args.rankings else None
    with tempfile.TemporaryDirectory(prefix="filescout-relevance-") as temporary:
        for number, case in enumerate(cases, 1):
            build = workspace_with_history if args.history else workspace
            root = build(args.work, args.repos, case["repo"], case["parent"])
            ranked, reasons, seconds, indexed, history = await filescout_rank(
                root, case["query"], Path(temporary) / str(number), 100
            )
            if rankings is not None:
                shown = [
                    {"path": path, "reason": reason} for path, reason in zip(ranked, reasons, strict=True)
                ]
                rankings.write(json.dumps({**case, "ranked": shown[:RANKINGS_SHOWN]}) + "\n")
            index_seconds.append(indexed)
            if history is not None:
                history_index_seconds.append(history)
            for key in (case["repo"], "all"):
                ours[key].add(ranked, case["gold"], seconds)
            if not set(case["gold"]) <= set(ranked[:5]):
                misses.append(
                    f"{case['repo']} {case['commit'][:8]}: gold {case['gold']} top5 {ranked[:5]}"
                    f" | {case['query'][:100]!r}"
                )
            if not args.no_baseline:
                documents = baseline_documents(root)
                built = time.perf_counter()
                baseline = bm25_rank(documents, case["query"])
                for key in (case["repo"], "all"):
                    base[key].add(baseline, case["gold"], time.perf_counter() - built)
            print(f"{number}/{len(cases)} {case['repo']} {case['commit'][:8]}", file=sys.stderr)
    print(
        f"## Relevance — {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, "
        f"Python {platform.python_version()}\n"
    )
    kind = "workspaces with history (git clones at the parent)" if args.history else "plain trees"
    left_out = os.environ.get(ENVIRONMENT, "").strip()
    without = f", without {left_out}" if left_out else ""
    print(
        f"{len(cases)} cases in {kind}; filescout without a model (structural annotations, prefilter "
        f"stage{without}; content search: {args.content_search})\n"
    )
    print("| repo | n | system | R@1 | R@5 | R@10 | Acc@5 | MRR | median query ms | p95 query ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for repo in [*sorted(key for key in ours if key != "all"), "all"]:
        n = len(ours[repo].r1)
        print(
            f"| {repo} | {n} | filescout | "
            + " | ".join(ours[repo].row())
            + f" | {statistics.median(ours[repo].latency) * 1000:.1f} | {percentile(ours[repo].latency, 0.95) * 1000:.1f} |"
        )
        if base:
            print(
                f"| {repo} | {n} | BM25 baseline | "
                + " | ".join(base[repo].row())
                + f" | {statistics.median(base[repo].latency) * 1000:.1f} | {percentile(base[repo].latency, 0.95) * 1000:.1f} |"
            )
    print(f"\nindexing per workspace (structural): median {statistics.median(index_seconds):.2f} s")
    if history_index_seconds:
        print(
            f"of which reading the history: median {statistics.median(history_index_seconds):.2f} s, "
            f"longest {max(history_index_seconds):.2f} s"
        )
    if args.misses:
        print("\n".join(["", "### cases without every gold file in the top 5", *misses]))
    if rankings is not None:
        rankings.close()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=Path, required=True)
    parser.add_argument("--repos", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / ".work" / "relevance")
    parser.add_argument("--repo", action="append", help="only these repositories")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument(
        "--content-search",
        choices=("store", "fts5"),
        default="store",
        help="the top-k store, every word counted (default), or FTS5 with common words dropped",
    )
    parser.add_argument("--misses", action="store_true", help="list the cases missed at 5")
    parser.add_argument(
        "--rankings", type=Path, help="write each case with its first files and their reasons (JSON lines)"
    )
    parser.add_argument(
        "--history",
        action="store_true",
        help="workspaces are git work trees whose history ends at the parent (under WORK/with-history)",
    )
    parser.add_argument(
        "--without",
        metavar="SIGNALS",
        help="leave these prefilter signals out, comma-separated (" + ", ".join(SIGNALS) + ")",
    )
    args = parser.parse_args()
    if args.without is not None:
        os.environ[ENVIRONMENT] = args.without
    Signals.from_environment()  # an unknown name stops here, not after the first workspace
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
