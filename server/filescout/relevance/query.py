"""What a natural-language request says, as far as ranking files is concerned."""

from __future__ import annotations

import re
from dataclasses import dataclass

from filescout.core.words import unique_words, words
from filescout.relevance.mentions import LANGUAGE_WORDS, Mentions, mentions, report_mentions
from filescout.relevance.report import Report, is_report, read_report
from filescout.scan.classify import LANGUAGE_BY_EXTENSION

MAX_TERMS = 48
# A question that is about tests, docs, documents or images should not have them pushed down, nor
# one about dependencies the code copied in from other projects ("vendored", not a kind of file),
# nor one about types the declaration files that state them ("types").
ASKS_FOR = {
    "test": re.compile(r"\b(tests?|testing|spec|specs|unit ?tests?|fixtures?|pytest|jest|coverage)\b", re.I),
    "docs": re.compile(r"\b(docs?|documentation|readme|changelog|guide|tutorial|docstrings?)\b", re.I),
    "config": re.compile(
        r"\b(config(uration)?|settings?|ci|workflow|pipeline|dockerfile|"
        r"package\.json|pyproject|tsconfig|build)\b",
        re.I,
    ),
    "data": re.compile(r"\b(data|dataset|csv|fixtures?|json)\b", re.I),
    "document": re.compile(
        r"\b(documents?|pdfs?|specifications?|rfcs?|white ?papers?|slides?|slide ?decks?|presentations?|"
        r"spreadsheets?|workbooks?|excel|word documents?|docx|pptx|xlsx|data ?sheets?|manuals?)\b",
        re.I,
    ),
    "vendored": re.compile(
        r"\b(vendor(ed|ing)?|dependenc(y|ies)|deps|third[- ]?party|bump(s|ed)?|upgrad(e|es|ed|ing)|"
        r"go\.(mod|sum)|update module)\b",
        re.I,
    ),
    "types": re.compile(
        r"\b(types?|typings?|typescript|typed|type ?hints?|annotations?|declarations?|"
        r"d\.c?m?ts|stubs?|pyi)\b",
        re.I,
    ),
    "image": re.compile(
        r"\b(images?|pictures?|photos?|photographs?|screenshots?|screen ?shots?|diagrams?|icons?|logos?|"
        r"illustrations?|mock-?ups?|wireframes?|drawings?|png|jpe?g|svg|gif)\b",
        re.I,
    ),
}


@dataclass(frozen=True)
class Query:
    text: str
    terms: list[str]
    """Identifier-aware words, for full-text search."""
    mentions: Mentions
    """The files, modules and symbols the question names explicitly (`routing.py`, `url_for`)."""
    asks_for: frozenset[str]
    """File kinds the question is explicitly about (tests, docs, config, data, documents, images),
    "vendored" for a question about dependencies (code copied in from other projects), and
    "types" for one about types (declaration files state them)."""
    history_terms: list[str] | None = None
    """The words past commits' messages are searched for; None: `terms`."""
    history_share: float = 1.0
    """How much the history's votes may move the ranking (1: as for a commit message)."""

    @property
    def match_expression(self) -> str | None:
        return expression(self.terms)


def expression(terms: list[str], *, single_tokens: bool = False) -> str | None:
    """An FTS5 query ORing the terms; each is quoted, so no input is FTS syntax. With
    `single_tokens`, terms the tokenizer would split (`url_for`) are left out: they would be
    phrase queries, slow over the large content index, and their parts are terms of their own."""
    chosen = [term for term in terms if not single_tokens or "_" not in term]
    if not chosen:
        return None
    return " OR ".join(f'"{term}"' for term in chosen)


