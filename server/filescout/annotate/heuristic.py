"""Line-based structural annotation: what the file says about itself and what it defines.

Works for any text file without a parser, so it is also the fallback for languages that have
no grammar.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePosixPath

from filescout.annotate.base import TAG_LIMIT, clip
from filescout.core.records import Annotation, FileToAnnotate
from filescout.core.words import STOPWORDS, split_identifier

MAX_SYMBOLS = 40

DEFINITION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.MULTILINE)
    for pattern in (
        r"^(?:async\s+)?def\s+([A-Za-z_]\w*)",  # python
        r"^class\s+([A-Za-z_]\w*)",  # python, ruby, js
        r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)",
        r"^(?:export\s+)?(?:abstract\s+)?(?:class|interface|enum|type)\s+([A-Za-z_$][\w$]*)",
        r"^(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=",
        r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)",  # go
        r"^type\s+([A-Za-z_]\w*)\s+(?:struct|interface)",  # go
        r"^(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:fn|struct|enum|trait|mod)\s+([A-Za-z_]\w*)",
        r"^(?:public|private|protected|internal)?\s*(?:static\s+)?(?:final\s+)?(?:abstract\s+)?"
        r"(?:sealed\s+)?(?:data\s+)?(?:class|interface|enum|record|struct|object)\s+([A-Za-z_]\w*)",
        r"^module\s+([A-Z]\w*)",  # ruby
        r"^(?:local\s+)?function\s+([A-Za-z_][\w.:]*)",  # lua
        r"^([A-Za-z_]\w*)\s*\(\)\s*\{",  # shell
    )
)
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
PY_DOCSTRING = re.compile(r'^\s*(?:#[^\n]*\n|\s)*[rRuUbB]?("""|\'\'\')(.*?)\1', re.DOTALL)
BLOCK_COMMENT = re.compile(r"^\s*/\*+(.*?)\*/", re.DOTALL)
LINE_COMMENT = re.compile(r"^(?:\s*(?://+|#+|--+|;+|%+)[^\n]*\n?)+")
COMMENT_MARK = re.compile(r"^\s*(?://+!?|#+!?|--+|;+|%+|\*+)\s?")
LICENSE_WORDS = ("copyright", "license", "licence", "spdx", "all rights reserved", "-*- coding")


def leading_comment(text: str, language: str | None) -> str:
    """The comment or docstring a file opens with, minus licence boilerplate."""
    if language == "python":
        match = PY_DOCSTRING.match(text)
        if match:
            return match.group(2)
    body = text[text.find("\n") + 1 :] if text.startswith("#!") else text
    match = BLOCK_COMMENT.match(body) or LINE_COMMENT.match(body)
    if not match:
        return ""
    lines = [COMMENT_MARK.sub("", line).strip() for line in match.group(0).splitlines()]
    lines = [line for line in lines if line and line not in ("/*", "*/", "*")]
    text_lines = [
        line.strip("/* ") for line in lines if not any(word in line.lower() for word in LICENSE_WORDS)
    ]
    return " ".join(line for line in text_lines if line)


BOILERPLATE_LINE = re.compile(r"^(from\s+\S+\s+)?import\b|^(#include|using|package|require)\b|^['\"]use ")


def first_meaningful_line(text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if (
            len(stripped) > 3
            and any(ch.isalpha() for ch in stripped)
            and not BOILERPLATE_LINE.match(stripped)
        ):
            return stripped
    return ""


def definitions(text: str) -> list[str]:
    names: list[str] = []
    for pattern in DEFINITION_PATTERNS:
        names.extend(match.group(1) for match in pattern.finditer(text))
    unique = [name for name in dict.fromkeys(names) if not name.startswith("__") or name == "__init__"]
    return unique[:MAX_SYMBOLS]


def markdown_outline(text: str) -> tuple[str, list[str]]:
    headings = [match.group(2).strip() for match in HEADING.finditer(text)]
    title = headings[0] if headings else ""
    paragraph = ""
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if block and not block.startswith(("#", "[!", "<", "```", "|", "-", "*", "!")):
            paragraph = block
            break
    summary = f"{title}: {paragraph}" if title and paragraph else title or paragraph
    return summary, headings[:MAX_SYMBOLS]


def describe_kind(path: str, language: str | None, kind: str) -> str:
    label = language.capitalize() if language else PurePosixPath(path).suffix.lstrip(".") or "text"
    if language in ("tsx", "csharp", "cpp"):
        label = {"tsx": "TSX", "csharp": "C#", "cpp": "C++"}[language]
    noun = {"test": "tests", "docs": "document", "config": "configuration", "data": "data file"}.get(
        kind, "file"
    )
    return f"{label} {noun}"


def tags_for(path: str, language: str | None, kind: str, symbols: Sequence[str]) -> list[str]:
    counter: Counter[str] = Counter()
    for symbol in symbols:
        for word in split_identifier(symbol):
            if len(word) > 2 and word not in STOPWORDS:
                counter[word] += 1
    stem_words = [w for w in split_identifier(PurePosixPath(path).stem) if len(w) > 2]
    tags = [kind] if kind not in ("source", "other") else []
    if language:
        tags.append(language)
    tags.extend(stem_words)
    tags.extend(word for word, _ in counter.most_common(TAG_LIMIT))
    return list(dict.fromkeys(tags))[:TAG_LIMIT]


def annotate_text(item: FileToAnnotate) -> Annotation:
    text = item.text
    if item.language == "markdown":
        about, symbols = markdown_outline(text)
    else:
        about = leading_comment(text, item.language)
        # A data file defines nothing, and it may be large: the patterns' scans were most of the
        # time spent on a CSV file.
        symbols = definitions(text) if item.kind != "data" else []
    about = " ".join(about.split())
    about = about.split(". ")[0] if len(about) > 200 else about
    parts = [describe_kind(item.path, item.language, item.kind)]
    if about:
        parts[0] += f": {about.rstrip('.')}"
    if symbols and item.language != "markdown":
        parts.append("Defines " + ", ".join(symbols[:8]) + ("…" if len(symbols) > 8 else ""))
    if not about and not symbols:
        line = first_meaningful_line(text).rstrip(".")
        if line:
            parts[0] += f": {line}"
    if not text.strip():
        parts = [describe_kind(item.path, item.language, item.kind) + " (empty)"]
    summary = clip(". ".join(parts) + ".")
    return Annotation(
        summary=summary, tags=tags_for(item.path, item.language, item.kind, symbols), symbols=list(symbols)
    )
