"""git runs the same way wherever filescout calls it (`vcs/git.py`), and a repository's own
configuration cannot make it run a program: `core.fsmonitor` in `.git/config` is a command git
runs when it reads its index, which a folder copied or unpacked from elsewhere may carry."""

from __future__ import annotations

import ast
from pathlib import Path

from filescout.scan.ignore import IgnoreRules
from filescout.scan.tree import enumerate_files, git_check_ignore
from filescout.vcs.commits import HistoryReader, find_head
from harness.support import run_git

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "filescout"


def repository_with_a_hook(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("APP = 1\n")
    (root / ".gitignore").write_text("*.log\n")
    run_git(root, "init", "-q")
    run_git(root, "add", ".")
    run_git(root, "commit", "-q", "-m", "first")
    (root / "new.py").write_text("NEW = 1\n")  # untracked: listing it reads the index and the tree
    marker = tmp_path / "the-hook-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    run_git(root, "config", "core.fsmonitor", str(hook))
    return root, marker


def test_a_repositorys_fsmonitor_hook_never_runs(tmp_path: Path) -> None:
    root, marker = repository_with_a_hook(tmp_path)
    listed = enumerate_files(root, IgnoreRules.for_workspace(root))
    assert listed.source == "git" and {"app.py", "new.py"} <= set(listed.paths)
    assert git_check_ignore(root, ["debug.log", "app.py"]) == {"debug.log"}
    head = find_head(root)
    assert head is not None
    commits = [commit for batch in HistoryReader(root, head).batches() for commit in batch]
    assert [commit.subject for commit in commits] == ["first"]
    assert not marker.exists(), "git ran the repository's fsmonitor hook"


STARTERS = {
    PACKAGE / "vcs" / "git.py": "git",
    PACKAGE / "engine" / "handoff.py": "filescout's own background indexer",
}
"""The modules that start a process, and what each starts."""


def test_only_the_git_runner_starts_processes() -> None:
    """Every other module asks `vcs/git.py`, so no git call can miss its hardening; the one
    other process started this way is filescout itself, in the background (`engine/handoff.py`)."""
    starts = {"run", "Popen", "call", "check_call", "check_output"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path in STARTERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "subprocess"
                and node.func.attr in starts
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []
