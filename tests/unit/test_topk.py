"""The tantivy store of content words (index/topk.py) on a real index: made from `contents`,
ranked as FTS5 ranks, and never answering with content SQLite no longer has, whatever point a
kill stopped the writer at."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from filescout.annotate.structural import ANNOTATOR_ID
from filescout.core.records import FileRecord
from filescout.core.words import body_words, pack_words
from filescout.index import Index
from filescout.index.topk import (
    BUILT,
    MARKER,
    ContentTopK,
    Reconciled,
    TopKUnavailable,
    directory_for,
    query_tokens,
)
from filescout.scan.classify import classify

pytest.importorskip("tantivy")

FILES = {
    "app/checks.py": (
        "def verify_checksum(archive):\n    # the checksum of a downloaded archive\n    return checksum(archive)\n",
        "h1",
    ),
    "app/download.py": ("def download(url):\n    return fetch(url)  # an archive, maybe\n", "h2"),
    "app/render.py": ("def render_template(name):\n    return template_engine(name)\n", "h3"),
    "docs/readme.md": ("# Downloads\n\nEvery download is checked.\n", "h4"),
}


async def store(index: Index, files: dict[str, tuple[str, str]]) -> None:
    """Files and their content words, committed as a scan commits them."""
    records, bodies = [], []
    for path, (text, digest) in files.items():
        kind = classify(path, text.encode()[:100])
        records.append(FileRecord(path, len(text), 1, digest, kind.language, kind.kind, None))
        body = body_words(text)
        bodies.append((digest, body, pack_words(body)))
    await index.files.apply_changes(records, [], current=ANNOTATOR_ID, bodies=bodies)


async def remove(index: Index, paths: list[str]) -> None:
    await index.files.apply_changes([], paths, current=ANNOTATOR_ID)
    await index.annotations.drop_orphans()


async def content_id(index: Index, digest: str) -> int:
    ((found,),) = await index.db.reader.execute_fetchall("SELECT id FROM contents WHERE hash = ?", (digest,))
    return int(found)


async def fts5_top(index: Index, terms: list[str]) -> list[int]:
    match = " OR ".join(f'"{term}"' for term in query_tokens(terms))
    rows = await index.db.reader.execute_fetchall(
        "SELECT rowid FROM body_fts WHERE body_fts MATCH ? ORDER BY bm25(body_fts)", (match,)
    )
    return [int(row[0]) for row in rows]


@pytest_asyncio.fixture
async def index(tmp_path: Path) -> AsyncIterator[Index]:
    opened = await Index.open(tmp_path / "index.sqlite3")
    await store(opened, FILES)
    yield opened
    await opened.close()


async def opened(index: Index) -> ContentTopK:
    return await ContentTopK.open(directory_for(index.path), index.db)


async def test_a_store_is_made_from_contents_and_ranks_as_fts5(index: Index) -> None:
    topk = await opened(index)
    try:
        assert topk.complete and await topk.documents() == len(FILES)
        for terms in (["checksum", "archive"], ["download"], ["render", "template", "archive"]):
            found = await topk.search(terms, limit=10)
            assert [found_id for found_id, _ in found] == await fts5_top(index, terms)
            assert all(score > 0 for _, score in found)
        assert await topk.search(["nothing"], limit=10) == []
        # `verify_checksum` is cut at `_` in the store, as FTS5 cuts it.
        assert [hit for hit, _ in await topk.search(["verify_checksum"], limit=1)] == [
            await content_id(index, "h1")
        ]
    finally:
        await topk.close()
    again = await opened(index)
    try:
        assert await again.reconcile() == Reconciled(removed=0, added=0)
    finally:
        await again.close()


async def test_the_store_scores_every_term_with_fts5s_bm25(index: Index) -> None:
    """The same scores as FTS5's bm25(), a word in half the contents or more included: FTS5
    weighs it next to nothing, where tantivy's own IDF would still give it ln 2 (a long bug
    report's common words outweighing its telling ones)."""
    topk = await opened(index)
    try:
        for terms in (["checksum", "archive"], ["archive"], ["download", "archive", "template"]):
            match = " OR ".join(f'"{term}"' for term in query_tokens(terms))
            rows = await index.db.reader.execute_fetchall(
                "SELECT rowid, -bm25(body_fts) FROM body_fts WHERE body_fts MATCH ?", (match,)
            )
            expected = {int(found): float(score) for found, score in rows}
            found = dict(await topk.search(terms, limit=10))
            assert found.keys() == expected.keys()
            for found_id, score in expected.items():
                assert found[found_id] == pytest.approx(score, rel=1e-3, abs=1e-5), terms
    finally:
        await topk.close()


async def test_content_sqlite_committed_and_the_store_missed_comes_in_on_opening(index: Index) -> None:
    topk = await opened(index)
    await store(index, {"app/upload.py": ("def upload(archive):\n    return send(archive)\n", "h5")})
    try:
        assert await topk.search(["upload"], limit=10) == []  # killed before the store was told
    finally:
        await topk.close()
    again = await opened(index)
    try:
        assert (await again.reconcile()).added == 0  # opening reconciled already
        assert [hit for hit, _ in await again.search(["upload"], limit=10)] == [await content_id(index, "h5")]
        assert await again.documents() == len(FILES) + 1
    finally:
        await again.close()


