"""What describes a file, as `files_fts` holds it: its columns, the weights the description search
ranks them with, and the stamp of a row. Both the full-text index (search.py) and its top-k store
(topk.py) read a row so, and neither imports the other for it."""

from __future__ import annotations

DescriptionWeights = tuple[float, float, float, float]
"""BM25 column weights: path words, symbols, summary, tags."""

COLUMNS = ("path", "symbols", "summary", "tags")

DESCRIPTION_WEIGHTS: DescriptionWeights = (6.0, 3.0, 1.0, 2.0)
"""The weights the description search ranks with: a word of the path counts six times one of the
summary. The top-k store is built with them; a search with others is FTS5's."""


def described_stamp(table: str) -> str:
    """SQL for the stamp of a `files_fts` row (named `table` in the statement): what the top-k
    store keeps of the text each of its documents was made from."""
    return f"content_stamp({' || char(31) || '.join(f'{table}.{name}' for name in COLUMNS)})"
