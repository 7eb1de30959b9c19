"""Work trees made from the clones under a repositories folder (owner+name/), as the relevance
benchmarks use them: a commit's tree alone, or with the history before it and nothing after."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def git_dir(repos: Path, repo: str) -> Path:
    base = repos / repo.replace("/", "+")
    for candidate in (base / ".git", base / "repo", base):
        if (candidate / "HEAD").exists():
            return candidate
    raise SystemExit(f"no git repository for {repo} under {repos}")


def workspace(work: Path, repos: Path, repo: str, parent: str) -> Path:
    """The parent's tree alone, as a tarball or a fresh checkout without history gives it."""
    target = work / repo.replace("/", "+") / parent
    if not (target / ".done").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", f"--git-dir={git_dir(repos, repo)}", "archive", parent], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        (target / ".done").write_text("")
    return target


def workspace_with_history(work: Path, repos: Path, repo: str, parent: str) -> Path:
    """A git work tree at the parent whose history holds the parent's ancestors only: a new
    repository borrowing the clone's objects (alternates), with one branch at the parent. No ref
    names a later commit, so `git log` cannot see the change or anything after it."""
    target = work / "with-history" / repo.replace("/", "+") / parent
    done = target / ".git" / "bench-done"
    if not done.exists():
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        objects = (git_dir(repos, repo) / "objects").resolve()
        git = ["git", "-C", str(target)]
        subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
        (target / ".git" / "objects" / "info" / "alternates").write_text(f"{objects}\n")
        subprocess.run([*git, "update-ref", "refs/heads/main", parent], check=True)
        subprocess.run([*git, "checkout", "-q", "-f", "main"], check=True)
        done.write_text("")
    return target
