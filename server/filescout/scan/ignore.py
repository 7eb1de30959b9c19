"""Which paths belong in the index.

Layers, evaluated in this order with the last matching pattern winning (gitignore semantics):

1. built-in defaults (VCS folders, dependency folders, virtualenvs, caches, build output, lock
   files);
2. git's rules: nested `.gitignore`s and `.git/info/exclude` (git applies these itself when it
   lists the files; the directory walk applies them here);
3. the configured `exclude` globs;
4. `.filescoutignore` at the workspace root, which may also re-include with `!pattern`;
5. the configured `include` globs, which always re-include.

As git does while it walks a tree, each entry is judged by the last pattern that names the entry
itself (`foo/` names directories only), and what is inside a directory shares its verdict unless a
pattern names it: `*`, `!*/`, `!*.py` keeps Python files at every depth. A directory that is
excluded is not entered, unless a re-include pattern names a path inside it
(`!build/generated/` or `build/generated/api.py`): `!*.log` re-includes logs wherever the walk
goes, but does not open `node_modules/`. In a git work tree git lists the files and decides by
its own rules; filescout's layers judge what it lists the same way, directory by directory.
Patterns are matched in linear time (`filescout.scan.globs`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from filescout.core.beneath import RootDir, read_rules_file
from filescout.scan.globs import EntryPatterns, Pattern, parse

log = logging.getLogger(__name__)

FILESCOUTIGNORE = ".filescoutignore"

RULES_VERSION = 2
"""Part of the rules' fingerprint: raise it when matching changes, so indexes recheck paths."""
DEFAULT_EXCLUDES: tuple[str, ...] = (
    # version control and editor state
    ".git/",
    ".hg/",
    ".svn/",
    ".jj/",
    ".idea/",
    ".vs/",
    ".DS_Store",
    "Thumbs.db",
    # dependencies and environments
    "node_modules/",
    "bower_components/",
    "jspm_packages/",
    ".pnpm-store/",
    ".yarn/",
    ".venv/",
    "venv/",
    ".tox/",
    ".nox/",
    ".eggs/",
    "*.egg-info/",
    "site-packages/",
    # caches
    "__pycache__/",
    "*.pyc",
    "*.pyo",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".cache/",
    ".parcel-cache/",
    ".gradle/",
    ".turbo/",
    ".nyc_output/",
    ".sass-cache/",
    # build output
    "/build/",
    "/out/",
    "dist/",
    "target/",
    "coverage/",
    "htmlcov/",
    ".next/",
    ".nuxt/",
    ".svelte-kit/",
    ".angular/",
    ".terraform/",
    "bazel-*/",
    "cmake-build-*/",
    # lock files: long, machine-written, and never what a question is about
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "pdm.lock",
    "Cargo.lock",
    "composer.lock",
    "Gemfile.lock",
    "go.sum",
    "flake.lock",
    "*.min.js",
    "*.min.css",
    "*.map",
)
GLOB_CHARS = re.compile(r"[*?\[]")
MAX_IGNORE_PATTERNS = 10_000
"""Patterns taken from one ignore file: each is matched against every path below it, and a
file from the workspace may hold any number (the rest are left out, with a warning)."""
MAX_IGNORE_LINES = 100_000
"""Lines of one ignore file read for patterns (blank lines and comments cost a look each)."""
MAX_PATTERN_LENGTH = 4096
"""Longest pattern of an ignore file applied: as long as a path may be. (A pattern of a megabyte
took RE2 a second, and filled stderr with its complaints.)"""
DEFAULTS, GIT, FILESCOUT = 0, 1, 2
"""Where a pattern comes from, in the order the layers apply."""


def read_ignore_file(root: RootDir | str | os.PathLike[str], relative: str) -> list[str] | None:
    """The lines of an ignore file beneath the root; None when there is none, or none that may
    be read (a symlink, which git does not follow either; a FIFO; permission denied)."""
    try:
        data = read_rules_file(root, relative)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace").splitlines() if data is not None else None


def literal_prefix(pattern: str) -> str | None:
    """The fixed leading part of an anchored pattern (`build/gen*/x` -> `build/gen`), or None
    for a pattern that may match at any depth (`*.log`, `keep.txt`)."""
    body = pattern.strip()
    anchored = body.startswith("/") or "/" in body.rstrip("/")
    if not anchored or body.startswith("**"):
        return None
    body = body.lstrip("/")
    match = GLOB_CHARS.search(body)
    return body[: match.start()] if match else body.rstrip("/")