async def test_content_sqlite_forgot_is_never_an_answer_and_leaves_on_opening(index: Index) -> None:
    topk = await opened(index)
    gone = await content_id(index, "h3")
    try:
        await remove(index, ["app/render.py"])
        assert await topk.documents() == len(FILES)  # the store still has it...
        assert await topk.search(["render", "template"], limit=10) == []  # ...and never answers with it
    finally:
        await topk.close()
    again = await opened(index)
    try:
        assert await again.documents() == len(FILES) - 1
        assert gone not in [hit for hit, _ in await again.search(["render", "download"], limit=10)]
    finally:
        await again.close()


async def test_a_reused_content_id_is_not_mistaken_for_its_old_content(index: Index) -> None:
    topk = await opened(index)
    try:
        old = await content_id(index, "h4")  # the highest id: SQLite gives it to the next row
        await remove(index, ["docs/readme.md"])
        await store(index, {"app/queue.py": ("def enqueue(job):\n    return job\n", "h6")})
        assert await content_id(index, "h6") == old
        assert await topk.search(["downloads", "checked"], limit=10) == []
        assert await topk.search(["enqueue"], limit=10) == []  # not told yet
        await topk.apply([ContentTopK.document(old, "h6", body_words("def enqueue(job):\n    return job\n"))])
        assert [hit for hit, _ in await topk.search(["enqueue"], limit=10)] == [old]
        assert await topk.search(["downloads", "checked"], limit=10) == []
        assert await topk.documents() == len(FILES)  # upserted: the old document went
    finally:
        await topk.close()


async def test_documents_sqlite_never_committed_are_left_out_then_removed(index: Index) -> None:
    topk = await opened(index)
    try:
        await topk.apply([ContentTopK.document(999, "never-committed", "checksum checksum checksum")])
        text, digest = FILES["app/checks.py"]
        await topk.apply(
            [ContentTopK.document(await content_id(index, digest), digest, body_words(text))]
        )  # twice: one document
        found = await topk.search(["checksum", "download"], limit=3)
        assert 999 not in [hit for hit, _ in found] and len(found) == 3  # asked again for enough
        assert await topk.documents() == len(FILES) + 1
        assert await topk.reconcile() == Reconciled(removed=1, added=0)
        assert await topk.documents() == len(FILES)
    finally:
        await topk.close()


async def test_a_damaged_or_foreign_store_is_made_again(index: Index) -> None:
    directory = directory_for(index.path)
    await (await opened(index)).close()
    (directory / "meta.json").write_text("{ not json")
    topk = await opened(index)
    try:
        assert await topk.documents() == len(FILES)
    finally:
        await topk.close()
    (directory / MARKER).write_text("filescout-topk 0")
    topk = await opened(index)
    try:
        assert await topk.documents() == len(FILES)
        assert (directory / MARKER).read_text() != "filescout-topk 0"
    finally:
        await topk.close()


KILLED_WRITER = """
import os, signal, sys, tantivy
index = tantivy.Index.open(sys.argv[1])
index.register_tokenizer("filescout_words", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
writer = index.writer(heap_size=32_000_000, num_threads=1)
writer.delete_documents_by_query(tantivy.Query.all_query())
document = tantivy.Document()
document.add_unsigned("id", 12345)
document.add_unsigned("stamp", 1)
document.add_text("body", "half written")
writer.add_document(document)
os.kill(os.getpid(), signal.SIGKILL)
"""


async def test_a_writer_killed_before_its_commit_loses_nothing(index: Index) -> None:
    directory = directory_for(index.path)
    await (await opened(index)).close()
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", KILLED_WRITER, str(directory)], capture_output=True, timeout=60
    )
    assert done.returncode == -9, done.stderr
    topk = await opened(index)  # the dead writer's lock went with it
    try:
        assert await topk.documents() == len(FILES)
        assert await topk.reconcile() == Reconciled(removed=0, added=0)
        assert await topk.search(["half", "written"], limit=5) == []
    finally:
        await topk.close()


async def test_a_reading_process_searches_only_a_built_store(index: Index) -> None:
    reader = await Index.open_readonly(index.path)
    try:
        with pytest.raises(TopKUnavailable):
            await ContentTopK.open(directory_for(index.path), reader.db)
        writer = await opened(index)
        try:
            seen = await ContentTopK.open(directory_for(index.path), reader.db)
            try:
                assert seen.complete
                assert [hit for hit, _ in await seen.search(["fetch"], limit=1)] == [
                    await content_id(index, "h2")
                ]
                await store(index, {"app/upload.py": ("def upload(archive):\n    return archive\n", "h5")})
                await writer.apply(
                    [
                        ContentTopK.document(
                            await content_id(index, "h5"), "h5", "upload archive return archive"
                        )
                    ]
                )
                for _ in range(100):  # another process's commit shows after tantivy notices it
                    if await seen.search(["upload"], limit=1):
                        break
                    await asyncio.sleep(0.05)
                assert [hit for hit, _ in await seen.search(["upload"], limit=1)] == [
                    await content_id(index, "h5")
                ]
            finally:
                await seen.close()
            (directory_for(index.path) / BUILT).unlink()  # as while the writer builds it
            building = await ContentTopK.open(directory_for(index.path), reader.db)
            try:
                assert not building.complete
                await writer.reconcile()
                assert building.complete
            finally:
                await building.close()
        finally:
            await writer.close()
    finally:
        await reader.close()
