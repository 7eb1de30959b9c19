"""What a question names explicitly, told apart from its ordinary words.

A path (`src/flask/app.py`), a file name (`routing.py`), a dotted module path (`flask.app`,
`crate::routing::map`), a stack-trace frame, an identifier in backticks, a code-shaped identifier
(`url_for`, `mergeConfig`, `LRUCache`), a call (`changed()`) or a commit scope (`fix(router):`)
is a mention. An ordinary word that happens to equal a file's stem ("which template is used")
is not: it is only a search term, or every `template.go` would be lifted.

Mentions are matched against candidate paths (which file, or module, the question names) and
against the symbols a file defines (which file defines what the question mentions).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from filescout.relevance.report import Frame, Report
from filescout.scan.classify import LANGUAGE_BY_EXTENSION

# Where a chunk of text ends: whitespace, quotes, brackets and list punctuation. Paths, dotted
# names and `path:line:col` locations stay whole.
CHUNK = re.compile(r"[^\s`'\"()\[\]{}<>,;|=*!?]+")
BACKTICKED = re.compile(r"`([^`\n]+)`")
IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*\Z")
LOCATION = re.compile(r"(?::\d+){1,2}\Z")  # `app.py:12`, `lib/x.js:10:5`
SCHEME = re.compile(r"\A[A-Za-z][\w+.-]*:/+")  # `file:///…`, `webpack:///…`
DRIVE = re.compile(r"\A[A-Za-z]:(?=[/\\])")
PATH_PART = re.compile(r"[A-Za-z_][\w-]*\Z")
EXTENSION = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,9})\Z")
# Commit subjects and squashed bullets: `fix(router): …`, `* feat(api)!: …`.
SCOPE = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?[A-Za-z][\w-]*\(([^()\n]{1,60})\)!?:", re.MULTILINE)
PYTHON_FRAME = re.compile(r'File "([^"\n]+)", line \d+(?:, in ([\w<>.]+))?')
JS_FRAME = re.compile(r"\bat (?:async |new )?([\w$.<>]+) \(")
MAX_PARTS = 12
"""A longer chain of dotted names is data, not a module path."""
PACKAGE_STEMS = frozenset(["__init__", "index", "mod", "main"])
"""A file with this stem stands for its directory: `flask.json` names `flask/json/__init__.py`."""


@dataclass(frozen=True)
class Mentions:
    paths: frozenset[str] = frozenset()
    """Paths and file names as written, POSIX separators: `src/flask/app.py`, `routing.py`."""
    modules: frozenset[tuple[str, ...]] = frozenset()
    """Dotted names split into parts (`flask.app` -> flask, app) and code-shaped identifiers
    (`mergeConfig`,): a prefix may name a module, the rest what it defines."""
    symbols: frozenset[str] = frozenset()
    """Identifiers the question mentions, as written, for the files that define them."""
    scopes: frozenset[str] = frozenset()
    """Commit scopes as written (`fix(router):` -> router)."""
    frames: tuple[Frame, ...] = ()
    """A report's stack frames, innermost of each traceback first (report.py)."""
    links: frozenset[str] = frozenset()
    """Paths of source files a report links to (`…/blob/<ref>/src/app.py#L12` -> src/app.py)."""
    whole_paths: bool = False
    """Whether a path written with a directory, or a package's file name alone (`__init__.py`),
    names only files it matches in two parts at least: a report's prose writes the user's own
    paths (`src/project/__init__.py`)."""

    @property
    def words(self) -> list[str]:
        """The mentions' own text, for search terms that must not be cut off a long question."""
        return [
            *sorted(self.paths),
            *(".".join(parts) for parts in sorted(self.modules)),
            *sorted(self.scopes),
        ]

    def __bool__(self) -> bool:
        return bool(self.paths or self.modules or self.symbols or self.scopes or self.frames or self.links)


@dataclass
class _Found:
    paths: set[str] = field(default_factory=set)
    modules: set[tuple[str, ...]] = field(default_factory=set)
    symbols: set[str] = field(default_factory=set)
    scopes: set[str] = field(default_factory=set)
    frames: list[Frame] = field(default_factory=list)
    links: set[str] = field(default_factory=set)
    whole_paths: bool = False

    def frozen(self) -> Mentions:
        return Mentions(
            frozenset(self.paths),
            frozenset(self.modules),
            frozenset(self.symbols),
            frozenset(self.scopes),
            tuple(self.frames),
            frozenset(self.links),
            self.whole_paths,
        )


