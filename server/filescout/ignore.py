"""Which paths belong in the index.

Layers, evaluated in this order with the last matching pattern winning (gitignore semantics):

1. built-in defaults (VCS folders, dependency folders, virtualenvs, caches, build output, lock
   files);
2. git's rules: nested `.gitignore`s and `.git/info/exclude` (git applies these itself when it
   lists the files; the directory walk applies them here);
3. the configured `exclude` globs;
4. `.filescoutignore` at the workspace root, which may also re-include with `!pattern`;
5. the configured `include` globs, which always re-include.

Re-includes work on files. Like git, a directory that is excluded is not entered, unless a
re-include pattern names a path inside it (`!build/generated/` or `build/generated/api.py`):
`!*.log` re-includes logs wherever the walk goes, but does not open `node_modules/`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import pathspec

FILESCOUTIGNORE = ".filescoutignore"

RULES_VERSION = 1
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
NAMED_GROUP = re.compile(r"\(\?P<\w+>")
ANY_DIRECTORY = "^(?:.+/)?"


def read_ignore_file(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _combined(regexes: list[str]) -> re.Pattern[str] | None:
    if not regexes:
        return None
    return re.compile("|".join(f"(?:{NAMED_GROUP.sub('(?:', regex)})" for regex in regexes))


class PatternLayer:
    """One list of gitignore patterns, relative to directory `base` ("" is the root).

    Precise answers come from pathspec, but most paths match nothing, so two prefilters answer
    that first: every pattern tried once per directory (cached; a directory pattern also covers
    everything below it), and the patterns that can match a file tried as one regex."""

    def __init__(self, spec: pathspec.GitIgnoreSpec, base: str) -> None:
        self.spec = spec
        self.base = base
        active = [
            (pattern, pattern.regex)
            for pattern in spec.patterns
            if pattern.include is not None and pattern.regex is not None
        ]
        self._directory_any = _combined([regex.pattern for _, regex in active])
        file_regexes = [
            regex.pattern
            for pattern, regex in active
            if not str(getattr(pattern, "pattern", "")).endswith("/")
        ]
        # An unanchored pattern ("*.pyc") matches a file by its name alone: try those on the
        # name, the rest on the whole path.
        by_name = [
            regex[len(ANY_DIRECTORY) :]
            for regex in file_regexes
            if regex.startswith(ANY_DIRECTORY)
            and "/" not in regex[len(ANY_DIRECTORY) :].replace("(?P<ps_d>/)", "").replace("[^/]", "")
        ]
        by_path = [
            regex
            for regex in file_regexes
            if not (regex.startswith(ANY_DIRECTORY) and regex[len(ANY_DIRECTORY) :] in by_name)
        ]
        self._name_any = _combined(["^" + regex for regex in by_name])
        self._path_any = _combined(by_path)
        self._directory_verdicts: dict[str, bool | None] = {}

    @classmethod
    def compile(cls, lines: Iterable[str], base: str = "") -> PatternLayer | None:
        spec = pathspec.GitIgnoreSpec.from_lines(list(lines))
        if not any(pattern.include is not None for pattern in spec.patterns):
            return None
        return cls(spec, base)

    def _directory_verdict(self, directory: str) -> bool | None:
        """The verdict for anything below `directory` that no file-level pattern names; one
        pathspec evaluation per directory, cached."""
        if directory in self._directory_verdicts:
            return self._directory_verdicts[directory]
        verdict = None
        if (
            directory
            and self._directory_any is not None
            and self._directory_any.match(directory + "/") is not None
        ):
            verdict = self.spec.check_file(directory + "/").include
        self._directory_verdicts[directory] = verdict
        return verdict

    def verdict(self, path: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no pattern here speaks about `path`."""
        if self.base:
            if not path.startswith(self.base + "/"):
                return None
            path = path[len(self.base) + 1 :]
        if is_dir:
            return self._directory_verdict(path)
        directory, _, name = path.rpartition("/")
        if (self._name_any is not None and self._name_any.match(name) is not None) or (
            self._path_any is not None and self._path_any.match(path) is not None
        ):
            return self.spec.check_file(path).include
        return self._directory_verdict(directory)

    @property
    def reincludes(self) -> list[str]:
        texts = [
            getattr(pattern, "pattern", None) for pattern in self.spec.patterns if pattern.include is False
        ]
        return [text[1:] for text in texts if isinstance(text, str)]


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


class IgnoreRules:
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
        defaults = PatternLayer.compile(DEFAULT_EXCLUDES)
        self._defaults = [defaults] if defaults else []
        self._git: list[PatternLayer] = []
        self._after_git: list[PatternLayer] = []
        for lines in (exclude, filescoutignore, ["!" + pattern.lstrip("!") for pattern in include]):
            layer = PatternLayer.compile(lines)
            if layer is not None:
                self._after_git.append(layer)
        self.reinclude_patterns = [pattern for layer in self._after_git for pattern in layer.reincludes]
        self._reinclude_prefixes = [literal_prefix(p) for p in self.reinclude_patterns]

    @classmethod
    def for_workspace(
        cls, root: Path, exclude: Sequence[str] = (), include: Sequence[str] = ()
    ) -> IgnoreRules:
        return cls(exclude, include, read_ignore_file(root / FILESCOUTIGNORE))

    @property
    def has_reincludes(self) -> bool:
        return bool(self.reinclude_patterns)

    def add_gitignore(self, directory: str, lines: Sequence[str]) -> None:
        """Register the `.gitignore` (or `.git/info/exclude`) that applies below `directory`."""
        layer = PatternLayer.compile(lines, directory)
        if layer is not None:
            self._git.append(layer)
            self._git.sort(key=lambda item: item.base.count("/") + bool(item.base))

    def is_ignored(self, path: str, *, is_dir: bool = False) -> bool:
        """The verdict of every layer for a path found by walking the tree."""
        verdict = False
        for layer in (*self._defaults, *self._git, *self._after_git):
            result = layer.verdict(path, is_dir)
            if result is not None:
                verdict = result
        return verdict

    def is_ignored_after_git(self, path: str, *, git_ignored: bool) -> bool:
        """The verdict for a path whose fate under git's rules git itself decided."""
        verdict = git_ignored
        for layer in self._defaults if not git_ignored else ():
            if layer.verdict(path, False):
                verdict = True
        for layer in self._after_git:
            result = layer.verdict(path, False)
            if result is not None:
                verdict = result
        return verdict

    def may_reinclude_below(self, directory: str) -> bool:
        """Whether a re-include pattern names a path inside `directory`, so that an excluded
        directory must still be entered."""
        inside = directory + "/"
        return any(
            prefix is not None and (inside.startswith(prefix) or prefix.startswith(inside))
            for prefix in self._reinclude_prefixes
        )
