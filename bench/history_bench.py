"""The history index at scale: a repository with a long history (git's own, 80K commits).

    python bench/history_bench.py --repos DIR [--work DIR]

`--repos` holds `git+git` (a clone of git/git, or a bare one at `git+git/repo`), as for
bench/relevance.py.

The workspace is a git work tree borrowing the clone's objects, at a commit with about 50,000
ancestors (built as bench/relevance.py builds its workspaces with history), indexed once with the
embedded default. Then, on that index: a full read of the history (capped at the newest 50,000
commits), beside `git log --name-status` and `git log --name-only` over the same commits in the
same run; HEAD moved on by one commit and by about a hundred (extensions); HEAD moved to the
clone's newest commit (more than the cap allows to add: read again). Reported: those times, the
size the history adds to the index, and the history stage's time per question (median, p95), the
questions being the subjects of the commits after the workspace's.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

from filescout.annotate.structural import ANNOTATOR_ID
from filescout.engine import Workspace
from filescout.engine.history_keeper import HistoryKeeper
from filescout.engine.settings import default_db_path
from filescout.index import Index
from filescout.relevance.evidence import CO_LEADERS
from filescout.relevance.filters import PathFilter
from filescout.relevance.past_commits import companions, gather_votes
from filescout.relevance.prefilter import prefilter
from filescout.relevance.query import analyse
from filescout.relevance.signals import Signals
from filescout.relevance.weights import KIND_PRIOR
from filescout.vcs.commits import MAX_COMMITS
from harness import launch
from harness.procfs import load_average
from harness.repositories import git_dir, workspace_with_history
from harness.stats import percentile

REPO = "git/git"
ANCESTORS = 50_000
QUESTIONS = 50


def git(repository: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={repository}", *args], check=True, capture_output=True, text=True
    ).stdout


def count(repository: Path, revisions: str) -> int:
    return int(git(repository, "rev-list", "--count", revisions))


def commit_with_ancestors(repository: Path, wanted: int) -> str:
    """The first-parent ancestor of HEAD with about `wanted` ancestors (binary search)."""
    line = git(repository, "rev-list", "--first-parent", "HEAD").split()
    low, high = 0, len(line) - 1  # ancestors fall as the index grows
    while low < high:
        middle = (low + high) // 2
        if count(repository, line[middle]) > wanted:
            low = middle + 1
        else:
            high = middle
    return line[low]


def later(repository: Path, base: str, at_least: int) -> str:
    """The first commit on HEAD's first-parent line that is `at_least` commits past `base`."""
    line = git(repository, "rev-list", "--first-parent", "--reverse", f"{base}..HEAD").split()
    for commit in line:
        if count(repository, f"{base}..{commit}") >= at_least:
            return commit
    raise SystemExit(f"no commit {at_least} past {base}")


