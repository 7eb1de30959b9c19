"""Identifier-aware word splitting, shared by indexing and querying so both agree.

`parseHTTPHeader_v2` -> parse, http, header, v2 (plus the whole identifier), which is what lets
a question in plain words find code named in camelCase or snake_case.
"""

from __future__ import annotations

import codecs
import functools
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain

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
    """Lower-cased parts of a snake_case / camelCase / PascalCase identifier. One regex over
    the whole of it: underscores separate parts because no part contains one."""
    if identifier.isalpha() and identifier.isascii() and (identifier.islower() or identifier.isupper()):
        return [identifier.lower()]  # most identifiers: one word, no regex needed
    return [part.lower() for part in CAMEL_PART.findall(identifier)]


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
    for token in IDENTIFIER.findall(text):
        if (token.isalpha() and (token.islower() or token.isupper())) or token.isdigit():
            word = token.lower()  # one word, as _token_words would find (most tokens)
            if len(word) >= min_length and word not in STOPWORDS:
                yield word
            continue
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


_index_split: dict[str, tuple[str, ...]] = {}
INDEX_SPLIT_CACHE = 16_000
"""Distinct identifiers remembered with their words for what is indexed (~4 MB): a miss costs
more than the lookup. Most hits are identifiers of the file at hand and its neighbours, so a
larger cache buys no speed: one pass over Python's standard library, or the 20K-file benchmark
tree, is as fast with 50,000 and holds 10-12 MB more in every worker (docs/BENCHMARKS.md)."""


def _index_token_words(token: str) -> tuple[str, ...]:
    """`words` of one identifier, as indexed (the whole and its parts, at least two letters)."""
    found = _index_split.get(token)
    if found is None:
        if len(_index_split) >= INDEX_SPLIT_CACHE:
            _index_split.clear()
        found = _token_words(token, True, 2)
        if len(token) <= CACHED_TOKEN_LENGTH:
            _index_split[token] = found
    return found


def join_words(items: Iterable[str]) -> str:
    return index_words(" ".join(items))  # no identifier spans a space


def index_words(text: str) -> str:
    """The distinct `words` of `text`, space-separated, in order. Indexing calls this for every
    definition's name, signature and doc, so identifiers are looked up in C and only the few
    not seen before are split in Python."""
    tokens = IDENTIFIER.findall(text)
    if len(tokens) == 1:  # a name, a short doc: most calls
        found = _index_split.get(tokens[0]) or _index_token_words(tokens[0])
        return found[0] if len(found) == 1 else " ".join(dict.fromkeys(found))
    if not tokens:
        return ""
    parts = list(map(_index_split.get, tokens))
    if None in parts:
        parts = [
            known if known is not None else _index_token_words(token)
            for token, known in zip(tokens, parts, strict=True)
        ]
    return " ".join(dict.fromkeys(chain.from_iterable(parts)))  # type: ignore[arg-type]


BODY_TERM_CAP = 3
"""How often one word may count in a file's content. BM25 saturates term frequency anyway;
capping it keeps the content index small and stops a word repeated a thousand times in one file
from dominating."""


def body_words(text: str) -> str:
    """The words of a file's content for the content index: identifier-aware, each word at
    most BODY_TERM_CAP times. Identifiers repeat within a file and across files, so each
    distinct one is counted in C (`identifier_runs`) and split once per process (cached); a
    word's copies are emitted together, in the order the identifiers first appear."""
    kept: dict[str, int] = {}
    get = kept.get
    for token, occurrences in identifier_runs(text).items():
        if (token.isalpha() and (token.islower() or token.isupper())) or token.isdigit():
            # one word, as _token_words would find (most tokens): no splitting, no cache
            word = token.lower()
            found: Sequence[str] = (word,) if len(word) > 1 and word not in STOPWORDS else ()
        elif token[0] > "9":
            found = _index_token_words(token)
        else:  # a run such as `0x1F`: the words of the identifiers IDENTIFIER finds in it
            found = [word for part in IDENTIFIER.findall(token) for word in _token_words(part, True, 2)]
        for word in found:
            seen = get(word, 0)
            if seen < BODY_TERM_CAP:
                kept[word] = seen + occurrences if seen + occurrences < BODY_TERM_CAP else BODY_TERM_CAP
    emitted: list[str] = []
    for word, times in kept.items():
        emitted += (word,) * times
    return " ".join(emitted)


IDENTIFIER_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_SEPARATE = bytes(byte if byte in IDENTIFIER_BYTES else 0x20 for byte in range(256))


def identifier_runs(text: str) -> Counter[str]:
    """How often each run of identifier characters occurs, in the order they first appear: as
    `Counter(IDENTIFIER.findall(text))`, but twice as fast (every other character becomes a
    space, in C, and the text is split at spaces), and a run that starts with digits and goes
    on (`0x1F`, which IDENTIFIER finds as `0` and `x1F`) is left whole."""
    return Counter(text.encode("ascii", "replace").translate(_SEPARATE).decode("ascii").split())


TEXT_BYTES = 256 * 1024
"""How much of a file is read as its text: for annotators and for the content index alike."""


UTF16_MARKS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def is_utf16(data: bytes) -> bool:
    """UTF-16 with a byte order mark, as Windows tools write source files (not UTF-32, whose
    little-endian mark begins the same way)."""
    return data.startswith(UTF16_MARKS) and not data.startswith(codecs.BOM_UTF32_LE)


def content_text(data: bytes) -> str:
    """The text annotators and the content index see of a file's bytes: its head, decoded
    leniently, as UTF-8 unless a byte order mark says UTF-16."""
    head = data[:TEXT_BYTES]
    return head.decode("utf-16" if is_utf16(head) else "utf-8", errors="replace")


def pack_words(body: str) -> bytes:
    """Content words as the content index keeps them beside its contentless full-text table
    (compressed: removing a row from such a table means naming its words again)."""
    return zlib.compress(body.encode(), 6)


def unpack_words(packed: bytes) -> str:
    return zlib.decompress(packed).decode()
