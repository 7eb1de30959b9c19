"""Files as they were before past commits, and as HEAD has them, described as the structural
annotator describes them: what fitting the ranking on the repository's history judges each past
commit on (relevance/fit.py). Today's files hold the words each commit added; their versions
before it do not."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from filescout.annotate.structural import annotate_safely
from filescout.core.records import DescribedText, FileToAnnotate
from filescout.scan.classify import BINARY_SNIFF_BYTES, classify
from filescout.vcs.blobs import read_versions

MOST_BYTES = 1 << 20
"""A larger version is not read: a source file that large is rare, and the past commit is then
judged on the file as it is today."""


class PastFiles:
    """Reads versions of the workspace's files from its git repository."""

    def __init__(self, root: Path) -> None:
        self._root = root

    async def before_and_now(
        self, wanted: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[DescribedText | None, DescribedText | None]]:
        """For each (commit, path): the file in the commit's first parent and at HEAD, each None
        when that revision had no such file. Left out when git could not read both."""
        return await asyncio.to_thread(self._read, list(wanted))

    def _read(
        self, wanted: list[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[DescribedText | None, DescribedText | None]]:
        asked = [(f"{commit}^", path) for commit, path in wanted]
        asked += [("HEAD", path) for path in dict.fromkeys(path for _, path in wanted)]
        versions = read_versions(self._root, asked, most_bytes=MOST_BYTES)
        described: dict[tuple[str, str], DescribedText | None] = {}
        for key, data in versions.items():
            if data is None:
                described[key] = None  # the revision had no such file
            elif (found := _describe(key[1], data)) is not None:
                described[key] = found
        found_pairs = {}
        for commit, path in wanted:
            before, now = (f"{commit}^", path), ("HEAD", path)
            if before in described and now in described:
                found_pairs[(commit, path)] = (described[before], described[now])
        return found_pairs


def _describe(path: str, data: bytes) -> DescribedText | None:
    """None when even the line-based annotation failed."""
    kind = classify(path, data[:BINARY_SNIFF_BYTES])  # as the scan classifies a file
    text = data.decode("utf-8", errors="replace")
    annotation = annotate_safely(FileToAnnotate(path, "", kind.language, kind.kind, text))
    if annotation is None:
        return None
    return DescribedText(
        words=annotation.body or "",
        summary=annotation.summary,
        tags=annotation.tags,
        symbols=annotation.symbols,
        definitions=annotation.definitions or [],
    )
