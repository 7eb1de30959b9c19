"""Past commits judged on their files as they were (fit.py): a past commit asked as a question
finds today's files, which hold the words the commit itself added ("add round_currency" finds the
file that has defined `round_currency` since). Judged so, the text finds the commit's files far
more surely than it found them when the question was new, and the weights fitted on that trust
the text too much.

So each answer file's text evidence is scored again as the file was before the commit: its
description, content and definitions scores are scaled by what FTS5's BM25 gives the version
before the commit against the version at HEAD, both described as the index describes a file
(bm25.py), with the index's own statistics. A file the commit added could not have been found:
it leaves the answer and the candidates. The other candidates keep today's scores: they are the
files a question finds, and their words owe nothing to the commit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from filescout.core.records import DescribedText, TextStatistics
from filescout.core.words import join_words, path_words
from filescout.index import Index
from filescout.relevance import bm25
from filescout.relevance import definitions as defined_here
from filescout.relevance.evidence import STRUCTURE_WEIGHTS, Evidence

Versions = dict[tuple[str, str], tuple[DescribedText | None, DescribedText | None]]
ReadVersions = Callable[[Sequence[tuple[str, str]]], Awaitable[Versions]]
"""(commit, path) pairs -> the file before the commit and at HEAD (None: not there), as the
structural annotator describes them; pairs it could not read are left out."""


class Rescorer:
    """A text's BM25 as the index's description and content searches would score it."""

    def __init__(self, descriptions: TextStatistics, contents: TextStatistics) -> None:
        self._statistics = (descriptions, contents)
        self._described = bm25.Tokenizer(bm25.DESCRIPTION_TOKENIZER, 4)
        self._content = bm25.Tokenizer(bm25.CONTENT_TOKENIZER, 1)
        self._phrases: dict[str, list[str]] = {}
        self._words: dict[str, list[str]] = {}

    def described(self, phrases: Sequence[str], path: str, text: DescribedText) -> float:
        asked = {phrase: self._phrase(phrase) for phrase in phrases}
        columns = [path_words(path), join_words(text.symbols), text.summary, join_words(text.tags)]
        return bm25.score(asked, self._described.columns(columns), self._statistics[0], STRUCTURE_WEIGHTS)

    def content(self, words: Sequence[str], text: DescribedText) -> float:
        asked = {word: self._word(word) for word in words}
        return bm25.score(asked, self._content.columns([text.words]), self._statistics[1])

    def _phrase(self, phrase: str) -> list[str]:
        if phrase not in self._phrases:
            self._phrases[phrase] = self._described.phrase(phrase)
        return self._phrases[phrase]

    def _word(self, word: str) -> list[str]:
        if word not in self._words:
            self._words[word] = self._content.phrase(word)
        return self._words[word]

    def close(self) -> None:
        self._described.close()
        self._content.close()


async def as_before(
    index: Index, asked: Sequence[tuple[str, Evidence, frozenset[str]]], read: ReadVersions
) -> list[frozenset[str]]:
    """For each past commit asked as a question (its id, what the searches found, its answer),
    its answer files' text evidence scored again as the files were before the commit; returned,
    each answer without the files the commit added (empty: nothing a question could find)."""
    versions = await read([(commit, path) for commit, _, answer in asked for path in sorted(answer)])
    phrases = sorted({phrase for _, evidence, _ in asked for phrase in evidence.text.described_asked})
    words = sorted({word for _, evidence, _ in asked for word in evidence.text.content_asked})
    rescorer = Rescorer(await index.descriptions.statistics(phrases), await index.contents.statistics(words))
    try:
        answers = []
        for commit, evidence, answer in asked:
            kept = set(answer)
            for path in sorted(answer):
                before, now = versions.get((commit, path), (None, None))
                if (commit, path) in versions and before is None:
                    kept.discard(path)
                    _forget(evidence, path)
                elif before is not None and now is not None:
                    _rescore(rescorer, evidence, path, before, now)
            answers.append(frozenset(kept))
        return answers
    finally:
        rescorer.close()


def _forget(evidence: Evidence, path: str) -> None:
    """A file the commit added: no question before it could find it."""
    for found in (evidence.hits, evidence.namings, evidence.text.hits, evidence.text.scores):
        found.pop(path, None)


def _ratio(before: float, now: float) -> float:
    """How the version before scores against the one now; 1 when the one now scores nothing
    here, though the index found it (words the structural description does not have)."""
    return before / now if now > 0 else 1.0


def _rescore(
    rescorer: Rescorer, evidence: Evidence, path: str, before: DescribedText, now: DescribedText
) -> None:
    text = evidence.text
    if path in text.scores:
        described, content = text.scores[path]
        if described:
            asked = text.described_asked
            described *= _ratio(rescorer.described(asked, path, before), rescorer.described(asked, path, now))
        if content:
            asked = text.content_asked
            content *= _ratio(rescorer.content(asked, before), rescorer.content(asked, now))
        text.scores[path] = [described, content]
    if path in text.defined and path in text.defined_lifts:
        # A definition the file did not have yet could not match: its share of the lift goes.
        had = {(definition.name, definition.container) for definition in before.definitions}
        match = text.defined[path]
        kept = [rank for rank, found in match.definitions if (found.name, found.container) in had]
        text.defined_lifts[path] *= _ratio(defined_here.rolled(kept), match.score)
