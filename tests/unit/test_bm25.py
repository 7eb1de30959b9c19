"""FTS5's BM25 recomputed for a text outside the index (relevance/bm25.py) gives what FTS5 gives
for the same text inside it: the past versions the fit judges commits on are scored as the
index scores today's files."""

from __future__ import annotations

from pathlib import Path

import pytest

from filescout.annotate.structural import annotate_structure
from filescout.core.records import FileToAnnotate
from filescout.core.words import body_words, join_words, path_words
from filescout.relevance import bm25
from filescout.relevance.evidence import STRUCTURE_WEIGHTS
from filescout.relevance.query import expression
from filescout.scan.classify import classify
from small_index import indexed

FILES = {
    "shop/billing.py": '"""Invoices and the currency they are billed in."""\n\n'
    "def bill(order, currency):\n    return round_currency(order.total, currency)\n\n\n"
    "def round_currency(amount, currency):\n    return round(amount, currency.digits)\n",
    "shop/rates.py": "RATES = {'eur': 1.0, 'usd': 1.1}\n\n\ndef rate(currency):\n    return RATES[currency]\n",
    "shop/ledger.py": "class Ledger:\n    def post(self, entry):\n        self.entries.append(entry)\n",
    "docs/billing.md": "# Billing\n\nEvery invoice is rounded to the currency's digits.\n",
    "shop/orders.py": "from shop.billing import bill\n\n\nclass Order:\n    total = 0\n\n"
    "    def invoice(self, currency):\n        return bill(self, currency)\n",
}


def described(path: str) -> list[str]:
    """A file's description columns as the index writes them: path words, symbols, summary, tags."""
    kind = classify(path, FILES[path].encode()[:100])
    found = annotate_structure(FileToAnnotate(path, "x", kind.language, kind.kind, FILES[path]))
    return [path_words(path), join_words(found.symbols), found.summary, join_words(found.tags)]


@pytest.mark.parametrize(
    "question", ["round_currency of an invoice", "billing currency rates", "ledger post"]
)
async def test_a_text_outside_the_index_scores_as_fts5_scores_it_inside(
    tmp_path: Path, question: str
) -> None:
    index = await indexed(tmp_path, FILES)
    try:
        terms = question.split()
        described_match = expression(terms)
        content_match = expression(terms, single_tokens=True)
        assert described_match is not None and content_match is not None
        fts5_described = {
            hit.path: hit.rank
            for hit in await index.descriptions.search(described_match, limit=50, weights=STRUCTURE_WEIGHTS)
        }
        fts5_content = {hit.path: hit.rank for hit in await index.contents.search(content_match, limit=50)}
        phrases = [f'"{term}"' for term in terms]
        description_statistics = await index.descriptions.statistics(phrases)
        single = [term for term in terms if "_" not in term]
        content_statistics = await index.contents.statistics(single)
    finally:
        await index.close()
    descriptions = bm25.Tokenizer(bm25.DESCRIPTION_TOKENIZER, 4)
    contents = bm25.Tokenizer(bm25.CONTENT_TOKENIZER, 1)
    asked = {phrase: descriptions.phrase(phrase) for phrase in phrases}
    words = {term: contents.phrase(term) for term in single}
    assert fts5_described and fts5_content
    for path in FILES:
        mine = bm25.score(
            asked, descriptions.columns(described(path)), description_statistics, STRUCTURE_WEIGHTS
        )
        assert mine == pytest.approx(fts5_described.get(path, 0.0), rel=1e-9, abs=1e-12), path
        body = contents.columns([body_words(FILES[path])])
        assert bm25.score(words, body, content_statistics) == pytest.approx(
            fts5_content.get(path, 0.0), rel=1e-9, abs=1e-12
        ), path
