"""Relevance cases from a repository's own history, made as the shared cases' README makes them,
for repositories that set has none of (large ones, other languages).

    python bench/make_cases.py --repos DIR --repo OWNER/NAME [--count 25] [--newest 2000] > CASES.jsonl

Each case is a commit reachable from HEAD that is not a merge and modified one to
three source files (added, deleted or renamed source files disqualify it: the question must be
about files the parent has). The question is its subject and body without trailers
(`Signed-off-by:` ...), issue and pull-request references, URLs or e-mail addresses; a message
left with fewer than 20 characters disqualifies it. Of the qualifying commits among the newest
`--newest`, `--count` are taken evenly spaced, so the set spans that stretch of history and is
the same on every run. Which files are source is filescout's own classification (tests, docs,
config and data are not), decided from the path alone.

Cases feed `bench/relevance.py --cases CASES.jsonl --repos DIR`.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from filescout.scan.classify import classify
from harness.repositories import git_dir

TRAILER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*:\s+\S")
"""A `Key: value` line: a trailer when it ends the message."""
ATTRIBUTION = re.compile(r"^\s*(?:[A-Za-z-]+-by|Change-Id|Cc):\s", re.IGNORECASE)
"""A trailer wherever it stands (a squashed commit keeps each of its commits' sign-offs)."""
REFERENCE = re.compile(r"(?:[\w.-]+/[\w.-]+)?#\d+|\bGH-\d+\b")
URL = re.compile(r"https?://\S+|www\.\S+")
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
SHORTEST = 20
RECORD = "\x1e"
FIELD = "\x1f"


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str
    message: str


def cleaned(message: str) -> str:
    """The subject and body without trailers, references, URLs or addresses."""
    lines = [line for line in message.strip().splitlines() if not ATTRIBUTION.match(line)]
    while lines and (not lines[-1].strip() or TRAILER.match(lines[-1].strip())):
        lines.pop()
    text = "\n".join(lines)
    for pattern in (URL, EMAIL, REFERENCE):
        text = pattern.sub("", text)
    text = re.sub(r"\(\s*\)", "", text)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def commits(git: Path, newest: int) -> list[Commit]:
    """Non-merge commits reachable from HEAD, newest first (a project that merges every change
    has none on its first-parent line)."""
    out = subprocess.run(
        ["git", f"--git-dir={git}", "log", "--no-merges", f"-n{newest}",
         f"--format={RECORD}%H{FIELD}%P{FIELD}%B"],
        check=True, capture_output=True, text=True, errors="replace",
    ).stdout  # fmt: skip
    found = []
    for record in out.split(RECORD)[1:]:
        sha, parents, message = record.split(FIELD, 2)
        if parents.split():
            found.append(Commit(sha, parents.split()[0], message))
    return found


def modified_sources(git: Path, commit: Commit) -> list[str] | None:
    """The source files the commit modified, or None when it added, deleted or renamed one."""
    out = subprocess.run(
        ["git", f"--git-dir={git}", "diff", "--name-status", "-M", commit.parent, commit.sha],
        check=True, capture_output=True, text=True, errors="replace",
    ).stdout  # fmt: skip
    modified = []
    for line in out.splitlines():
        status, *paths = line.split("\t")
        sources = [path for path in paths if classify(path, b"").kind == "source"]
        if not sources:
            continue
        if status != "M":
            return None
        modified.extend(sources)
    return sorted(modified)


def cases(repos: Path, repo: str, count: int, newest: int) -> list[dict[str, object]]:
    git = git_dir(repos, repo)
    qualifying = []
    for commit in commits(git, newest):
        query = cleaned(commit.message)
        if len(query) < SHORTEST:
            continue
        gold = modified_sources(git, commit)
        if gold and 1 <= len(gold) <= 3:
            qualifying.append(
                {"repo": repo, "commit": commit.sha, "parent": commit.parent, "query": query, "gold": gold}
            )
    if len(qualifying) <= count:
        return qualifying
    step = len(qualifying) / count
    return [qualifying[int(number * step)] for number in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", type=Path, required=True)
    parser.add_argument("--repo", action="append", required=True, help="owner/name, as DIR/owner+name")
    parser.add_argument("--count", type=int, default=25, help="cases per repository")
    parser.add_argument("--newest", type=int, default=2000, help="commits looked at per repository")
    args = parser.parse_args()
    for repo in args.repo:
        made = cases(args.repos, repo, args.count, args.newest)
        print(f"{repo}: {len(made)} cases", file=sys.stderr)
        for case in made:
            print(json.dumps(case))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
