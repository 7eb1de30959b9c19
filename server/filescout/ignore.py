"""Which paths belong in the index: gitignore semantics plus filescout's own rules."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pathspec

DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git/", ".hg/", ".svn/", ".jj/",
    "node_modules/", "bower_components/", "jspm_packages/",
    ".venv/", "venv/", ".tox/", ".nox/", "__pycache__/", "*.pyc", ".mypy_cache/",
    ".pytest_cache/", ".ruff_cache/", ".eggs/", "*.egg-info/",
    ".gradle/", ".idea/", ".vscode-test/", ".next/", ".nuxt/", ".svelte-kit/", ".turbo/",
    ".cache/", ".parcel-cache/", "target/debug/", "target/release/",
    ".DS_Store", "Thumbs.db",
)


def compile_patterns(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def read_ignore_file(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


class IgnoreRules:
    """Layered gitignore matching: built-in defaults and configured excludes at the root, then
    every `.gitignore` found on the way down; the deepest matching rule wins, as in git."""

    def __init__(self, extra_excludes: Sequence[str] = ()) -> None:
        self._base = compile_patterns([*DEFAULT_EXCLUDES, *extra_excludes])
        self._nested: dict[str, pathspec.GitIgnoreSpec] = {}

    def add_gitignore(self, directory: str, lines: Sequence[str]) -> None:
        """Register the `.gitignore` of `directory` ("" for the root)."""
        if any(line.strip() and not line.lstrip().startswith("#") for line in lines):
            self._nested[directory] = compile_patterns(lines)

    def excluded_by_base(self, path: str, *, is_dir: bool = False) -> bool:
        return self._base.match_file(path + "/" if is_dir else path)

    def is_ignored(self, path: str, *, is_dir: bool = False) -> bool:
        candidate = path + "/" if is_dir else path
        if self._base.match_file(candidate):
            return True
        verdict = False
        directory = ""
        parts = path.split("/")
        for depth in range(len(parts)):
            directory = "/".join(parts[:depth])
            spec = self._nested.get(directory)
            if spec is None:
                continue
            relative = candidate[len(directory) + 1:] if directory else candidate
            result = spec.check_file(relative)
            if result.include is not None:
                verdict = result.include
        return verdict
