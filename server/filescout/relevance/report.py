"""A question written as an issue: a bug report or a feature request pasted whole.

Such a text mixes prose with code blocks, tracebacks, error lines, expected and actual output,
and version listings. Its strong evidence is in the structured parts: the frames of a traceback
(the innermost frame in the workspace is where most fixes land), the APIs a reproduction calls,
the error's class and message, inline code, links to source lines. Its prose is long and chatty
(issue templates' headings, checklists, greetings) and its environment listings carry nothing.
`read_report` splits the text into those blocks and returns plain values; query.py turns them
into search terms and mentions, so the rest of the prefilter needs no special case.

Only the shape of the text is read, never what a workspace holds: which frames are the
workspace's own is decided when they are matched against its paths (mentions.py).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from filescout.scan.classify import LANGUAGE_BY_EXTENSION, SOURCE_LANGUAGES

LONG_WORDS = 48
"""A question with more distinct words than this (query.MAX_TERMS) is read as a report, as is
one with a code block, a traceback or a link to a source file; other questions are read as
before."""

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)")
HEADING = re.compile(
    r"^[ \t]{0,3}(?:#{1,6}[ \t]+(.*?)[ \t#]*|\*\*([^*\n]{1,80})\*\*:?|__([^_\n]{1,80})__:?)[ \t]*$"
)
"""`### Expected behaviour`, or a line in bold standing for one: `**Your environment**`."""
CHECKLIST = re.compile(r"^[ \t]*[-*+][ \t]+\[[ xX]?\]")
HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
QUOTED_LINE = re.compile(r"^[ \t]*>[ \t]?")
"""A quoted line's marker: what it quotes (a maintainer's comment) is prose like the rest."""
IMAGE = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")
INLINE_CODE = re.compile(r"(`+)([^`\n]+?)\1")
URL = re.compile(r"\bhttps?://[^\s)\]>'\"`]+")
SOURCE_LINK = re.compile(
    r"/(?:blob|tree|blame|raw|src)/[^/\s]+/([^\s?#]+\.[A-Za-z][A-Za-z0-9]{0,9})(?:[?#]\S*)?\Z"
)
"""A link to a file in a repository host's browser (`…/blob/<ref>/src/app.py#L12`)."""

ENVIRONMENT_HEADING = re.compile(
    r"\b(versions?|environment|platform|system\s+info(rmation)?|operating\s+system|os|installed|"
    r"dependencies|pip\s+freeze|code\s+of\s+conduct|configuration|config|settings)\b",
    re.I,
)
"""Sections that list versions and systems, or a template's pledges: nothing about the code."""
SENTENCE = re.compile(r"^[^|=\t]*?\b[A-Za-z]+\b(?:[^|=\t]*?\s[A-Za-z]+\b){5}[^|=\t]*$")
"""Six words or more, no table cells or assignments: prose, even in an environment section."""
VERSION_LINE = re.compile(r"^[ \t>*-]*[\w .,:()/=-]{0,40}?\bv?\d+(?:\.\d+)+[\w.+-]{0,40}[ \t]*[),.;]?[ \t]*$")
"""`Python 3.9.9`, `mytool, version 2.0.2`, `- somelib 2.13.2`, `pkg==1.2.3`: a line ending in a
version with only a few words before it."""

