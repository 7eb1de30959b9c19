"""The embedded default annotator: summary, tags and symbols from the file's own structure.

No network, no model. The summary reads like a short description a person would write from a
glance at the file: what it says about itself (docstring, leading comment, first heading), what it
defines, and what it builds on.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from filescout.annotate.base import TAG_LIMIT, clip
from filescout.core.records import Annotation, FileToAnnotate
from filescout.core.words import CAMEL_PART, STOPWORDS, body_words

# The annotators this one draws on (tree-sitter's outlines, documents' facts, the line-based
# one) are imported where a file is annotated: the faces import this module for its id alone.
if TYPE_CHECKING:
    from filescout.annotate.outline import Outline

log = logging.getLogger(__name__)

ANNOTATOR_ID = "structural/4"
"""4: summaries and tags are redacted as they are written (`annotate_safely`), so the faces show
them without a second look (`engine/shown.py`). A change to the redaction rules takes a new id:
what this one wrote was redacted by today's rules (tests/unit/test_answers_redacted.py checks)."""

LANGUAGE_LABELS = {
    "python": "Python",
    "javascript": "JavaScript",
    "typescript": "TypeScript",
    "tsx": "TSX",
    "go": "Go",
    "rust": "Rust",
    "java": "Java",
    "c": "C",
    "cpp": "C++",
    "csharp": "C#",
    "ruby": "Ruby",
    "php": "PHP",
    "kotlin": "Kotlin",
    "swift": "Swift",
    "lua": "Lua",
    "bash": "Shell",
    "markdown": "Markdown",
    "json": "JSON",
    "yaml": "YAML",
    "toml": "TOML",
}
KIND_NOUNS = {
    "source": "source",
    "test": "tests",
    "docs": "document",
    "config": "configuration",
    "data": "data",
    "other": "file",
}
FRAMEWORKS = {
    "django": "django",
    "flask": "flask",
    "fastapi": "fastapi",
    "starlette": "starlette",
    "sqlalchemy": "sqlalchemy",
    "pydantic": "pydantic",
    "pytest": "pytest",
    "unittest": "unittest",
    "numpy": "numpy",
    "pandas": "pandas",
    "torch": "pytorch",
    "tensorflow": "tensorflow",
    "asyncio": "asyncio",
    "aiohttp": "aiohttp",
    "requests": "http",
    "httpx": "http",
    "urllib3": "http",
    "celery": "celery",
    "boto3": "aws",
    "jinja2": "jinja",
    "werkzeug": "werkzeug",
    "click": "cli",
    "argparse": "cli",
    "typer": "cli",
    "logging": "logging",
    "sqlite3": "sqlite",
    "react": "react",
    "react-dom": "react",
    "vue": "vue",
    "@angular/core": "angular",
    "svelte": "svelte",
    "express": "express",
    "next": "nextjs",
    "jest": "jest",
    "vitest": "vitest",
    "mocha": "mocha",
    "chai": "testing",
    "axios": "http",
    "lodash": "lodash",
    "graphql": "graphql",
    "@prisma/client": "prisma",
    "typeorm": "typeorm",
    "mongoose": "mongodb",
    "redux": "redux",
    "rxjs": "rxjs",
    "node:http": "http",
    "http": "http",
    "fs": "filesystem",
    "node:fs": "filesystem",
    "net/http": "http",
    "database/sql": "sql",
    "testing": "testing",
    "github.com/gin-gonic/gin": "gin",
    "google.golang.org/grpc": "grpc",
    "tokio": "tokio",
    "serde": "serde",
    "actix_web": "actix",
    "org.springframework": "spring",
    "org.junit": "junit",
    "javax.persistence": "jpa",
    "System.Linq": "linq",
    "Microsoft.AspNetCore": "aspnet",
    "UIKit": "uikit",
    "SwiftUI": "swiftui",
}
GENERIC_WORDS = STOPWORDS | {
    "get",
    "set",
    "init",
    "new",
    "self",
    "value",
    "data",
    "main",
    "test",
    "util",
    "utils",
    "helper",
    "helpers",
    "index",
    "default",
    "type",
    "make",
    "create",
    "run",
    "handle",
    "impl",
    "args",
    "kwargs",
    "obj",
}
MIGRATION_PATH = re.compile(r"(^|/)(migrations?|alembic/versions|db/migrate)/", re.IGNORECASE)
CLI_PATH = re.compile(r"(^|/)(bin|cmd|scripts?|cli)/|(^|/)(cli|__main__|main|manage)\.\w+$")
SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def first_sentence(text: str, limit: int = 180) -> str:
    text = " ".join(text.split())
    sentence = SENTENCE_END.split(text, maxsplit=1)[0]
    return clip(sentence.rstrip(".:"), limit)