def git_log_seconds(root: Path, *args: str) -> float:
    started = time.perf_counter()
    with subprocess.Popen(
        ["git", "-C", str(root), "log", f"--max-count={MAX_COMMITS}", *args, "HEAD"],
        stdout=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        while process.stdout.read(1 << 16):
            pass
    return time.perf_counter() - started


def move_head(root: Path, commit: str) -> None:
    subprocess.run(["git", "-C", str(root), "update-ref", "refs/heads/main", commit], check=True)


async def used_bytes(index: Index) -> int:
    rows = await index.db.reader.execute_fetchall("PRAGMA page_count")
    free = await index.db.reader.execute_fetchall("PRAGMA freelist_count")
    size = await index.db.reader.execute_fetchall("PRAGMA page_size")
    return (int(rows[0][0]) - int(free[0][0])) * int(size[0][0])


async def timed_update(keeper: HistoryKeeper) -> float:
    started = time.perf_counter()
    await keeper.update()
    return time.perf_counter() - started


async def main_async(args: argparse.Namespace) -> int:
    repository = git_dir(args.repos, REPO)
    base = commit_with_ancestors(repository, ANCESTORS)
    one = later(repository, base, 1)
    hundred = later(repository, one, 100)
    newest = git(repository, "rev-parse", "HEAD").strip()
    root = workspace_with_history(args.work, args.repos, REPO, base)
    move_head(root, base)
    env = launch.server_env(args.work / "cache")
    database = default_db_path(root.resolve(), env)
    if not database.exists():  # the files and their annotations, once
        engine = await Workspace.open(root, {}, env=env)
        engine.start_indexing("index")
        await engine.wait_idle()
        await engine.close()
    questions = git(repository, "log", "--format=%s", "--reverse", f"{base}..{newest}").splitlines()[
        :QUESTIONS
    ]
    index = await Index.open(database)
    try:
        await index.history.clear()
        before = await used_bytes(index)
        keeper = HistoryKeeper(root, index)
        full = await timed_update(keeper)
        state = await index.history.state()
        assert state is not None and state.tip == base
        added = await used_bytes(index) - before
        name_status = git_log_seconds(root, "--name-status", "--find-renames", "--format=%H %ct %P%n%B")
        name_only = git_log_seconds(root, "--name-only", "--format=%H")
        stage, prefilter_with, prefilter_without = await question_times(index, questions)
        move_head(root, one)
        by_one = await timed_update(keeper)
        move_head(root, hundred)
        by_hundred = await timed_update(keeper)
        moved = count(repository, f"{one}..{hundred}")
        move_head(root, newest)
        at_newest = await timed_update(keeper)
        move_head(root, base)
    finally:
        await index.close()
    print(
        f"## History index — {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, Python "
        f"{platform.python_version()}\n"
    )
    print(
        f"git/git at {base[:10]} ({count(repository, base)} ancestors; the newest {state.commits} read); "
        f"load {load_average()}\n"
    )
    print("| measure | value |\n|---|---|")
    print(f"| full read, {state.commits} commits | {full:.2f} s |")
    print(
        f"| `git log --name-status` (the same commits, what is read) | {name_status:.2f} s "
        f"(read / git log = {full / name_status:.2f}) |"
    )
    print(
        f"| `git log --name-only` (the same commits) | {name_only:.2f} s (read / git log = "
        f"{full / name_only:.2f}) |"
    )
    print(
        f"| size added to the index | {added / 2**20:.1f} MiB ({added / state.commits:.0f} bytes a commit) |"
    )
    print(f"| HEAD moved on by 1 commit | {by_one * 1000:.0f} ms |")
    print(f"| HEAD moved on by {moved} commits | {by_hundred * 1000:.0f} ms |")
    print(
        f"| HEAD moved to the newest commit ({count(repository, newest)} ancestors: read again) | "
        f"{at_newest:.2f} s |"
    )
    print(
        f"| history stage per question ({len(stage)} questions), median / p95 | "
        f"{statistics.median(stage) * 1000:.1f} / {percentile(stage, 0.95) * 1000:.1f} ms |"
    )
    print(
        f"| prefilter per question with / without history, median | "
        f"{statistics.median(prefilter_with) * 1000:.1f} / {statistics.median(prefilter_without) * 1000:.1f} ms |"
    )
    return 0


async def question_times(index: Index, questions: list[str]) -> tuple[list[float], list[float], list[float]]:
    """Per question: the history stage alone (on the text stage's ranking), and the whole
    prefilter with and without history."""
    stage: list[float] = []
    with_history: list[float] = []
    without: list[float] = []
    for text in questions:
        query = analyse(text)
        if not query.terms:
            continue
        started = time.perf_counter()
        found = await prefilter(
            index, query, limit=20, scope=PathFilter(), current=ANNOTATOR_ID, signals=Signals(history=False)
        )
        without.append(time.perf_counter() - started)
        scored = [(candidate.score, candidate.item.path) for candidate in found]
        started = time.perf_counter()
        await gather_votes(index, query, PathFilter())
        await companions(index, [path for _, path in scored[:CO_LEADERS]], query, PathFilter(), KIND_PRIOR)
        stage.append(time.perf_counter() - started)
        started = time.perf_counter()
        await prefilter(index, query, limit=20, scope=PathFilter(), current=ANNOTATOR_ID, signals=Signals())
        with_history.append(time.perf_counter() - started)
    return stage, with_history, without


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / ".work" / "history")
    args = parser.parse_args()
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