CACHED_WORD_LENGTH = 64
"""Longer words (a pasted blob in a question) are folded each time rather than kept."""


def fold(word: str) -> str:
    """Case, separators and a plural `s` do not tell a scope from a name: `dataStructures`,
    `data_structures` and `datastructure` are one."""
    return _fold_cached(word) if len(word) <= CACHED_WORD_LENGTH else _fold(word)


def _fold(word: str) -> str:
    folded = re.sub(r"[^a-z0-9]", "", word.lower())
    return folded[:-1] if len(folded) > 3 and folded.endswith("s") else folded


_fold_cached = functools.lru_cache(maxsize=16_384)(_fold)


def code_shaped(word: str) -> bool:
    """Written the way code is, not prose: snake_case, camelCase, PascalCase with more than one
    hump (`LRUCache`, `ETags`), or with a `$`. `Template` or `CORS` alone is not."""
    if not any(character.isalpha() for character in word):
        return False
    if "_" in word or "$" in word:
        return True
    core = word.lstrip("_$")
    return any(c.islower() for c in core) and any(c.isupper() for c in core[1:])


def _file_name(name: str) -> bool:
    """`routing.py`, `index.d.ts`, `.eslintrc.cjs`: a name with a letter and a known extension."""
    found = EXTENSION.search(name)
    if found is None or "." + found.group(1).lower() not in LANGUAGE_BY_EXTENSION:
        return False
    stem = name[: found.start()]
    return any(character.isalpha() for character in stem)


def _path(chunk: str) -> str | None:
    """A path as written (`src/app.py`, `.\\lib\\x.js`, `/home/u/p/app.py`, or as imported:
    `./lib/core/Axios`), or None."""
    path = DRIVE.sub("", SCHEME.sub("/", chunk)).replace("\\", "/")
    parts = [part for part in path.split("/") if part and part != "."]
    if len(parts) < 2 or any(part == ".." for part in parts[-2:]):
        return None
    if _file_name(parts[-1]) or all(PATH_PART.match(part) for part in parts[-2:]):
        return "/".join(parts)
    return None


def _dotted(chunk: str) -> tuple[str, ...] | None:
    """`flask.app`, `routing.Map.bind_to_environ`, `crate::routing::map`: identifiers joined by
    dots or `::`, not an abbreviation (`e.g`) or a version (`v1.2`)."""
    parts = tuple(re.split(r"\.|::", chunk))
    if not 2 <= len(parts) <= MAX_PARTS or not all(IDENTIFIER.match(part) for part in parts):
        return None
    return parts if max(len(part) for part in parts) >= 2 else None


def _add_name(found: _Found, parts: tuple[str, ...]) -> None:
    found.modules.add(parts)
    found.symbols.update(part for part in parts if len(part) >= 2)


def _read_chunk(found: _Found, chunk: str, *, called: bool, quoted: bool) -> None:
    """What one chunk of text mentions. `called`: a `(` follows it; `quoted`: in backticks,
    where any identifier is code."""
    chunk = chunk.rstrip(".:")
    located = LOCATION.search(chunk)
    if located:  # a stack frame's or compiler's `file:line[:column]`
        chunk = chunk[: located.start()]
    if "/" in chunk or "\\" in chunk:
        path = _path(chunk)
        if path is not None:
            found.paths.add(path)
            if _file_name(path.rsplit("/", 1)[-1]):
                return
        for piece in re.split(r"[/\\]", chunk):  # `get/select_template`, `startup/shutdown`
            if piece:
                _read_chunk(found, piece, called=False, quoted=quoted)
        return
    if not called and _file_name(chunk):  # `routing.py`, `.eslintrc.cjs`; `res.json()` is a call
        found.paths.add(chunk)
        return
    attribute = chunk.startswith(".")  # `.data`, `.get_data()`
    name = chunk.lstrip(".")
    dotted = _dotted(name)
    if dotted is not None:
        _add_name(found, dotted)
        return
    if not IDENTIFIER.match(name) or len(name) < 2:
        return
    if quoted or code_shaped(name):
        _add_name(found, (name,))
    elif called or attribute:  # `changed()`, `.data`: a function or attribute, not a module
        found.symbols.add(name)