PYTHON_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):", re.M)
PYTHON_FRAME = re.compile(r'^\s*File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?', re.M)
JS_FRAME = re.compile(
    r"^[ \t]*at (?:async |new )?(?:([\w$.<>\[\] ]{1,200}?) \()?"
    r"((?:[A-Za-z]:)?[^\s():]{1,500}):(\d+)(?::\d+)?\)?[ \t]*$",
    re.M,
)
"""`at fn (/app/lib/x.js:10:5)`, `at /app/lib/x.js:10:5`: innermost first."""
JAVA_FRAME = re.compile(r"^\s*at ([\w$.]+)\.([\w$<>]+)\(([\w$-]+\.\w+):(\d+)\)", re.M)
"""`at com.acme.Router.dispatch(Router.java:42)`: innermost first."""
GO_FRAME = re.compile(r"^\s*((?:[A-Za-z]:)?/?[^\s:]+\.go):(\d+)(?: \+0x[0-9a-f]+)?\s*$", re.M)
"""`\t/src/app/router.go:42 +0x1d`, under the function's line: innermost first."""
GO_FUNCTION = re.compile(r"^([\w./-]+)\.(\(?\*?[\w]+\)?\.)?(\w+)\(")
RUST_FRAME = re.compile(r"^\s*at ((?:[A-Za-z]:)?[^\s:]+\.rs):(\d+)(?::\d+)?\s*$", re.M)
"""`at src/router.rs:42:5`, under `  7: crate::router::dispatch`: innermost first."""
RUST_FUNCTION = re.compile(r"^\s*\d+: ([\w:<>]{1,300}?)(?:::h[0-9a-f]{16})?\s*$")
ERROR_LINE = re.compile(
    r"^[ \t]*(?:E[ \t]+)?((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Warning|Fault|Failure|"
    r"Interrupt|Iteration|Panic))(?::[ \t]*(.*))?$",
    re.M,
)
"""`ValueError: Position not found`, `pkg.exceptions.InferenceError`, pytest's `E   KeyError`."""
PANIC_LINE = re.compile(r"^[ \t]*(?:thread '[^']*' )?panicked at '?(.*)", re.M)
LOG_LINE = re.compile(r"^\s*(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|TRACE)\b)")
COMMENT = re.compile(r"(?:^|\s)(?:#|//|--(?=\s))(?!\S*\}).*$")
"""A comment to the end of a line (Python, C-like, SQL): words about the code, not its names."""
PROMPT = re.compile(r"^\s*(?:\$|>>>|\.\.\.|➜|%|PS>|In \[\d+\]:|Out\[\d+\]:)\s?")

BLOCK_LINES = 40
"""Lines read from any one code or output block: a 200-line log must not drown the rest."""
FRAMES = 60
"""Frames kept from all tracebacks together, the innermost of each first."""
SITE_DIRECTORIES = ("site-packages", "dist-packages", "node_modules", "vendor", "pkg/mod")
"""Where an installed package's files live: what follows is the package's own path."""
OUTSIDE = re.compile(
    r"(^|/)(lib/python\d[\d.]*|python\d[\d.]*/lib|usr/lib|usr/local/lib|<frozen [^>]*>|"
    r"internal/(?:bootstrap|modules)|node:internal|rustc/[0-9a-f]+|go/src/runtime)(/|$)",
    re.I,
)
"""A standard library's frames: never the workspace's."""


@dataclass(frozen=True)
class Frame:
    path: str
    """The frame's file, POSIX separators, with an installed package's prefix removed
    (`…/site-packages/pkg/mod.py` -> `pkg/mod.py`); the full path when it had none."""
    function: str
    depth: int
    """0 for the innermost frame of its traceback, 1 for its caller, and so on."""
    installed: bool = False
    """Whether the path was cut at a package directory: its parts are the package's own."""
    trace: int = 0
    """Which traceback of the report it is in, in the order they matter: 0 for the last one
    written or, of a chained exception, the cause (`raise … from`)."""


@dataclass(frozen=True)
class Report:
    title: str = ""
    """The first line, when more follow: a report's title says what it is about, like a
    commit's subject."""
    prose: tuple[str, ...] = ()
    """Paragraphs of prose, without headings, checklists, HTML comments and version lines."""
    code: tuple[str, ...] = ()
    """Code and output blocks (fenced or indented), each cut to BLOCK_LINES, frames removed."""
    spans: tuple[str, ...] = ()
    """Inline code as written (`fields.URL(relative=True)`)."""
    frames: tuple[Frame, ...] = ()
    """Stack frames, innermost of each traceback first."""
    errors: tuple[tuple[str, str], ...] = ()
    """(class, message) of each error line: `ValueError: Position not found`."""
    links: tuple[str, ...] = ()
    """Repository paths from links to source files (`…/blob/<ref>/src/app.py#L12`)."""

    @property
    def evidence(self) -> int:
        """How much the report says of its own about where the code is: its frames' files, its
        links and (a few of) its inline code spans count; prose does not."""
        return len({frame.path for frame in self.frames}) + len(self.links) + min(len(self.spans), 5)


def is_report(text: str, distinct_words: int) -> bool:
    """Whether `text` is read as a report: long, or with a code block, a traceback or a link to
    a source file. A commit message or a one-line question is not, so it is analysed as it
    always was."""
    if distinct_words > LONG_WORDS:
        return True
    if (FENCE.search(text) and "\n" in text) or PYTHON_TRACEBACK.search(text):
        return True
    return "://" in text and any(_source_link(url) for url in URL.findall(text))


@dataclass
class _Blocks:
    prose: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    """Code blocks' raw text, where frames and error lines are read."""
    written: list[str] = field(default_factory=list)
    """Prose and code blocks in the order they were written: chained tracebacks are told apart
    by the sentence between them."""