REPORT_SHARES = {
    "links": 6,
    "frames": 4,
    "title": 16,
    "errors": 10,
    "spans": 12,
    "code": 16,
    "prose": 16,
}
"""At most this many search terms from each part of a report, taken in this order until
MAX_TERMS: the title and the structured evidence first, prose last and least."""
PER_BLOCK = 8
"""At most this many terms from any one code block or error message."""
_PROGRAMMING_LANGUAGES = """
python javascript typescript tsx go rust java cpp csharp ruby php kotlin swift scala dart
"""
PROGRAMMING_LANGUAGES = frozenset(_PROGRAMMING_LANGUAGES.split())
NOT_A_TOPIC = PROGRAMMING_LANGUAGES | frozenset(
    extension.lstrip(".")
    for extension, language in LANGUAGE_BY_EXTENSION.items()
    if language in PROGRAMMING_LANGUAGES
)
"""Programming languages' names and extensions (`rdsr.py` -> py): in a report they say what the
user ran, and every file's path or summary has them."""
HISTORY_TERMS = 16
"""Past commits' messages are short: a report searches them for its links, title and inline
code only, not for the whole of its prose."""
HISTORY_SHARE_LONG = 0.25
"""A report's own evidence outweighs similar past commits': their votes move it a quarter as
much as a commit message's (at a half, they still lowered R@1 on the issue-style cases)..."""
HISTORY_SHARE_EVIDENCE = 0.1
"""...and a tenth as much when it has frames, links or inline code of its own."""


def analyse(text: str) -> Query:
    distinct = unique_words(text)
    if is_report(text, len(distinct)):
        return _analyse_report(text)
    named = mentions(text)
    # What the question names comes first, so a long question's cut never drops it.
    terms = unique_words(" ".join([*named.words, text]))[:MAX_TERMS]
    asks = frozenset(kind for kind, pattern in ASKS_FOR.items() if pattern.search(text))
    return Query(text=text, terms=terms, mentions=named, asks_for=asks)


def _analyse_report(text: str) -> Query:
    """A report's terms and mentions (report.py): the title and the structured evidence come
    first, each part and each block capped, prose last."""
    report = read_report(text)
    named = report_mentions(report)
    parts = _report_parts(report)
    terms: list[str] = []
    seen: set[str] = set()
    for part, found in parts.items():
        taken = 0
        for word in found:
            if len(terms) >= MAX_TERMS or taken >= REPORT_SHARES[part]:
                break
            if word not in seen and word not in NOT_A_TOPIC:
                seen.add(word)
                terms.append(word)
                taken += 1
    if not terms:  # nothing but languages' names: the words as they come
        terms = unique_words(text)[:MAX_TERMS]
    strong = [*parts["links"], *parts["title"], *parts["spans"]]
    history = list(dict.fromkeys(strong))[:HISTORY_TERMS] or terms[:HISTORY_TERMS]
    share = HISTORY_SHARE_EVIDENCE if report.evidence else HISTORY_SHARE_LONG
    asks = frozenset(kind for kind, pattern in ASKS_FOR.items() if pattern.search(report.title or text[:200]))
    return Query(
        text=text,
        terms=terms,
        mentions=named,
        asks_for=asks,
        history_terms=history,
        history_share=share,
    )


def _report_parts(report: Report) -> dict[str, list[str]]:
    """Each part's words, best first."""
    frames = [word for frame in report.frames if frame.depth == 0 for word in words(frame.function)]
    code: list[str] = []
    for block in report.code:
        code += unique_words(" ".join(_code_names(block)))[:PER_BLOCK]
    errors: list[str] = []
    for name, message in report.errors:
        errors += unique_words(f"{name} {message}")[:PER_BLOCK]
    return {
        "links": [word for link in report.links for word in words(link.rpartition("/")[2].rsplit(".", 1)[0])],
        "frames": frames,
        "title": unique_words(report.title),
        "errors": errors,
        "spans": unique_words(" ".join(report.spans)),
        "code": code,
        "prose": unique_words("\n".join(report.prose)),
    }


CODE_NAME = re.compile(
    r"\b[A-Za-z_][\w.]{0,80}(?=[ \t]*\()|\b[A-Za-z_]\w{0,80}\.[\w.]{1,80}|\b[A-Z]\w{0,80}|\b\w{0,80}_\w{0,80}"
)


def _code_names(block: str) -> list[str]:
    """The names a code block calls or reaches into (`fields.URL(`, `schema.opts`), its classes
    and snake_case names: its plain words are keywords and variables."""
    return [name for name in CODE_NAME.findall(block) if name.split(".", 1)[0] not in LANGUAGE_WORDS]