def _read_text(found: _Found, text: str, *, quoted: bool) -> None:
    for match in CHUNK.finditer(text):
        chunk = match.group(0)
        called = text.startswith("(", match.end())
        if not (quoted or called) and chunk.isalpha() and chunk[1:].islower():
            continue  # most of a question: a plain word, `word` or `Word`
        _read_chunk(found, chunk, called=called, quoted=quoted)


CODE_SYMBOLS = 12
"""Names read from any one code block: what a reproduction calls, not every variable of a log."""
_LANGUAGE_WORDS = """
self cls this super None True False null undefined nil from import for if else return def class
print len str int list dict set tuple range type object isinstance getattr setattr hasattr
"""
LANGUAGE_WORDS = frozenset(_LANGUAGE_WORDS.split())
"""Names every program uses: a file that defines `self` or `print` is not what the code is about."""
IMPORTED = re.compile(r"^\s*(?:from\s+[\w.]+\s+)?import\s+(.+)$", re.M)


def _read_code(found: _Found, text: str) -> None:
    """A code block's names: dotted names, calls, code-shaped identifiers and capitalised ones
    (classes: `Schema`, `Nested`), up to CODE_SYMBOLS of them; plain lower-case words are
    variables and keywords, and carry nothing."""
    block = _Found()
    for names in IMPORTED.findall(text):  # `from pkg.fields import Integer, List`
        block.symbols.update(name for name in re.findall(r"[A-Za-z_]\w+", names) if name != "as")
    for match in CHUNK.finditer(text):
        if len(block.symbols) >= CODE_SYMBOLS:
            break
        chunk = match.group(0).strip(".:")
        called = text.startswith("(", match.end())
        if chunk in LANGUAGE_WORDS or (not called and chunk.isalpha() and chunk[1:].islower()):
            continue
        if "/" in chunk or "\\" in chunk:
            continue  # paths in a code block are the user's, or a log's
        _read_chunk(block, chunk, called=called, quoted=False)
    found.modules |= {parts for parts in block.modules if parts[0] not in LANGUAGE_WORDS or len(parts) > 2}
    found.symbols |= block.symbols - LANGUAGE_WORDS


def _read_scopes(found: _Found, text: str) -> str:
    """Commit scopes; returns the text with each `type(scope):` blanked, so `fix(` is not read
    as a call of `fix`."""
    for match in SCOPE.finditer(text):
        for piece in re.split(r"[,/|]", match.group(1)):
            piece = piece.strip()
            if _file_name(piece) or _path(piece):
                found.paths.add(_path(piece) or piece)
            elif IDENTIFIER.match(piece) and fold(piece):  # `fix(Missing annotation)` is prose
                found.scopes.add(piece)
    return SCOPE.sub(lambda match: " " * len(match.group(0)), text)


def _read_frames(found: _Found, text: str) -> None:
    """Stack frames' functions (their files are read as paths with the rest of the text)."""
    for match in PYTHON_FRAME.finditer(text):
        path = _path(match.group(1))
        name = match.group(1).replace("\\", "/").rsplit("/", 1)[-1]
        if path is not None or _file_name(name):  # not `File "<stdin>"`
            found.paths.add(path or name)
        function = match.group(2)
        if function:
            found.symbols.update(_function_names(function))
    for match in JS_FRAME.finditer(text):
        found.symbols.update(_function_names(match.group(1)))


def _function_names(function: str) -> list[str]:
    """`Router.dispatch` -> Router, dispatch; `Object.<anonymous>` -> Object."""
    return [part for part in function.split(".") if len(part) >= 2 and IDENTIFIER.match(part)]


def mentions(text: str) -> Mentions:
    """Everything `text` names explicitly."""
    found = _Found()
    text = _read_scopes(found, text)
    _read_frames(found, text)
    for match in BACKTICKED.finditer(text):
        _read_text(found, match.group(1), quoted=True)
    _read_text(found, BACKTICKED.sub(" ", text), quoted=False)
    return found.frozen()


FRAME_FUNCTIONS = 3
"""The innermost frames of each traceback whose functions count as mentioned symbols."""


