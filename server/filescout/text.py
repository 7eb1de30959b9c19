"""Identifier-aware word splitting, shared by indexing and querying so both agree.

`parseHTTPHeader_v2` -> parse, http, header, v2 (plus the whole identifier), which is what lets
a question in plain words find code named in camelCase or snake_case.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "it's",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "such",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "too",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


def split_identifier(identifier: str) -> list[str]:
    """Lower-cased parts of a snake_case / camelCase / PascalCase identifier."""
    parts: list[str] = []
    for chunk in identifier.split("_"):
        if chunk.isascii() and chunk.isalpha() and (chunk.islower() or chunk.isupper()):
            parts.append(chunk.lower())  # most chunks: one word, no regex needed
        elif chunk:
            parts.extend(match.group(0).lower() for match in CAMEL_PART.finditer(chunk))
    return parts


CACHED_TOKEN_LENGTH = 64
"""Identifiers that repeat across a codebase are short. A longer token (a question's, a base64
blob's) is split without being cached: 16,384 of them, with their parts, could be gigabytes."""


def _token_words(token: str, keep_whole: bool, min_length: int) -> tuple[str, ...]:
    """The words one identifier contributes."""
    parts = split_identifier(token) if not token.isdigit() else [token]
    whole = token.lower().strip("_")
    found = [whole] if keep_whole and len(parts) > 1 and len(whole) >= min_length else []
    found += [part for part in parts if len(part) >= min_length and part not in STOPWORDS]
    return tuple(found)


_cached_token_words = functools.lru_cache(maxsize=16_384)(_token_words)


def words(text: str, *, keep_whole: bool = True, min_length: int = 2) -> Iterator[str]:
    """Lower-cased words of `text`, identifiers split into their parts; stopwords dropped."""
    for match in IDENTIFIER.finditer(text):
        token = match.group(0)
        split = _cached_token_words if len(token) <= CACHED_TOKEN_LENGTH else _token_words
        yield from split(token, keep_whole, min_length)


def unique_words(text: str) -> list[str]:
    return list(dict.fromkeys(words(text)))


@functools.lru_cache(maxsize=8192)
def _directory_words(directory: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(words(directory)))


def path_words(path: str) -> str:
    """The words of a path, for full-text indexing (`src/httpClient.ts` -> `src http client
    httpclient ts`). Directories repeat across thousands of paths, so their words are cached."""
    directory, _, name = path.rpartition("/")
    return " ".join(dict.fromkeys((*_directory_words(directory), *words(name))))


def join_words(items: Iterable[str]) -> str:
    return " ".join(dict.fromkeys(word for item in items for word in words(item)))


BODY_TERM_CAP = 3
"""How often one word may count in a file's content. BM25 saturates term frequency anyway;
capping it keeps the content index small and stops a word repeated a thousand times in one file
from dominating."""


def body_words(text: str) -> str:
    """The words of a file's content for the content index: identifier-aware, each word at
    most BODY_TERM_CAP times. Identifiers repeat within a file, so each distinct one is split
    once (the regex counts them in C); a word's copies are emitted together, in the order the
    identifiers first appear."""
    counts: dict[str, int] = {}
    for token in IDENTIFIER.findall(text):
        counts[token] = counts.get(token, 0) + 1
    kept: dict[str, int] = {}
    for token, occurrences in counts.items():
        for word in _token_words(token, True, 2):
            seen = kept.get(word, 0)
            if seen < BODY_TERM_CAP:
                kept[word] = min(seen + occurrences, BODY_TERM_CAP)
    return " ".join(" ".join([word] * times) for word, times in kept.items())