def framework_tags(imports: Sequence[str]) -> list[str]:
    tags: list[str] = []
    for name in imports:
        root = name.lstrip("@").split("/")[0].split(".")[0]
        for key in (name, name.split("/")[0] if name.startswith("@") else root, root):
            tag = FRAMEWORKS.get(key) or FRAMEWORKS.get(key.lower())
            if tag:
                tags.append(tag)
                break
        else:
            for prefix, tag in FRAMEWORKS.items():
                if "." in prefix and name.startswith(prefix):
                    tags.append(tag)
                    break
    return list(dict.fromkeys(tags))


def role_tags(item: FileToAnnotate, outline: Outline) -> list[str]:
    """What the file is for, beyond its kind: tests, migrations, command-line entry points."""
    tags = []
    if item.kind in ("test", "config", "docs", "data"):
        tags.append(item.kind)
    if MIGRATION_PATH.search(item.path):
        tags.append("migration")
    if outline.entry_point or CLI_PATH.search(item.path):
        tags.append("cli")
    return tags


def _tag_words(names: Sequence[str]) -> list[str]:
    """The words of these names that may become tags, in order: one regex over all of them
    (no part spans a space, so this is `split_identifier` of each)."""
    parts = CAMEL_PART.findall(" ".join(names))
    return [word for word in map(str.lower, parts) if len(word) > 2 and word not in GENERIC_WORDS]


def word_tags(item: FileToAnnotate, names: Sequence[str]) -> list[str]:
    counter: Counter[str] = Counter()
    stem = item.path.rsplit("/", 1)[-1].split(".")[0]
    for word in _tag_words([stem]):
        counter[word] += 3
    counter.update(_tag_words(names))
    return [word for word, _ in counter.most_common(TAG_LIMIT)]


def _names(symbols: Sequence[str], limit: int) -> str:
    shown = list(dict.fromkeys(symbols))
    return ", ".join(shown[:limit]) + (" and more" if len(shown) > limit else "")


def describe(item: FileToAnnotate, outline: Outline) -> str:
    label = LANGUAGE_LABELS.get(item.language or "", (item.language or "text").capitalize())
    noun = KIND_NOUNS.get(item.kind, "file")
    if item.kind == "source" and outline.entry_point:
        noun = "program"
    head = f"{label} {noun}"
    parts: list[str] = []
    about = first_sentence(outline.facts.get("description") or outline.doc)
    if outline.facts.get("name"):
        head += f" for {outline.facts['name']}"
    parts.append(f"{head}: {about}" if about else head)
    top = outline.top_level
    types = [
        s.name
        for s in top
        if s.kind
        in ("class", "struct", "interface", "trait", "record", "object", "protocol", "enum", "type", "impl")
    ]
    functions = [s.name for s in top if s.kind in ("function", "macro")]
    members = [s.name for s in outline.symbols if s.depth > 0 and s.kind in ("method", "function")]
    definitions = []
    if types:
        definitions.append(("types " if len(types) > 1 else "type ") + _names(types, 5))
    if functions:
        definitions.append(("functions " if len(functions) > 1 else "function ") + _names(functions, 6))
    if not definitions and members:
        definitions.append("methods " + _names(members, 6))
    if definitions:
        parts.append("Defines " + "; ".join(definitions))
    if outline.headings and item.language == "markdown":
        sections = [h for h in outline.headings[1:] if len(h) < 60]
        if sections:
            parts.append("Sections: " + _names(sections, 6))
    if outline.keys:
        parts.append("Keys: " + _names(outline.keys, 8))
    uses = [name for name in outline.imports if not name.startswith(".")]
    if uses:
        parts.append("Uses " + _names(uses, 4))
    return clip(" ".join(sentence(part) for part in parts))


