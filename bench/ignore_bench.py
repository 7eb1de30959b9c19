"""What matching the ignore rules costs a scan, apart from listing the tree.

    python bench/make_workspace.py /tmp/tree --files 100000
    python bench/ignore_bench.py /tmp/tree [--runs 7]

Lists the tree once as a walk does (each directory's entries, in order, and the .gitignore files
it meets), then times the questions alone: a walk's (`IgnoreRules.is_ignored` for each entry,
.gitignore files registered as the walk reaches them) and a git listing's
(`IgnoreRules.is_ignored_after_git` for each file). Prints the CPU seconds of the fastest run
and of the median one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from filescout.scan.ignore import IgnoreRules

Question = tuple[str, bool | None, list[str] | None]
"""(path, is it a directory, or None for "the walk enters this directory"; its .gitignore)"""


def walk_questions(root: Path) -> list[Question]:
    """What a walk of `root` asks the rules, in the order it asks."""
    rules = IgnoreRules()
    questions: list[Question] = []
    stack = [""]
    while stack:
        directory = stack.pop()
        absolute = root / directory
        gitignore = absolute / ".gitignore"
        lines = gitignore.read_text(errors="replace").splitlines() if gitignore.is_file() else None
        questions.append((directory, None, lines))
        if lines is not None:
            rules.add_gitignore(directory, lines)
        with os.scandir(absolute) as entries:
            listed = sorted(entries, key=lambda entry: entry.name)
        entered = []
        for entry in listed:
            relative = f"{directory}/{entry.name}" if directory else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            questions.append((relative, is_dir, None))
            if is_dir and (
                not rules.is_ignored(relative, is_dir=True) or rules.may_reinclude_below(relative)
            ):
                entered.append(relative)
        stack.extend(reversed(entered))
    return questions


def ask_as_a_walk(questions: list[Question]) -> None:
    rules = IgnoreRules()
    for path, is_dir, lines in questions:
        if is_dir is None:
            if lines is not None:
                rules.add_gitignore(path, lines)
        else:
            rules.is_ignored(path, is_dir=is_dir)


def ask_as_git(files: list[str]) -> None:
    rules = IgnoreRules()
    for path in files:
        rules.is_ignored_after_git(path, git_ignored=False)


def timed(label: str, runs: int, call: Callable[[], None], count: int) -> None:
    seconds = []
    for _ in range(runs):
        started = time.process_time()  # CPU time: steadier than the clock on a shared machine
        call()
        seconds.append(time.process_time() - started)
    median = statistics.median(seconds)
    print(f"{label}: {min(seconds):.3f} s of CPU (median {median:.3f} s) for {count} questions")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    questions = walk_questions(args.directory)
    files = [path for path, is_dir, _ in questions if is_dir is False]
    asked = sum(is_dir is not None for _, is_dir, _ in questions)
    timed("walk", args.runs, lambda: ask_as_a_walk(questions), asked)
    timed("git listing", args.runs, lambda: ask_as_git(files), len(files))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
