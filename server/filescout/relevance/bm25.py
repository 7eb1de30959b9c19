"""FTS5's BM25 for a text the index does not hold, with the index's own statistics: a file as
it was before a past commit, scored as the index would have scored it (fit.py judges past
commits on that). The texts are cut into tokens by FTS5 itself, in an in-memory table with the
index's tokenizer, so a word is matched exactly as the search matches it (the porter stemmer
included).

FTS5 (fts5_aux.c) scores a row for the phrases p of a query as

    sum_p idf(p) * f(p) * (k1 + 1) / (f(p) + k1 * (1 - b + b * D / avgdl))

with f(p) the phrase's hits in the row, each weighed by its column's weight, D the row's tokens
in all columns, avgdl the table's average of D, and idf(p) = ln((N - n + 0.5) / (n + 0.5)) (at
least 1e-6) for N rows, n of them holding p. SQLite returns it negated; here it is positive.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence

from filescout.core.records import TextStatistics

K1 = 1.2
B = 0.75
DESCRIPTION_TOKENIZER = "porter unicode61 remove_diacritics 2"
CONTENT_TOKENIZER = "unicode61 remove_diacritics 2"


class Tokenizer:
    """FTS5's own tokenizer, on an in-memory table of `columns` columns: what the index's full-
    text table of that tokenizer makes of a row."""

    def __init__(self, tokenizer: str, columns: int) -> None:
        self._columns = columns
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        names = ", ".join(f"c{number}" for number in range(columns))
        self._db.execute(f"CREATE VIRTUAL TABLE cut USING fts5({names}, tokenize = '{tokenizer}')")
        self._db.execute("CREATE VIRTUAL TABLE cut_tokens USING fts5vocab(cut, 'instance')")

    def columns(self, texts: Sequence[str]) -> list[list[str]]:
        """Each column's tokens, in order."""
        if len(texts) != self._columns:
            raise ValueError(f"{len(texts)} texts for {self._columns} columns")
        self._db.execute(
            f"INSERT INTO cut(rowid, {', '.join(f'c{n}' for n in range(self._columns))}) "
            f"VALUES (1, {', '.join('?' * self._columns)})",
            list(texts),
        )
        try:
            rows = self._db.execute(
                "SELECT term, col, offset FROM cut_tokens ORDER BY col, offset"
            ).fetchall()
        finally:
            self._db.execute("DELETE FROM cut")
        found: list[list[str]] = [[] for _ in range(self._columns)]
        for term, column, _ in rows:
            found[int(str(column)[1:])].append(str(term))
        return found

    def phrase(self, text: str) -> list[str]:
        """A quoted query term's tokens: `"url_for"` is the phrase `url for`."""
        return self.columns([text, *[""] * (self._columns - 1)])[0]

    def close(self) -> None:
        self._db.close()


def _hits(phrase: Sequence[str], tokens: Sequence[str]) -> int:
    """How often `phrase` occurs in `tokens`, as consecutive tokens."""
    if not phrase:
        return 0
    size = len(phrase)
    first = phrase[0]
    return sum(
        1
        for start, token in enumerate(tokens)
        if token == first and list(tokens[start : start + size]) == list(phrase)
    )


def idf(rows: int, holding: int) -> float:
    value = math.log((rows - holding + 0.5) / (holding + 0.5)) if rows else 0.0
    return value if value > 0 else 1e-6


def score(
    phrases: dict[str, list[str]],
    columns: Sequence[Sequence[str]],
    statistics: TextStatistics,
    weights: Sequence[float] = (),
) -> float:
    """The row made of `columns` (each column's tokens) for `phrases` (as asked -> its tokens),
    as FTS5 would score it among the rows `statistics` describes."""
    length = sum(len(tokens) for tokens in columns)
    if not length or statistics.average_length <= 0:
        return 0.0
    norm = K1 * (1 - B + B * length / statistics.average_length)
    total = 0.0
    for asked, tokens in phrases.items():
        frequency = sum(
            (weights[column] if column < len(weights) else 1.0) * _hits(tokens, found)
            for column, found in enumerate(columns)
        )
        if frequency:
            weight = idf(statistics.rows, statistics.holding.get(asked, 0))
            total += weight * frequency * (K1 + 1) / (frequency + norm)
    return total
