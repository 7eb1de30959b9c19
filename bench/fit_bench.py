"""The ranking weights fitted on each repository's own history: their gain over the defaults on
its newest commits, what was fitted, and what the fit cost beside reading the history.

    python bench/fit_bench.py --repos MIRRORS [--repo owner/name ...] [--work DIR] [--json OUT]

Each repository (`--repos` holds `owner+name/repo` git directories, as bench/relevance.py's) is
cloned at its HEAD under `--work`, indexed by `filescout index` on a fresh cache (the history is
read and the weights fitted as a server does), and the fit stored in the index is printed: the
mean reciprocal rank of the held-out newest commits' source files with the default and with the
fitted weights, whether the fitted ones are used, the weights that moved, the fit's seconds and
the history read's. The held-out commits are judged on their files as they were before each
(relevance/past_versions.py, read from the clone's history); bench/relevance.py --history
measures on work trees at each case's parent.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from filescout.relevance.weights import META_KEY


def clone(repos: Path, repo: str, work: Path) -> Path:
    source = repos / repo.replace("/", "+") / "repo"
    target = work / repo.replace("/", "+")
    if not target.exists():
        subprocess.run(["git", "clone", "-q", str(source), str(target)], check=True)
    return target


def fitted(root: Path, cache: Path) -> dict[str, Any] | None:
    env = {**os.environ, "FILESCOUT_CACHE_DIR": str(cache)}
    subprocess.run(
        [sys.executable, "-m", "filescout", "index", str(root)],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    (database,) = cache.glob("*/index.sqlite3")
    with sqlite3.connect(database) as db:
        stored = db.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        state = db.execute("SELECT built_ms, (SELECT count(*) FROM commits) FROM history_state").fetchone()
    if stored is None or state is None:  # no history read (not a git work tree, or git failed)
        return None
    built_ms, commits = state
    fit: dict[str, Any] = json.loads(stored[0])
    fit["history_read_s"] = built_ms / 1000
    fit["commits"] = commits
    return fit


def moved(weights: dict[str, float]) -> str:
    from filescout.relevance.weights import DEFAULT

    return ", ".join(
        f"{name} {value:g}" for name, value in weights.items() if getattr(DEFAULT, name) != value
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", type=Path, required=True)
    parser.add_argument("--repo", action="append", help="owner/name (default: every repository in --repos)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "filescout-fit-bench")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    names = args.repo or sorted(path.parent.name.replace("+", "/", 1) for path in args.repos.glob("*+*/repo"))
    args.work.mkdir(parents=True, exist_ok=True)
    results = {}
    print(
        "| repository | commits | history read s | fit s | held-out MRR default | fitted | used | weights moved |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        root = clone(args.repos, name, args.work)
        with tempfile.TemporaryDirectory(prefix="filescout-fit-") as cache:
            fit = fitted(root, Path(cache))
        results[name] = fit
        if fit is None:
            print(f"| {name} | no history read | | | | | | |", flush=True)
            continue
        print(
            f"| {name} | {fit['commits']} | {fit['history_read_s']:.2f} | {fit['seconds']:.2f} | "
            f"{fit['default_mrr']:.3f} | {fit['fitted_mrr']:.3f} | {'yes' if fit['kept'] else 'no'} | "
            f"{moved(fit['weights']) or '—'} |",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