def _split(lines: list[str]) -> _Blocks:
    """Prose and code blocks (fenced, or indented by four spaces after a blank line); sections
    headed as environment listings are left out, and so are headings themselves."""
    blocks = _Blocks()
    paragraph: list[str] = []
    code: list[str] = []
    fence: str | None = None
    skipping = False
    previous_blank = True

    def end_paragraph() -> None:
        if paragraph:
            blocks.prose.append("\n".join(paragraph))
            blocks.written.append(blocks.prose[-1])
            paragraph.clear()

    def end_code() -> None:
        if code:
            text = "\n".join(code)
            blocks.output.append(text)
            blocks.written.append(text)
            if not skipping:
                blocks.code.append(text)
            code.clear()

    for line in lines:
        if fence is not None:
            opened = FENCE.match(line)
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
                end_code()
            else:
                code.append(line)
            continue
        opened = FENCE.match(line)
        if opened:
            end_paragraph()
            fence = opened.group(1)
            continue
        heading = HEADING.match(line)
        if heading:
            end_paragraph()
            skipping = bool(ENVIRONMENT_HEADING.search(heading.group(heading.lastindex or 0)))
            previous_blank = True
            continue
        if not line.strip():
            end_paragraph()
            end_code()
            previous_blank = True
            continue
        if (code or previous_blank) and (line.startswith("    ") or line.startswith("\t")) and not paragraph:
            code.append(line)
            continue
        if PYTHON_TRACEBACK.match(line) or (code and _in_traceback(line)):
            end_paragraph()  # a traceback pasted without a fence runs until its error line
            code.append(line)
            continue
        end_code()
        previous_blank = False
        line = QUOTED_LINE.sub("", line)
        if CHECKLIST.match(line) or VERSION_LINE.match(line):
            continue
        if skipping and not SENTENCE.match(line):
            continue  # a listing's line: `numpy | 1.19.3`, `- OS: macOS`
        paragraph.append(line)
    end_paragraph()
    end_code()  # an unclosed fence runs to the end
    return blocks


def _in_traceback(line: str) -> bool:
    """A line of an unfenced traceback: a frame, the source line under it, or its error."""
    return line.startswith((" ", "\t")) or bool(ERROR_LINE.match(line) or line.startswith("During handling"))


def _installed_path(path: str) -> tuple[str, bool]:
    """`/venv/lib/python3.9/site-packages/pkg/mod.py` -> (`pkg/mod.py`, True)."""
    posix = path.replace("\\", "/")
    for directory in SITE_DIRECTORIES:
        marker = f"/{directory}/"
        cut = posix.rfind(marker)
        if cut >= 0:
            return posix[cut + len(marker) :], True
    return posix, False


def _frame(path: str, function: str, depth: int) -> Frame | None:
    path, installed = _installed_path(path.strip())
    if not installed and OUTSIDE.search(path):
        return None
    if path.startswith("<") or not path.strip("/"):
        return None  # `<stdin>`, `<string>`
    return Frame(path.removeprefix("./"), function, depth, installed)


def _tracebacks(text: str) -> list[list[Frame]]:
    """Each traceback's frames, innermost first; the tracebacks in the order they matter (see
    `_by_importance`)."""
    found: list[list[Frame]] = []
    caused: list[bool] = []  # whether each traceback after the first was raised `from` the one before
    python: list[tuple[str, str]] = []
    last_end = -1
    for match in PYTHON_FRAME.finditer(text):
        gap = text[last_end : match.start()] if last_end >= 0 else ""
        if python and (PYTHON_TRACEBACK.search(gap) or "During handling" in gap or "direct cause" in gap):
            found.append(_innermost_first(python))
            caused.append("direct cause" in gap)
            python = []
        python.append((match.group(1), match.group(3) or ""))
        last_end = match.end()
    if python:
        found.append(_innermost_first(python))
    found = _by_importance(found, caused)
    stack: list[Frame] = []
    for match in JS_FRAME.finditer(text):
        if match.group(2).endswith((".rs", ".go", ".py")):
            continue  # Rust's `at src/x.rs:1:2` lines are read below
        frame = _frame(match.group(2), _last_name(match.group(1) or ""), len(stack))
        if frame is not None:
            stack.append(frame)
    for match in JAVA_FRAME.finditer(text):
        directory = match.group(1).rsplit(".", 1)[0].replace(".", "/") if "." in match.group(1) else ""
        path = f"{directory}/{match.group(3)}" if directory else match.group(3)
        stack.append(Frame(path, match.group(2), len(stack)))
    lines = text.splitlines()
    for number, line in enumerate(lines):
        located = GO_FRAME.match(line) or RUST_FRAME.match(line)
        if located is None:
            continue
        above = lines[number - 1] if number else ""
        named = GO_FUNCTION.match(above.strip()) or RUST_FUNCTION.match(above)
        function = _last_name(named.group(named.lastindex or 0)) if named else ""
        frame = _frame(located.group(1), function, len(stack))
        if frame is not None:
            stack.append(frame)
    if stack:
        found.append(stack)
    return found