def bounded_patterns(lines: Iterable[str], source: str) -> list[Pattern]:
    """The patterns of an ignore file: at most MAX_IGNORE_PATTERNS of them, from its first
    MAX_IGNORE_LINES lines, none longer than MAX_PATTERN_LENGTH; what is left out is logged."""
    lines = list(lines)
    read = lines[:MAX_IGNORE_LINES]
    patterns = parse(line for line in read if len(line) <= MAX_PATTERN_LENGTH)
    if len(patterns) > MAX_IGNORE_PATTERNS or len(lines) > MAX_IGNORE_LINES:
        log.warning(
            "%s: only its first %d patterns (of its first %d lines) are applied",
            source,
            MAX_IGNORE_PATTERNS,
            MAX_IGNORE_LINES,
        )
    if any(len(line) > MAX_PATTERN_LENGTH for line in read):
        log.warning("%s: patterns longer than %d characters are left out", source, MAX_PATTERN_LENGTH)
    return patterns[:MAX_IGNORE_PATTERNS]


def compiled(patterns: list[Pattern]) -> EntryPatterns:
    """The patterns ready to match; those RE2 cannot run (a reversed range such as `[z-a]`) match
    nothing, which is logged."""
    ready = EntryPatterns(patterns)
    if ready.refused:
        log.info("ignore patterns that match nothing: %s", ", ".join(repr(p.text) for p in ready.refused))
    return ready


GitLayers = tuple[tuple[str, list[EntryPatterns]], ...]
"""(directory, its .gitignore files) for each directory with any, nearest first."""


class _Directory(NamedTuple):
    """What the rules say about a directory, for the entries inside it."""

    ignored: bool
    """By the last pattern naming it, or else as the directory it is in."""
    entered: bool
    """Not ignored, or a re-include names a path inside it: a walk goes in."""
    by_filescout: bool
    """The pattern deciding `ignored` is filescout's own (exclude, .filescoutignore, include),
    which git, listing the files, does not know."""
    included: bool
    """`include` names it or a directory above it: everything inside is indexed."""
    gitignores: GitLayers
    """The .gitignore files that apply inside it."""


ROOT = _Directory(ignored=False, entered=True, by_filescout=False, included=False, gitignores=())


