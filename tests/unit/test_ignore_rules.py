"""Globs and ignore rules against what a workspace or a client can throw at them: patterns that
make a backtracking matcher run for seconds, a walk that must list what git lists, thousands of
nested .gitignore files, and settings beyond their bounds."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pathspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from filescout.core.errors import InvalidParams
from filescout.engine.settings import load_settings
from filescout.relevance.filters import PathFilter
from filescout.scan.globs import Globs, InvalidPattern
from filescout.scan.ignore import MAX_IGNORE_PATTERNS, IgnoreRules
from filescout.scan.tree import git_ls_files, walk
from filescout_protocol.types import MAX_FILE_SIZE_LIMIT, MAX_PATTERNS
from harness.support import run_git

BACKTRACKING = [
    ("*a*a*a*a*a*a*a*a*a*a*b", "a" * 40),  # 19 s with a backtracking matcher
    ("**/**/**/**/*a*a*a*a*a*b", "a" * 110),  # 4.4 s
]
RETURNS_WITHIN = 3.0
"""Seconds: generous for a match, far less than the backtracking took."""
T = TypeVar("T")


def timed(call: Callable[[], T]) -> tuple[T, float]:
    """What `call` returns, and the seconds it took. (A thread could not time it out: a regular
    expression holds the GIL while it backtracks.)"""
    started = time.perf_counter()
    result = call()
    return result, time.perf_counter() - started


@pytest.mark.parametrize(("glob", "name"), BACKTRACKING)
def test_a_backtracking_glob_is_matched_at_once(tmp_path: Path, glob: str, name: str) -> None:
    scope = PathFilter.build(tmp_path, [glob], [])
    matched, seconds = timed(lambda: scope.matches(name))
    assert not matched and seconds < RETURNS_WITHIN
    assert scope.matches(name + "b") and scope.matches(f"deep/er/{name}b")


@pytest.mark.parametrize(("pattern", "name"), BACKTRACKING)
@pytest.mark.parametrize("source", ["exclude", "include", ".filescoutignore", ".gitignore"])
def test_a_backtracking_ignore_pattern_is_matched_at_once(
    tmp_path: Path, source: str, pattern: str, name: str
) -> None:
    (tmp_path / name).write_text("x")
    (tmp_path / f"{name}b").write_text("x")
    if source in (".filescoutignore", ".gitignore"):
        (tmp_path / source).write_text(pattern + "\n")
    settings = {"exclude": [pattern]} if source == "exclude" else {}
    settings |= {"include": [pattern]} if source == "include" else {}
    rules = IgnoreRules.for_workspace(tmp_path, **settings)
    listed, seconds = timed(lambda: set(walk(tmp_path, rules)))
    assert seconds < RETURNS_WITHIN
    excluded = source != "include"
    assert (f"{name}b" not in listed) == excluded and name in listed
    rules = IgnoreRules.for_workspace(tmp_path, **settings)
    ignored, seconds = timed(lambda: rules.is_ignored_after_git(name, git_ignored=False))
    assert not ignored and seconds < RETURNS_WITHIN
    excluded_after_git = source in ("exclude", ".filescoutignore")  # git applies .gitignore itself
    assert rules.is_ignored_after_git(f"{name}b", git_ignored=False) == excluded_after_git


# What git lists, for trees and ignore files that take its rules at their word: each case is a
# tree of (path, text) and is listed by `git ls-files` in a git copy and walked in a plain one.
GIT_CASES: dict[str, dict[str, str]] = {
    "whitelist": {
        ".gitignore": "*\n!*/\n!*.py\n",
        "a.py": "",
        "a.txt": "",
        "sub/b.py": "",
        "sub/b.txt": "",
        "sub/deep/c.py": "",
        "sub/deep/c.md": "",
        "sub/deeper/still/d.py": "",
    },
    "whitelist of one directory": {
        ".gitignore": "/*\n!/src/\n!.gitignore\n",
        "top.txt": "",
        "other/x.py": "",
        "src/x.py": "",
        "src/inner/y.py": "",
    },
    "negations in nested files": {
        ".gitignore": "*.log\n!keep.log\nout/\n",
        "a.log": "",
        "keep.log": "",
        "out/o.py": "",
        "sub/.gitignore": "!*.log\n*.tmp\n",
        "sub/b.log": "",
        "sub/b.tmp": "",
        "sub/deep/c.log": "",
        "sub/deep/c.tmp": "",
        "sub/out/x.py": "",
    },
    "anchors, directories and double stars": {
        ".gitignore": "/top.txt\ndata/\nfoo/**\na/**/b\n**/cache/\ndocs/**/*.tmp\n*/gen\n",
        "top.txt": "",
        "sub/top.txt": "",
        "data": "",
        "x/data/y.txt": "",
        "foo/x.py": "",
        "foo/bar/y.py": "",
        "foo.py": "",
        "a/b": "",
        "a/x/y/b": "",
        "a/c": "",
        "z/cache/c.py": "",
        "cache.py": "",
        "docs/one.tmp": "",
        "docs/deep/two.tmp": "",
        "docs/deep/two.md": "",
        "pkg/gen": "",
        "pkg/deep/gen": "",
    },
    "directories below a directory, and classes": {
        ".gitignore": "logs/**/\n*/**/tmp/\n?a[!a]\nx[!y]z\n",
        "logs/today.txt": "",
        "logs/old/day.txt": "",
        "src/tmp/a.py": "",
        "tmp/b.py": "",
        "aa/kept.py": "",
        "bab": "",
        "x/z": "",
    },
    "a directory's own rules and its parent's": {
        ".gitignore": "*.txt\n",
        "a.txt": "",
        "d/.gitignore": "!*.txt\nlocal/\n",
        "d/b.txt": "",
        "d/local/c.py": "",
        "d/e/f.txt": "",
        "local/kept.py": "",
    },
    "patterns that are not patterns": {
        ".gitignore": "# comment\n\n\\#hash\n\\!bang\ntrailing   \n[z-a]\nunclosed[\n",
        "#hash": "",
        "!bang": "",
        "trailing": "",
        "y": "",  # `[z-a]` must not stop the walk (git matches `z` with it, an oddity left out)
        "unclosed[": "",
        "kept.py": "",
    },
}


def write_tree(root: Path, tree: dict[str, str]) -> Path:
    for relative, text in tree.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("case", sorted(GIT_CASES))
def test_a_walk_lists_what_git_lists(tmp_path: Path, case: str) -> None:
    tree = GIT_CASES[case]
    plain = write_tree(tmp_path / "plain", tree)
    repository = write_tree(tmp_path / "git", tree)
    run_git(repository, "init", "-q")
    listed = subprocess.run(
        ["git", "-C", str(repository), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    by_git = {path for path in listed.split("\0") if path}
    assert set(walk(plain, IgnoreRules())) == by_git
    assert set(git_ls_files(repository, IgnoreRules()) or ()) == by_git


def test_many_nested_gitignores_cost_what_their_rules_cost(tmp_path: Path) -> None:
    """Each .gitignore applies below its own directory: a path is matched against the files of
    its ancestors, not against every file the walk found."""
    for with_rules in (False, True):
        for index in range(2000):
            directory = tmp_path / str(with_rules) / f"pkg{index // 100:02d}" / f"mod{index:04d}"
            directory.mkdir(parents=True)
            if with_rules:
                (directory / ".gitignore").write_text("*.tmp\nbuild/\n")
            for number in range(20):
                (directory / f"file{number:02d}.py").write_text("")
    started = time.perf_counter()
    assert len(walk(tmp_path / "False", IgnoreRules())) == 40_000
    plain = time.perf_counter() - started
    started = time.perf_counter()
    assert len(walk(tmp_path / "True", IgnoreRules())) == 42_000
    with_gitignores = time.perf_counter() - started
    assert with_gitignores < 4 * plain + 1.0, (with_gitignores, plain)


def test_an_ignore_file_beyond_its_bounds_applies_its_first_patterns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    names = [f"f{index}" for index in range(MAX_IGNORE_PATTERNS + 1)]
    huge = "*a" * 500_000  # a megabyte: RE2 took a second over it and wrote to stderr per node
    (tmp_path / ".gitignore").write_text("\n".join([*names, huge]) + "\n")
    for name in ("f0", names[MAX_IGNORE_PATTERNS - 1], names[MAX_IGNORE_PATTERNS], "a" * 200):
        (tmp_path / name).write_text("x")
    listed, seconds = timed(lambda: set(walk(tmp_path, IgnoreRules())))
    assert listed == {".gitignore", names[MAX_IGNORE_PATTERNS], "a" * 200}
    assert seconds < RETURNS_WITHIN
    assert any("first 10000 patterns" in record.message for record in caplog.records)
    assert any("longer than 4096" in record.message for record in caplog.records)
    assert len(capfd.readouterr().err.splitlines()) < 10


def test_too_many_patterns_in_the_settings_are_refused_naming_the_field(tmp_path: Path) -> None:
    editor = {"exclude": [f"gen{index}/" for index in range(MAX_PATTERNS + 1)], "maxFileSize": 2048}
    loaded = load_settings(tmp_path, editor, env={})
    assert loaded.settings.exclude == []
    assert loaded.settings.max_file_size == 2048  # the rest of the editor's settings apply
    assert any("editor settings" in w and "exclude" in w for w in loaded.warnings), loaded.warnings
    editor["exclude"] = editor["exclude"][:MAX_PATTERNS]
    assert len(load_settings(tmp_path, editor, env={}).settings.exclude) == MAX_PATTERNS


@pytest.mark.parametrize("value", [10**30, MAX_FILE_SIZE_LIMIT + 1])
def test_a_max_file_size_beyond_its_bound_is_refused_naming_the_field(tmp_path: Path, value: int) -> None:
    (tmp_path / "filescout.toml").write_text(f"max_file_size = {value}\nexclude = ['gen/']\n")
    loaded = load_settings(tmp_path, {"maxFileSize": value, "include": ["keep.py"]}, env={})
    assert loaded.settings.max_file_size == 1_048_576
    assert loaded.settings.exclude == ["gen/"] and loaded.settings.include == ["keep.py"]
    assert sum("maxFileSize" in w for w in loaded.warnings) == 2, loaded.warnings
    largest = load_settings(tmp_path, {"maxFileSize": MAX_FILE_SIZE_LIMIT}, env={})
    assert largest.settings.max_file_size == MAX_FILE_SIZE_LIMIT


@pytest.mark.parametrize(("glob", "index"), [("[z-a]", 1), ("[[:nope:]]", 1)])
def test_a_glob_that_is_no_pattern_is_refused_naming_it(tmp_path: Path, glob: str, index: int) -> None:
    with pytest.raises(InvalidParams, match=rf"globs\[{index}\]"):
        PathFilter.build(tmp_path, ["*.py", glob], [])


# Globs as getFiles reads them: pathspec's PathSpec of gitignore patterns with Python's `re`
# (backtracking, so kept to short patterns here): the last pattern naming the path or a directory
# above it decides. Newlines are left out: RE2 lets `.` match one, as git does.
GLOB_ATOMS = ["a", "b", "ab", "*", "?", "**", "/", "[ab]", "[!a]", ".py", "x", "\\*", " "]
PATH_ATOMS = ["a", "b", "x", ".py", "ab", "*", " "]
glob_lists = st.lists(
    st.builds(
        lambda negated, anchored, atoms, directory: (
            "!" * negated + "/" * anchored + "".join(atoms) + "/" * directory
        ),
        st.booleans(),
        st.booleans(),
        st.lists(st.sampled_from(GLOB_ATOMS), min_size=1, max_size=6),
        st.booleans(),
    ),
    min_size=1,
    max_size=4,
)
paths = st.lists(
    st.lists(st.sampled_from(PATH_ATOMS), min_size=1, max_size=3).map("".join), min_size=1, max_size=4
).map("/".join)


@settings(max_examples=400, deadline=None)
@given(glob_lists, st.lists(paths, min_size=1, max_size=20))
def test_globs_match_the_reference_path_for_path(globs: list[str], candidates: list[str]) -> None:
    try:
        before = pathspec.PathSpec.from_lines(GitIgnoreSpecPattern, globs, backend="simple")
    except ValueError:  # not a pattern (`!/`): refused then, refused now
        with pytest.raises(InvalidPattern):
            Globs(globs)
        return
    now = Globs(globs)
    assert [now.match(path) for path in candidates] == [before.match_file(path) for path in candidates]


@pytest.mark.parametrize(
    ("globs", "kept"),
    [
        (["*.py", "!tests/"], ["src/a.py"]),  # the example the docs and the tools' schemas give
        (["!tests/"], ["src/a.py", "README.md"]),
        (["!tests"], ["src/a.py", "README.md"]),
        (["tests/", "!tests/keep.py"], ["tests/test_cart.py"]),
        (["!tests/", "tests/keep.py"], ["tests/keep.py"]),  # with an inclusion, nothing else is included
    ],
)
def test_the_last_pattern_naming_a_path_or_a_directory_above_it_decides(
    tmp_path: Path, globs: list[str], kept: list[str]
) -> None:
    scope = PathFilter.build(tmp_path, globs, [])
    candidates = ["tests/test_cart.py", "src/a.py", "tests/keep.py", "README.md"]
    assert [path for path in candidates if scope.matches(path)] == sorted(kept, key=candidates.index)
