"""What a natural-language request says, as far as ranking files is concerned."""

from __future__ import annotations

import re
from dataclasses import dataclass

from filescout.core.words import unique_words
from filescout.relevance.mentions import Mentions, mentions

MAX_TERMS = 48
# A question that is about tests, docs, documents or images should not have them pushed down.
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
    """File kinds the question is explicitly about (tests, docs, config, data, documents, images)."""

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


def analyse(text: str) -> Query:
    named = mentions(text)
    # What the question names comes first, so a long question's cut never drops it.
    terms = unique_words(" ".join([*named.words, text]))[:MAX_TERMS]
    asks = frozenset(kind for kind, pattern in ASKS_FOR.items() if pattern.search(text))
    return Query(text=text, terms=terms, mentions=named, asks_for=asks)
