"""A small real index of given files, annotated as the structural annotator annotates them: for
tests of what reads the index (the ranking, its statistics) without a scan."""

from __future__ import annotations

import hashlib
from pathlib import Path

from filescout.annotate.structural import ANNOTATOR_ID, annotate_structure
from filescout.core.records import FileRecord, FileToAnnotate
from filescout.core.words import body_words, pack_words
from filescout.index import Index
from filescout.scan.classify import classify


async def indexed(tmp_path: Path, files: dict[str, str]) -> Index:
    """A small real index of `files` (path -> text) in `tmp_path`."""
    opened = await Index.open(tmp_path / "index.sqlite3")
    await put(opened, files)
    return opened


async def put(index: Index, files: dict[str, str]) -> None:
    """Store and annotate `files` (path -> text), as a scan and the structural worker do."""
    records, annotations = [], []
    for path, text in files.items():
        kind = classify(path, text.encode()[:100])
        digest = f"{path}:{hash(text)}"
        records.append(FileRecord(path, len(text), 1, digest, kind.language, kind.kind, None))
        annotations.append(
            (digest, annotate_structure(FileToAnnotate(path, digest, kind.language, kind.kind, text)))
        )
    await index.files.apply_changes(records, [], current=ANNOTATOR_ID)
    await index.annotations.save(ANNOTATOR_ID, annotations)


def digest_of(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


async def scanned(index: Index, files: dict[str, str]) -> None:
    """Files and their content words (path -> text), committed as a scan commits them: copies
    share a content; nothing annotated."""
    records, bodies = [], []
    for path, text in files.items():
        kind = classify(path, text.encode()[:100])
        records.append(FileRecord(path, len(text), 1, digest_of(text), kind.language, kind.kind, None))
        body = body_words(text)
        bodies.append((digest_of(text), body, pack_words(body)))
    await index.files.apply_changes(records, [], current=ANNOTATOR_ID, bodies=bodies)
