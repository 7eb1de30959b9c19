"""gitignore-style patterns, matched in time linear in the path whatever the pattern says.

pathspec reads each pattern as git does (escapes, bracket expressions, `**`, a trailing `/`) and
writes it as a regular expression; RE2 matches those. Python's `re` backtracks: the glob
`*a*a*a*a*a*a*a*a*a*a*b` took 19 s against a 40-character name, holding the event loop or a scan
all that time. RE2 runs every pattern of a list in one pass over the path (a set), at most 256
patterns to a set: a larger one's automaton outgrows its cache and gets slower per path.

Two readings of a list:
- `EntryPatterns`, as git reads an ignore file during a walk: the last pattern that names the
  entry itself decides, `foo/` names directories only, and what is below an entry is the walk's
  business (it inherits the entry's verdict, see `filescout.scan.ignore`). Where pathspec's regex
  says otherwise than git, git wins: a bracket expression never matches `/`, and `X/**/` names
  the directories below X, not X;
- `Globs`, as getFiles reads them: a path matches when the last pattern naming it or one of its
  directories keeps it (pathspec's `PathSpec` of gitignore patterns, not its `GitIgnoreSpec`,
  which lets a pattern naming the file itself win over a later one naming its directory).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import re2
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

DIR_MARK = "(?P<ps_d>/)"
"""What pathspec writes where a pattern goes on below a directory."""
DIR_MARK_OPTIONAL = f"(?:{DIR_MARK}|$)"
"""... and where it names a file, or a directory and what is below it."""
SET_PATTERNS = 256
SET_CHARACTERS = 32_768
"""Regular expression text per set: RE2 simplifies a set as one expression, and gives up (with a
line on stderr per node) on much larger ones."""
SET_MEMORY = 64 << 20
"""RE2's budget per set (program and automaton cache); the cache is allocated as it fills."""
PROBE = "\0"
"""No path holds a NUL: each set also holds a pattern matching this alone, to tell a set whose
automaton has no room (RE2 then matches nothing, silently) from one that matched nothing."""


class InvalidPattern(ValueError):
    """A pattern git would not match anything with, or that RE2 cannot run."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position


@dataclass(frozen=True, slots=True)
class Pattern:
    position: int
    """Where it stands in the list it came from."""
    text: str
    regex: str
    """pathspec's translation: a path (or a directory above it) it names matches."""
    excludes: bool
    """False for a `!` pattern."""


def parse(lines: Iterable[str], *, strict: bool = False) -> list[Pattern]:
    """The patterns among `lines`, blank lines and comments left out. A line git cannot use as a
    pattern raises InvalidPattern when `strict`; otherwise it is left out, as git leaves it out
    (it matches nothing). An unclosed bracket matches nothing in either case, as in git."""
    patterns: list[Pattern] = []
    for position, line in enumerate(lines):
        try:
            regex, include = GitIgnoreSpecPattern.pattern_to_regex(line)
        except ValueError as exc:
            if strict:
                raise InvalidPattern(position, str(exc)) from None
            continue
        if regex is not None and include is not None:
            patterns.append(Pattern(position, line, regex, include))
    return patterns


def _options() -> re2.Options:
    options = re2.Options()
    options.never_capture = True
    options.log_errors = False
    options.dot_nl = True  # a newline is a character of a file name like any other
    options.max_mem = SET_MEMORY
    return options