class IgnoreRules:
    """Every layer of patterns, applied the way git applies them while it walks a tree: each
    entry by the last pattern that names it, a directory's verdict holding for what is inside
    it (unless a pattern names that itself), and an ignored directory not entered unless a
    re-include names a path inside it. `include` then brings back what it names and everything
    below what it names. Verdicts of directories are kept: a path costs one match against the
    patterns that apply from the root, one per nested .gitignore above it, and one against
    `include` when there is one."""

    def __init__(
        self, exclude: Sequence[str] = (), include: Sequence[str] = (), filescoutignore: Sequence[str] = ()
    ) -> None:
        self.fingerprint = hashlib.sha256(
            json.dumps(
                [RULES_VERSION, DEFAULT_EXCLUDES, list(exclude), list(filescoutignore), list(include)]
            ).encode()
        ).hexdigest()
        """Identifies filescout's own rules (git's are git's business): a path they let through
        once, they let through again while this stays the same."""
        self._defaults = parse(DEFAULT_EXCLUDES)
        self._root_gitignores: list[Pattern] = []
        self._filescout = [*parse(exclude), *bounded_patterns(filescoutignore, FILESCOUTIGNORE)]
        includes = parse("!" + pattern.lstrip("!") for pattern in include)
        self._include = compiled(includes) if includes else None
        self._sources: list[int] = []
        self._own = self._compile_own()
        self._git: dict[str, list[EntryPatterns]] = {}
        """Nested .gitignore files by the directory they apply below."""
        self._directories: dict[str, _Directory] = {}
        self.reinclude_patterns = [
            pattern.text.strip()[1:] for pattern in (*self._filescout, *includes) if not pattern.excludes
        ]
        self._reinclude_prefixes = [literal_prefix(p) for p in self.reinclude_patterns]

    def _compile_own(self) -> EntryPatterns:
        """The patterns of every layer that applies from the root, in order, as one set: one
        match per path, and the last pattern matching says which layer decided."""
        layers = [
            (DEFAULTS, self._defaults),
            (GIT, self._root_gitignores),
            (FILESCOUT, self._filescout),
        ]
        self._sources = [source for source, patterns in layers for _ in patterns]
        return compiled([pattern for _, patterns in layers for pattern in patterns])

    @classmethod
    def for_workspace(
        cls, root: Path, exclude: Sequence[str] = (), include: Sequence[str] = ()
    ) -> IgnoreRules:
        return cls(exclude, include, read_ignore_file(root, FILESCOUTIGNORE) or [])

    @property
    def has_reincludes(self) -> bool:
        return bool(self.reinclude_patterns)

    def add_gitignore(self, directory: str, lines: Sequence[str]) -> None:
        """Register the `.gitignore` (or `.git/info/exclude`) that applies below `directory`;
        of two for the same directory, the later one wins."""
        source = f"{directory}/.gitignore" if directory else ".gitignore"
        patterns = bounded_patterns(lines, source)
        if not patterns:
            return
        if directory:
            self._git.setdefault(directory, []).append(compiled(patterns))
        else:
            self._root_gitignores += patterns
            self._own = self._compile_own()
        self._directories.clear()  # verdicts below it may change

    def is_ignored(self, path: str, *, is_dir: bool = False) -> bool:
        """The verdict of every layer for a path found by walking the tree."""
        parent = self._directory(path.rpartition("/")[0])
        if not parent.entered:
            return True
        if is_dir:
            return self._directory(path).ignored
        if parent.included or self._included(path, False):
            return False
        own = self._own_verdict(path, False, parent.gitignores)
        return own[0] if own is not None else parent.ignored

    def is_ignored_after_git(self, path: str, *, git_ignored: bool) -> bool:
        """The verdict for a file git listed, whose fate under git's rules git decided: ignored
        when a directory on its way is, unless filescout's own patterns say otherwise for the
        file or a directory above it."""
        directory = path.rpartition("/")[0]
        parent = self._directories.get(directory) or self._directory(directory)
        if not parent.entered:
            return True
        if parent.included or self._included(path, False):
            return False
        last = self._own.last(path)
        if last is not None and self._sources[last] == FILESCOUT:
            return self._own.patterns[last].excludes
        if parent.by_filescout:
            return parent.ignored
        if git_ignored:
            return True
        return self._own.patterns[last].excludes if last is not None else parent.ignored

    def _own_verdict(self, path: str, is_dir: bool, gitignores: GitLayers) -> tuple[bool, bool] | None:
        """(ignored, by filescout's patterns) by the last pattern naming `path` itself; None
        when none does. `gitignores`: those of the directory `path` is in."""
        last = self._own.last(path, is_dir)
        if last is not None and self._sources[last] == FILESCOUT:
            return self._own.patterns[last].excludes, True
        for base, layers in gitignores:
            entry = path[len(base) + 1 :]
            for layer in reversed(layers):
                found = layer.last(entry, is_dir)
                if found is not None:
                    return layer.patterns[found].excludes, False
        if last is not None:
            return self._own.patterns[last].excludes, False
        return None

    def _directory(self, directory: str) -> _Directory:
        """What the rules say about `directory`, worked out from the nearest known ancestor
        down (a loop, not a recursion: a tree may be thousands of directories deep)."""
        unknown: list[str] = []
        while directory and directory not in self._directories:
            unknown.append(directory)
            directory = directory.rpartition("/")[0]
        verdict = self._directories[directory] if directory else ROOT
        for path in reversed(unknown):
            verdict = self._inside(verdict, path)
            self._directories[path] = verdict
        return verdict

    def _inside(self, parent: _Directory, directory: str) -> _Directory:
        if not parent.entered:
            return parent
        layers = self._git.get(directory)
        gitignores = ((directory, layers), *parent.gitignores) if layers else parent.gitignores
        if parent.included or self._included(directory, True):
            return _Directory(False, True, True, True, gitignores)
        own = self._own_verdict(directory, True, parent.gitignores)
        ignored, by_filescout = own if own is not None else (parent.ignored, parent.by_filescout)
        entered = not ignored or self.may_reinclude_below(directory)
        return _Directory(ignored, entered, by_filescout, False, gitignores)

    def _included(self, path: str, is_dir: bool) -> bool:
        return self._include is not None and self._include.last(path, is_dir) is not None

    def may_reinclude_below(self, directory: str) -> bool:
        """Whether a re-include pattern names a path inside `directory`, so that an excluded
        directory must still be entered."""
        inside = directory + "/"
        return any(
            prefix is not None and (inside.startswith(prefix) or prefix.startswith(inside))
            for prefix in self._reinclude_prefixes
        )