def report_mentions(report: Report) -> Mentions:
    """What a report names (report.py): its title and prose read as any question is, inline code
    as quoted, code blocks for the names they call, links to source files as paths, and its
    frames as frames, the innermost ones' functions as symbols."""
    found = _Found(whole_paths=True)
    prose = "\n".join([report.title, *report.prose])
    prose = _read_scopes(found, prose)
    _read_text(found, prose, quoted=False)
    for span in report.spans:
        if " " in span.strip():  # a line of code: read as code, not as a name
            _read_code(found, span)
        else:
            _read_text(found, span, quoted=True)
    for block in report.code:
        _read_code(found, block)
    for name, message in report.errors:
        # The error's class, for the file that defines it; the module raising it is in the frames.
        found.symbols.add(name.rpartition(".")[2])
        _read_text(found, message, quoted=False)
    found.paths.update(report.links)
    found.links.update(report.links)
    found.frames = list(report.frames)
    found.symbols.update(
        frame.function
        for frame in report.frames
        if frame.depth < FRAME_FUNCTIONS and len(frame.function) >= 2
    )
    return found.frozen()


# -- matching ----------------------------------------------------------------------------------

NAMES_PATH = 1.0
"""Lift for a file the question names by a path, or a module path of two or more parts."""
NAMES_FILE = 0.6
"""... by its file name (`routing.py`), or a module (`utils.redirect`) that defines the rest."""
NAMES_MODULE = 0.3
"""... by a one-part module (`utils.x`, `mergeConfig`) or a commit scope equal to its stem
(`fix(router):`): a scope names an area, less surely than a file name does."""
NAMES_AREA = 0.15
"""... by a commit scope equal to one of its directories, or a written folder path (`daemon/events:`,
as Go and kernel-style subjects begin) it sits directly in; the file named as that folder
(`events/events.go`) as by a one-part module."""
NAMES_FRAME = 2.0
"""... by the innermost frame of a traceback that is the workspace's (most fixes land there);
each frame further out lifts its file half as much as the one inside it..."""
NAMES_FRAME_FLOOR = 0.3
"""...down to this."""
NAMES_LINK = 2.0
"""... by a link to its source (`…/blob/<ref>/src/app.py#L12`): the user points at the line."""


@dataclass(frozen=True)
class Naming:
    """How strongly the question names a file, and how to say so."""

    lift: float
    reason: str
    explicit: bool = False
    """Named by path or file name: the user asks for this file, whatever its kind."""
    confirmed_by: str | None = None
    """A symbol that, if the file defines it, makes a one-part module name firm: `utils.redirect`
    names the `utils.py` that defines `redirect` as surely as `utils.py` would."""

    def lift_given(self, symbols: Sequence[str]) -> float:
        if self.confirmed_by is not None and self.confirmed_by in symbols:
            return max(self.lift, NAMES_FILE)
        return self.lift


def _suffix_length(left: Sequence[str], right: Sequence[str]) -> int:
    length = 0
    for a, b in zip(reversed(left), reversed(right), strict=False):
        if a != b:
            break
        length += 1
    return length


def _path_quality(mention: str, path: str) -> tuple[int, int, int] | None:
    """How well a written path matches a file: (matched parts, whole, same case), or None. A
    path written without an extension (`lib/core/Axios`, as imports write it) must match the
    file's stem and at least its directory."""
    written, actual = mention.split("/"), path.split("/")
    if not _file_name(written[-1]):
        actual = [*actual[:-1], actual[-1].split(".", 1)[0]]
    matched = _suffix_length(written, actual)
    same_case = 1
    if matched == 0:
        matched = _suffix_length([p.lower() for p in written], [p.lower() for p in actual])
        same_case = 0
    if matched == 0 or (matched < 2 and actual[-1] != path.rsplit("/", 1)[-1]):
        return None
    whole = int(matched in (len(written), len(actual)))
    return matched, whole, same_case


def _frame_namings(frames: Sequence[Frame], shortlist: _Shortlist) -> dict[str, tuple[float, str]]:
    """The workspace files of a report's frames: path -> (lift, reason). Within a traceback the
    innermost workspace frame lifts most, each one further out half as much; of several
    tracebacks (chained exceptions, repeated runs) the one that matters most (Frame.trace) and
    reaches the workspace counts fully, each next one half as much as the one before it."""
    by_trace: dict[int, list[str]] = {}
    for frame in frames:  # innermost first within each traceback
        possible = shortlist.by_name.get(frame.path.rpartition("/")[2].lower(), [])
        qualities = {p: q for p in possible if (q := _frame_quality(frame, p)) is not None}
        matched = _best(qualities)
        if len(matched) == 1:
            by_trace.setdefault(frame.trace, []).append(matched[0])
    namings: dict[str, tuple[float, str]] = {}
    for later, trace in enumerate(sorted(by_trace)):
        for outward, path in enumerate(by_trace[trace]):
            lift = max(NAMES_FRAME * 0.5 ** (outward + later), NAMES_FRAME_FLOOR)
            if lift > namings.get(path, (0.0, ""))[0]:
                where = "the innermost frame" if outward == 0 else "a frame"
                namings[path] = (lift, f"{where} of the question's traceback is in this file")
    return namings