def _encoded(text: str) -> bytes:
    """UTF-8 for RE2; a name that is not UTF-8 (surrogate escapes) has `?` for its bad bytes,
    which `*` and `?` still match."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


class RegexSet:
    """Regular expressions run at once: which of them match somewhere in a text. Built from
    (key, regex) pairs; `refused` holds the keys of those RE2 cannot run."""

    def __init__(self, regexes: Iterable[tuple[int, str]]) -> None:
        self.refused: list[int] = []
        self._sets: list[tuple[re2.Set, list[int]]] = []
        chunk: list[tuple[int, str]] = []
        size = 0
        for key, regex in regexes:
            if chunk and (len(chunk) >= SET_PATTERNS or size + len(regex) > SET_CHARACTERS):
                self._compile(chunk)
                chunk, size = [], 0
            chunk.append((key, regex))
            size += len(regex)
        self._compile(chunk)

    def _compile(self, chunk: list[tuple[int, str]]) -> None:
        """One set for `chunk`, halved until RE2 can run it; a regex it cannot run alone is
        refused."""
        if not chunk:
            return
        compiled = re2.Set.SearchSet(_options())
        keys: list[int] = []
        for key, regex in chunk:
            try:
                compiled.Add(regex)
            except re2.error:
                self.refused.append(key)
            else:
                keys.append(key)
        if not keys:
            return
        compiled.Add(f"^{re2.escape(PROBE)}$")
        try:
            compiled.Compile()
            runs = len(keys) in (compiled.Match(PROBE) or ())
        except re2.error:
            runs = False
        if runs:
            self._sets.append((compiled, keys))
        elif len(chunk) > 1:
            half, accepted = len(chunk) // 2, set(keys)
            self._compile([item for item in chunk[:half] if item[0] in accepted])
            self._compile([item for item in chunk[half:] if item[0] in accepted])
        else:
            self.refused.append(chunk[0][0])

    def last(self, text: str) -> int | None:
        """The largest key of a regex matching `text` (keys given in increasing order)."""
        if not self._sets:
            return None
        data = _encoded(text)
        for compiled, keys in reversed(self._sets):
            ids = compiled.Match(data)
            if ids:
                best = max(ids)
                if best < len(keys):
                    return keys[best]
                if len(ids) > 1:  # the probe matched too
                    return keys[max(index for index in ids if index < len(keys))]
        return None

    def matching(self, text: str) -> list[int]:
        """The keys of the regexes that match `text`, in no particular order."""
        data = _encoded(text)
        found: list[int] = []
        for compiled, keys in self._sets:
            ids = compiled.Match(data)
            if ids:
                found.extend(keys[index] for index in ids if index < len(keys))
        return found


def _refusal(regex: str) -> str:
    """Why RE2 refuses `regex`, in its words."""
    try:
        re2.compile(regex, _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
    return "too large to match"


def entry_regex(pattern: Pattern) -> tuple[str, bool]:
    """pathspec's regex for a pattern, rewritten to name one entry of a walk (its whole path)
    and nothing below it; and whether it names directories only (`foo/`)."""
    text = pattern.text.rstrip()
    if text.endswith("/**/"):  # directories below X, not X: pathspec reads `X/**/` as `X/`
        below, _ = GitIgnoreSpecPattern.pattern_to_regex(text[:-1])
        if below is not None and below.endswith("/"):
            return _no_slash_in_classes(below), True
    regex = _no_slash_in_classes(pattern.regex)
    if regex == ".":  # `*`, `**`: everything
        return ".", False
    if regex == DIR_MARK:  # `*/`, `**/`: every directory
        return ".", True
    if regex == "/":  # `*/**`: everything in a directory
        return "/", False
    if regex.endswith(DIR_MARK_OPTIONAL):  # `foo`, `src/*.py`: a file or a directory
        return regex[: -len(DIR_MARK_OPTIONAL)] + "$", False
    if regex.endswith(DIR_MARK):  # `foo/`: a directory
        return regex[: -len(DIR_MARK)] + "$", True
    if regex.endswith("/"):  # `foo/**`: everything below foo
        return regex, False
    raise ValueError(f"unexpected translation {regex!r}")


def _no_slash_in_classes(regex: str) -> str:
    """`regex` with `/` added to each negated class. pathspec copies a bracket expression into
    its regex as written, so `[!a]` would match a `/`, which in git it never does."""
    out: list[str] = []
    index, end = 0, len(regex)
    while index < end:
        char = regex[index]
        if char == "\\":
            out.append(regex[index : index + 2])
            index += 2
            continue
        if char != "[":
            out.append(char)
            index += 1
            continue
        negated = regex.startswith("^", index + 1)
        start = close = index + 1 + negated
        if close < end and regex[close] == "]":  # a `]` first is a member
            close += 1
        while close < end and regex[close] != "]":
            close += 2 if regex[close] == "\\" else 1
        body = regex[start:close]
        if negated and body != "/":
            body = _with_slash(body)
        out.append("[" + "^" * negated + body + "]")
        index = close + 1
    return "".join(out)


def _with_slash(body: str) -> str:
    """A class body with `/` among its members, placed where it starts no range."""
    if body[:1] not in ("-", "]"):
        return "/" + body
    if not body.endswith("-"):
        return body + "/"
    return body[:-1] + "/-"


class EntryPatterns:
    """A list of patterns as git applies it to the entries of a walk (see the module)."""

    def __init__(self, patterns: Sequence[Pattern]) -> None:
        self.patterns = list(patterns)
        translated = [(index, *entry_regex(pattern)) for index, pattern in enumerate(self.patterns)]
        self._any = RegexSet((index, regex) for index, regex, dirs_only in translated if not dirs_only)
        dirs = [(index, regex) for index, regex, dirs_only in translated if dirs_only]
        self._dirs = RegexSet(dirs) if dirs else None
        """Directory patterns: asked about directories only."""
        refused = {*self._any.refused, *(self._dirs.refused if self._dirs else ())}
        self.refused = [pattern for index, pattern in enumerate(self.patterns) if index in refused]

    def last(self, entry: str, is_dir: bool = False) -> int | None:
        """The index of the last pattern that names `entry` (a path relative to the list's
        directory), or None."""
        found = self._any.last(entry)
        if is_dir and self._dirs is not None:
            in_dirs = self._dirs.last(entry)
            if in_dirs is not None and (found is None or in_dirs > found):
                return in_dirs
        return found


@dataclass(frozen=True, slots=True)
class _Variant:
    """One way a pattern names a path (as the path itself, or as a directory above it)."""

    pattern: int
    excludes: bool


class Globs:
    """A list of patterns as getFiles reads it (see the module): identical, path for path, to
    pathspec's `PathSpec.match_file` with gitignore patterns, in linear time. Raises
    InvalidPattern for a pattern RE2 cannot run."""

    def __init__(self, lines: Sequence[str]) -> None:
        self._variants: list[_Variant] = []
        regexes: list[tuple[int, str]] = []
        for pattern in parse(lines, strict=True):
            for regex in _variants(pattern.regex):
                regexes.append((len(self._variants), regex))
                self._variants.append(_Variant(pattern.position, pattern.excludes))
        self._set = RegexSet(regexes)
        if self._set.refused:
            key = min(self._set.refused)
            raise InvalidPattern(self._variants[key].pattern, _refusal(dict(regexes)[key]))

    def match(self, path: str) -> bool:
        """Whether the last pattern naming `path` or a directory above it keeps it: `*.py`
        then `!tests/` leaves out tests/test_cart.py, as anyone reading the list expects (git's
        ignore files let a pattern naming the file itself win, which would keep it)."""
        matching = self._set.matching(path)
        return bool(matching) and self._variants[max(matching)].excludes


def _variants(regex: str) -> list[str]:
    """The ways a pattern can name a path: as the path itself, or as a directory above it."""
    if regex.endswith(DIR_MARK_OPTIONAL):
        base = regex[: -len(DIR_MARK_OPTIONAL)]
        return [base + "$", base + "/"]
    if DIR_MARK in regex:
        return [regex.replace(DIR_MARK, "/")]
    return [regex]
