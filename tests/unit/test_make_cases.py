"""Relevance cases made from a repository's history (bench/make_cases.py) carry the question as
the shared cases' README cleans it, and only commits that modified one to three source files the
parent has."""

from __future__ import annotations

import subprocess
from pathlib import Path

from make_cases import cases, cleaned


def test_a_message_loses_trailers_references_urls_and_addresses() -> None:
    message = (
        "Fix the retry loop (#123)\n\n"
        "* first part\n\nSigned-off-by: A Person <a@example.com>\n\n"
        "* second part, see https://example.com/x and owner/repo#45, mail b@example.org\n\n"
        "Co-authored-by: B <b@example.org>\nChange-Id: I0123\n"
    )
    assert cleaned(message) == "Fix the retry loop\n\n* first part\n\n* second part, see  and , mail"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_only_commits_that_modified_one_to_three_source_files_become_cases(tmp_path: Path) -> None:
    repo = tmp_path / "repos" / "owner+name"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "T")

    def commit(files: dict[str, str], message: str) -> None:
        for name, text in files.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", message)

    commit({"src/app.py": "a = 1\n", "src/util.py": "b = 1\n"}, "Start the application module")
    commit({"src/app.py": "a = 2\n", "tests/test_app.py": "t = 1\n"}, "Change the answer the app gives")
    commit({"src/new.py": "c = 1\n"}, "Add a brand new module for things")  # added: not a case
    commit({"README.md": "docs\n"}, "Document the application better")  # no source file
    commit({"src/util.py": "b = 2\n"}, "fix")  # too short a message

    made = cases(tmp_path / "repos", "owner/name", count=10, newest=100)

    assert [(case["query"], case["gold"]) for case in made] == [
        ("Change the answer the app gives", ["src/app.py"])
    ]