def _frame_quality(frame: Frame, path: str) -> tuple[int, int, int] | None:
    """How well a frame's file matches a workspace file: an installed package's path
    (`pkg/mod.py`) must end the file's whole, any other (`/home/u/repo/pkg/mod.py`) in two parts
    at least; a bare name (`File "x.py"`) is the user's script, not the workspace's."""
    quality = _path_quality(frame.path, path)
    if quality is None:
        return None
    parts = frame.path.strip("/").count("/") + 1
    if (frame.installed and quality[0] < parts) or (not frame.installed and quality[0] < 2):
        return None
    return quality


def module_parts(path: str) -> list[tuple[str, ...]]:
    """The dotted names a file can be imported as, innermost last: `src/flask/app.py` ->
    (src, flask, app); a package's `__init__.py` or `index.js` also as its directory."""
    directories, _, name = path.rpartition("/")
    stem = _stem_of(name)
    folders = tuple(directories.split("/")) if directories else ()
    forms = [(*folders, stem)]
    if stem in PACKAGE_STEMS and folders:
        forms.append(folders)
    return forms


def _module_match(parts: tuple[str, ...], path: str) -> tuple[int, int]:
    """(where, how many): the longest run of a dotted name's parts that ends the file's module
    path, from its first part or, two or more of them, from a later one (`crate::routing::map`,
    where the crate is not a folder); (0, 0) for none."""
    best = (0, 0)
    for form in module_parts(path):
        for start in range(len(parts)):
            for length in range(
                min(len(parts) - start, len(form)), max(best[1], 1 if start == 0 else 2) - 1, -1
            ):
                if form[-length:] == parts[start : start + length]:
                    if length > best[1] or (length == best[1] and start < best[0]):
                        best = (start, length)
                    break
    return best


def _best(qualities: Mapping[str, tuple[int, ...]]) -> list[str]:
    top = max(qualities.values(), default=None)
    return [path for path, quality in qualities.items() if quality == top]


def _stem_of(name: str) -> str:
    return name.split(".", 1)[0] if not name.startswith(".") else name


def _module_ends(directories: str, stem: str) -> tuple[str, ...]:
    """The last part of each of a file's `module_parts`, without splitting its whole path."""
    if stem in PACKAGE_STEMS and directories:
        return stem, directories.rpartition("/")[2]
    return (stem,)


@functools.lru_cache(maxsize=4096)
def _folded_folders(directories: str) -> frozenset[str]:
    return frozenset(fold(part) for part in directories.split("/")) if directories else frozenset()


@dataclass
class _Shortlist:
    """The candidates each mention could match, found in one pass over the paths: most paths
    match none, and cost a split and a few set lookups."""

    by_name: dict[str, list[str]] = field(default_factory=dict)
    by_module_end: dict[str, list[str]] = field(default_factory=dict)
    by_scope: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)
    """scope -> (path, whether its stem is the scope rather than a folder)"""
    by_folder: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)
    """written folder path -> (path of a file directly in it, whether its stem is the folder's
    name)"""


def written_folders(found: Mentions) -> set[str]:
    """The written paths that could be folders (`daemon/events`, `internal/testutil/daemon/`):
    no extension on their last part."""
    return {
        written.lower().strip("/")
        for written in found.paths
        if "/" in written.strip("/") and "." not in written.rstrip("/").rpartition("/")[2]
    }