def sentence(text: str) -> str:
    text = text.rstrip(" .")
    return text if text.endswith(("!", "?")) else text + "."


def annotate_structure(item: FileToAnnotate, *, with_words: bool = True) -> Annotation:
    """`with_words`: find the content words too (the scan finds them once per change; an
    annotation carries them only for a content the index has no words of)."""
    from filescout.annotate.documents import annotate_document
    from filescout.annotate.heuristic import annotate_text as annotate_by_lines
    from filescout.annotate.outline import has_grammar, outline_code, outline_data, outline_markdown

    if item.facts is not None:
        return annotate_document(item, item.facts, with_words=with_words)
    body = body_words(item.text) if with_words else None
    language = item.language or ""
    outline: Outline | None = None
    if language == "markdown":
        outline = outline_markdown(item.text)
    elif language in ("json", "yaml", "toml"):
        outline = outline_data(item.text, language, item.path)
    elif has_grammar(language):
        outline = outline_code(item.text.encode("utf-8", errors="replace"), language)
    if outline is None:
        fallback = annotate_by_lines(item)
        return dataclasses.replace(fallback, body=body)
    if not item.text.strip():
        label = LANGUAGE_LABELS.get(language, language.capitalize() or "Text")
        return Annotation(
            summary=f"{label} {KIND_NOUNS.get(item.kind, 'file')} (empty).",
            tags=role_tags(item, outline),
            symbols=[],
            imports=[],
            body=body,
        )
    names = [symbol.name for symbol in outline.symbols] + outline.headings + outline.keys
    tags = role_tags(item, outline) + framework_tags(outline.imports)
    tags += [language] if language and language not in tags else []
    tags += word_tags(item, names)
    return Annotation(
        summary=describe(item, outline),
        tags=list(dict.fromkeys(tags))[:TAG_LIMIT],
        symbols=list(dict.fromkeys(names)),
        imports=outline.imports,
        body=body,
        definitions=outline.definitions,
    )


class StructuralAnnotator:
    """tree-sitter outlines for code, headings for Markdown, keys for JSON/YAML/TOML, facts and
    headings for documents and images, and the line-based heuristic for everything else."""

    id = ANNOTATOR_ID

    async def annotate(self, files: Sequence[FileToAnnotate]) -> list[Annotation | None]:
        import asyncio  # here, not above: worker processes import this module and run no loop

        return await asyncio.to_thread(lambda: [annotate_safely(item) for item in files])


def annotate_safely(item: FileToAnnotate, *, with_words: bool = True) -> Annotation | None:
    """One odd file (a parser bug, JSON nested too deep to decode) must not stop the backlog:
    it gets the line-based annotation instead, or none. What it says is redacted: a summary
    quotes the file (a text file's first line, a constant), and it is shown to clients."""
    try:
        return redacted(annotate_structure(item, with_words=with_words))
    except Exception:
        log.warning("structural annotation of %s failed; using the line-based one", item.path, exc_info=True)
    try:
        from filescout.annotate.heuristic import annotate_text as annotate_by_lines

        body = body_words(item.text) if with_words else None
        return redacted(dataclasses.replace(annotate_by_lines(item), body=body))
    except Exception:
        log.exception("annotating %s failed", item.path)
        return None


def redacted(annotation: Annotation) -> Annotation:
    """The annotation with its summary and tags redacted (in the worker, off the server's loop;
    most texts pass redaction's screen untouched)."""
    from filescout.llm.redact import redact  # here, not above: its patterns cost startup 30 ms

    summary = redact(annotation.summary)
    tags = [redact(tag) for tag in annotation.tags]
    if summary == annotation.summary and tags == annotation.tags:
        return annotation
    return dataclasses.replace(annotation, summary=summary, tags=list(dict.fromkeys(tags)))