def _by_importance(tracebacks: list[list[Frame]], caused: list[bool]) -> list[list[Frame]]:
    """The last traceback written matters most (the error that escaped; one raised while
    handling another is the new failure), unless it was raised `from` the one before it: a
    wrapper's cause is the real error. Walking back from the last, each earlier traceback goes
    ahead of those after it when it caused the next, behind them otherwise."""
    if len(tracebacks) < 2:
        return tracebacks
    order = [len(tracebacks) - 1]
    for number in range(len(tracebacks) - 2, -1, -1):
        if caused[number]:
            order.insert(0, number)
        else:
            order.append(number)
    return [tracebacks[number] for number in order]


def _innermost_first(frames: list[tuple[str, str]]) -> list[Frame]:
    kept: list[Frame] = []
    for path, function in reversed(frames):
        frame = _frame(path, _last_name(function), len(kept))
        if frame is not None:
            kept.append(frame)
    return kept


def _last_name(function: str) -> str:
    """`Router.dispatch` -> dispatch, `crate::a::b` -> b; `<module>`, `<lambda>` -> ''."""
    name = re.split(r"\.|::", function.strip())[-1]
    return name if re.fullmatch(r"[A-Za-z_$][\w$]*", name) else ""


def _source_link(url: str) -> str | None:
    """The path of a linked source file; a linked README or policy is no evidence."""
    found = SOURCE_LINK.search(url.rstrip(".,;:"))
    if found is None:
        return None
    extension = "." + found.group(1).rsplit(".", 1)[1].lower()
    return found.group(1) if LANGUAGE_BY_EXTENSION.get(extension) in SOURCE_LANGUAGES else None


def read_report(text: str) -> Report:
    """The blocks of a report and the evidence in them (see the module's doc)."""
    text = HTML_COMMENT.sub("", text.replace("\r\n", "\n"))
    text = IMAGE.sub(" ", text)
    links = tuple(dict.fromkeys(link for url in URL.findall(text) if (link := _source_link(url))))
    text = URL.sub(" ", text)
    lines = text.split("\n")
    title = lines[0].strip() if len(lines) > 1 else ""
    blocks = _split(lines[1:] if title else lines)
    whole = "\n".join(blocks.written)
    tracebacks = _tracebacks(whole)
    frames = tuple(
        dataclasses.replace(frame, trace=number) for number, stack in enumerate(tracebacks) for frame in stack
    )[:FRAMES]
    errors = []
    for match in ERROR_LINE.finditer(whole):
        errors.append((match.group(1), (match.group(2) or "").strip()[:200]))
    for match in PANIC_LINE.finditer(whole):
        errors.append(("panic", match.group(1).strip()[:200]))
    code = tuple(_code_text(block) for block in blocks.code)
    spans = tuple(
        dict.fromkeys(
            span.group(2).strip()
            for paragraph in [title, *blocks.prose]
            for span in INLINE_CODE.finditer(paragraph)
        )
    )
    prose = tuple(INLINE_CODE.sub(" ", paragraph) for paragraph in blocks.prose)
    return Report(
        title=title,
        prose=prose,
        code=tuple(block for block in code if block.strip()),
        spans=tuple(span for span in spans if span),
        frames=frames,
        errors=tuple(dict.fromkeys(errors)),
        links=links,
    )


def _code_text(block: str) -> str:
    """A code block's first BLOCK_LINES lines of code: frames, error lines, log lines and
    prompts' markers left out (frames and errors are read on their own)."""
    kept: list[str] = []
    for line in block.split("\n"):
        if PYTHON_FRAME.match(line) or JS_FRAME.match(line) or JAVA_FRAME.match(line):
            continue
        if GO_FRAME.match(line) or RUST_FRAME.match(line) or PYTHON_TRACEBACK.match(line):
            continue
        if ERROR_LINE.match(line) or LOG_LINE.match(line):
            continue
        line = COMMENT.sub("", PROMPT.sub("", line))
        if line.strip():
            kept.append(line)
        if len(kept) >= BLOCK_LINES:
            break
    return "\n".join(kept)