def _shortlist(found: Mentions, paths: Iterable[str]) -> _Shortlist:
    names = {written.rpartition("/")[2].lower() for written in found.paths}
    names.update(frame.path.rpartition("/")[2].lower() for frame in found.frames)
    ends = {part for parts in found.modules for part in parts}
    folders = written_folders(found)
    shortlist = _Shortlist()
    for path in paths:
        directories, _, name = path.rpartition("/")
        stem = _stem_of(name)
        if folders:
            lowered_directories = directories.lower()
            for folder in folders:
                if lowered_directories == folder or lowered_directories.endswith("/" + folder):
                    named_after = stem.lower() == folder.rpartition("/")[2]
                    shortlist.by_folder.setdefault(folder, []).append((path, named_after))
        if names:
            lowered = name.lower()
            for key in {lowered, _stem_of(lowered)} & names:
                shortlist.by_name.setdefault(key, []).append(path)
        if ends:
            for end in ends.intersection(_module_ends(directories, stem)):
                shortlist.by_module_end.setdefault(end, []).append(path)
        if found.scopes:
            folded = fold(stem)
            for scope in found.scopes:
                if folded == fold(scope) or fold(scope) in _folded_folders(directories):
                    shortlist.by_scope.setdefault(scope, []).append((path, folded == fold(scope)))
    return shortlist


def name_files(found: Mentions, paths: Iterable[str]) -> dict[str, Naming]:
    """Which of `paths` the question names, and how strongly. A written path or module names
    the candidates that match it best (`http.js` with `adapters/http.js` written names only the
    file in `adapters`); a scope names every file whose stem, or a directory, it is; a written
    folder path, the files directly in it."""
    namings: dict[str, Naming] = {}
    if not (found.paths or found.modules or found.scopes or found.frames):
        return namings
    shortlist = _shortlist(found, paths)

    def offer(path: str, naming: Naming) -> None:
        if path not in namings or naming.lift > namings[path].lift:
            namings[path] = naming

    for written in found.paths:
        possible = shortlist.by_name.get(written.rpartition("/")[2].lower(), [])
        qualities = {p: q for p in possible if (q := _path_quality(written, p)) is not None}
        if found.whole_paths and ("/" in written or _stem_of(written) in PACKAGE_STEMS):
            qualities = {p: q for p, q in qualities.items() if q[0] >= 2}
        for path in _best(qualities):
            lift = NAMES_PATH if qualities[path][0] >= 2 else NAMES_FILE
            offer(path, Naming(lift, "the question names this file", explicit=True))
    for written in found.links:
        possible = shortlist.by_name.get(written.rpartition("/")[2].lower(), [])
        qualities = {p: q for p in possible if (q := _path_quality(written, p)) is not None}
        for path in _best(qualities):
            offer(path, Naming(NAMES_LINK, "the question links to this file's source", explicit=True))
    for path, (lift, reason) in _frame_namings(found.frames, shortlist).items():
        offer(path, Naming(lift, reason, explicit=True))
    for parts in found.modules:
        candidates = {p for part in parts for p in shortlist.by_module_end.get(part, [])}
        spans = {p: span for p in candidates if (span := _module_match(parts, p))[1]}
        for path in _best({p: (length, -start) for p, (start, length) in spans.items()}):
            start, length = spans[path]
            reason = "the question names this module (`" + ".".join(parts[start : start + length]) + "`)"
            if length >= 2:
                offer(path, Naming(NAMES_PATH, reason))
            else:
                rest = parts[1] if len(parts) > 1 else None
                offer(path, Naming(NAMES_MODULE, reason, confirmed_by=rest))
    for scope, matched in shortlist.by_scope.items():
        for path, by_stem in matched:
            if by_stem:
                offer(path, Naming(NAMES_MODULE, f"the question's scope names this file (`{scope}`)"))
            else:
                offer(path, Naming(NAMES_AREA, f"the question's scope names its folder (`{scope}`)"))
    for folder, matched in shortlist.by_folder.items():
        for path, named_after in matched:
            lift = NAMES_MODULE if named_after else NAMES_AREA
            offer(path, Naming(lift, f"the question names its folder (`{folder}`)"))
    return namings


def unmatched_names(found: Mentions, paths: Iterable[str]) -> list[str]:
    """The file names written in the question (`index.d.ts`, from `types/index.d.ts`) that
    none of `paths` has: the searches missed those files, or they do not exist."""
    written = {path.rpartition("/")[2].lower(): path.rpartition("/")[2] for path in found.paths}
    if not written:
        return []
    for path in paths:
        lowered = path.rpartition("/")[2].lower()
        written.pop(lowered, None)
        written.pop(_stem_of(lowered), None)
        if not written:
            return []
    return sorted(written.values())


def defined(found: Mentions, symbols: Iterable[str]) -> list[str]:
    """The mentioned symbols among what a file defines, in the file's order."""
    if not found.symbols:
        return []
    return list(dict.fromkeys(symbol for symbol in symbols if symbol in found.symbols))
