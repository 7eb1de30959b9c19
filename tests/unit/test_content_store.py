"""The content search on the index's top-k store (index/topk.py, wired in index/search.py): it
answers once the store is complete, with every term of a question counted, as FTS5 would rank
them; a common word no longer drops out of a question; what SQLite committed and the store
missed (a kill between the two) is found after reopening, and deleted content never is; and
without tantivy FTS5 answers as before."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from filescout.annotate.structural import ANNOTATOR_ID
from filescout.index import Index, topk
from filescout.index.topk import BUILT, DISABLED, directory_for
from filescout.relevance.evidence import COMMON_FLOOR
from filescout.relevance.filters import PathFilter
from filescout.relevance.prefilter import prefilter
from filescout.relevance.query import analyse, expression
from killed import run_until_killed
from small_index import scanned

pytest.importorskip("tantivy")

FILES = {
    "app/checks.py": "def verify_checksum(archive):\n    # the checksum of a downloaded archive\n    return checksum(archive)\n",
    "app/download.py": "def download(url):\n    return fetch(url)  # an archive, maybe\n",
    "app/render.py": "def render_template(name):\n    return template_engine(name)\n",
    "app/render_copy.py": "def render_template(name):\n    return template_engine(name)\n",
    "docs/readme.md": "# Downloads\n\nEvery download is checked against its checksum.\n",
}


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store opened at once, and built after a quiet index of a fifth of a second."""
    monkeypatch.setattr(topk, "START_DELAY", 0.0)
    monkeypatch.setattr(topk, "QUIET", 0.2)


async def store(index: Index, files: dict[str, str]) -> None:
    """Files and their content words, committed as a scan commits them (copies share a content)."""
    await scanned(index, files)


async def remove(index: Index, paths: list[str]) -> None:
    await index.files.apply_changes([], paths, current=ANNOTATOR_ID)
    await index.annotations.drop_orphans()


async def kept(path: Path) -> Index:
    """The index at `path` with its store, once the store has settled."""
    index = await Index.open(path)
    index.keep_content_store()
    await index.contents.store_settled()
    return index


async def fts5(index: Index, terms: list[str]) -> list[str]:
    match = expression(terms, single_tokens=True)
    return [hit.path for hit in await index.contents.search(match, limit=20)] if match else []


async def from_store(index: Index, terms: list[str]) -> list[str]:
    assert index.contents.exact
    return [hit.path for hit in await index.contents.search_words(terms, limit=20, fallback=None)]


async def ranking(index: Index, question: str) -> list[str]:
    found = await prefilter(index, analyse(question), limit=10, scope=PathFilter(), current=ANNOTATOR_ID)
    return [candidate.item.path for candidate in found]


@pytest_asyncio.fixture
async def index(tmp_path: Path) -> AsyncIterator[Index]:
    opened = await Index.open(tmp_path / "index.sqlite3")
    await store(opened, FILES)
    opened.keep_content_store()
    assert await opened.contents.store_settled()
    yield opened
    await opened.close()


async def test_the_store_answers_once_complete_with_the_files_fts5_would_rank(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (directory_for(index.path) / BUILT).exists()
    for terms in (["checksum", "archive"], ["download"], ["render", "template"], ["nothing"]):
        assert await from_store(index, terms) == await fts5(index, terms), terms

    # Both copies of one content are hits, as they are from FTS5.
    assert set(await from_store(index, ["template"])) == {"app/render.py", "app/render_copy.py"}

    async def no_store(*args: object, **kwargs: object) -> None:
        raise AssertionError("the content search asked the store")

    # No word of this question is too common for FTS5: it ranks with every word itself.
    monkeypatch.setattr(topk.ContentTopK, "ranked", no_store)
    assert (await ranking(index, "where is the checksum of an archive verified"))[0] == "app/checks.py"


async def test_the_store_counts_a_questions_terms_as_fts5_does(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prefilter's choice of terms reads how many contents hold each: from the store while
    it can answer (microseconds, where FTS5 walks a common term's whole list)."""
    terms = ["checksum", "archive", "download", "template", "verify_checksum", "nothing"]
    counted_by_fts5 = await index.contents._count(terms)
    assert counted_by_fts5[1]["template"] == 1  # two files, one content

    async def no_fts5(*args: object) -> None:
        raise AssertionError("FTS5 counted the terms")

    monkeypatch.setattr(type(index.contents), "_count", no_fts5)
    assert index.contents.exact
    assert await index.contents.frequencies(terms) == counted_by_fts5


async def test_a_commit_the_store_has_not_taken_yet_is_answered_by_fts5(index: Index) -> None:
    await store(index, {"app/upload.py": "def upload(archive):\n    return send(archive)\n"})
    assert not index.contents.exact  # waiting to go in: FTS5 answers, and finds it
    found = await index.contents.search_words(["upload"], limit=5, fallback='"upload"')
    assert [hit.path for hit in found] == ["app/upload.py"]
    assert await index.contents.store_settled()
    assert await from_store(index, ["upload"]) == ["app/upload.py"]
    await remove(index, ["app/upload.py"])
    assert index.contents.exact  # a removal waiting does not stop the store from answering
    assert await from_store(index, ["upload"]) == []


async def test_a_common_word_is_no_longer_dropped_from_a_question(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`widget` is in more files than the prefilter lets FTS5 scan for; the question's other
    words are in none. Without the store the content search is left with those (and finds
    nothing); with it, the file that is all about widgets comes first."""
    files = {
        f"pkg/part{number}.py": f"def part{number}():\n    return widget\n"
        for number in range(COMMON_FLOOR + 100)
    }
    files["lib/gadgets.py"] = "widget = widget or widget\nwidgets = [widget, widget, widget]\n"
    index = await Index.open(tmp_path / "index.sqlite3")
    try:
        await store(index, files)
        question = "the widget frobnicator quuxifies"
        assert "lib/gadgets.py" not in await ranking(index, question)  # FTS5, the common word dropped
        index.keep_content_store()
        assert await index.contents.store_settled()
        assert (await ranking(index, question))[0] == "lib/gadgets.py"
        searched = []

        async def counted(self: topk.ContentTopK, terms: list[str], **kwargs: object) -> object:
            searched.append(terms)
            return await original(self, terms, **kwargs)

        original = topk.ContentTopK.ranked
        monkeypatch.setattr(topk.ContentTopK, "ranked", counted)
        await ranking(index, question)
        assert searched == [["widget", "frobnicator", "quuxifies"]]  # every word, from the store
    finally:
        await index.close()


KILLED_AFTER_COMMIT = """
import asyncio, os, signal, sys
from filescout.index import topk
from test_content_store import kept, remove, store
topk.START_DELAY = 0.0

async def main():
    index = await kept(__import__("pathlib").Path(sys.argv[1]))
    await store(index, {"app/upload.py": "def upload(archive):\\n    return send(archive)\\n"})
    await remove(index, ["app/render.py", "app/render_copy.py"])
    os.kill(os.getpid(), signal.SIGKILL)  # committed to SQLite; the store was never told

asyncio.run(main())
"""


async def test_a_kill_between_the_sqlite_commit_and_the_store_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    index = await Index.open(path)
    await store(index, FILES)
    await index.close()
    index = await kept(path)
    gone = await from_store(index, ["render", "template"])
    assert set(gone) == {"app/render.py", "app/render_copy.py"}
    await index.close()

    await run_until_killed(KILLED_AFTER_COMMIT, str(path))

    reader = await Index.open_readonly(path)  # the store as the killed writer left it
    reader.keep_content_store()
    try:
        assert await reader.contents.store_settled()
        assert await from_store(reader, ["render", "template"]) == []  # its content is gone from SQLite
        assert await from_store(reader, ["upload"]) == []  # the store never had it
    finally:
        await reader.close()

    index = await kept(path)  # reconciled on opening
    try:
        assert await from_store(index, ["upload", "archive"]) == await fts5(index, ["upload", "archive"])
        assert "app/upload.py" in await from_store(index, ["upload"])
        assert await from_store(index, ["render", "template"]) == []
    finally:
        await index.close()


async def test_content_deleted_and_its_id_reused_by_another_process_is_never_an_answer(index: Index) -> None:
    other = await Index.open(index.path)  # writes SQLite; the store is never told
    try:
        await remove(other, ["docs/readme.md"])
        await store(other, {"app/queue.py": "def enqueue(job):\n    return job\n"})
    finally:
        await other.close()
    assert index.contents.exact
    assert "docs/readme.md" not in await from_store(index, ["downloads", "checked", "checksum"])
    assert await from_store(index, ["enqueue"]) == []  # not in the store: until it is told, or reopened


async def test_an_empty_index_builds_its_store_once_the_index_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold index: no store while there is nothing to keep, and none built beside the pass
    that fills the index (FTS5 answers), but once no commit has come for QUIET seconds."""
    monkeypatch.setattr(topk, "QUIET", 0.3)
    index = await Index.open(tmp_path / "index.sqlite3")
    try:
        index.keep_content_store()
        assert not await index.contents.store_settled()
        assert not directory_for(index.path).exists()
        files = list(FILES.items())
        for number in range(3):  # a pass's batches, closer together than QUIET
            await store(index, dict(files[number::3]))
            await asyncio.sleep(0.1)
            assert not directory_for(index.path).exists() and not index.contents.exact
        assert await index.contents.store_settled()
        assert await from_store(index, ["download"]) == await fts5(index, ["download"])
    finally:
        await index.close()


async def test_a_flood_of_changes_puts_the_store_behind_until_the_index_is_quiet(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More words waiting than PENDING_BYTES (a checkout of many files): they are dropped,
    FTS5 answers, reading processes are told (BUILT goes), and a reconciliation once the index
    is quiet brings the store up to date."""
    monkeypatch.setattr(topk, "QUIET", 0.3)
    monkeypatch.setattr(topk, "PENDING_BYTES", 100)
    many = {
        f"lib/flood{number}.py": f"def flood{number}():\n    return deluge_{number}\n" for number in range(20)
    }
    await store(index, many)
    assert not index.contents.exact
    await asyncio.sleep(0.1)
    assert not (directory_for(index.path) / BUILT).exists()
    assert await index.contents.store_settled()
    assert (directory_for(index.path) / BUILT).exists()
    assert await from_store(index, ["deluge", "flood7"]) == await fts5(index, ["deluge", "flood7"])
    assert "lib/flood7.py" in await from_store(index, ["flood7"])


async def test_a_directory_not_a_store_is_left_as_it_is(tmp_path: Path) -> None:
    index = await Index.open(tmp_path / "index.sqlite3")
    (directory_for(index.path)).mkdir()
    (directory_for(index.path) / "notes.txt").write_text("someone's")
    try:
        await store(index, FILES)
        index.keep_content_store()
        assert not await index.contents.store_settled()
        assert (directory_for(index.path) / "notes.txt").read_text() == "someone's"
        assert [
            hit.path
            for hit in await index.contents.search_words(["download"], limit=5, fallback='"download"')
        ]
    finally:
        await index.close()


@pytest.mark.parametrize("how", ["not installed", "turned off"])
async def test_without_tantivy_fts5_answers_with_the_common_word_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "not installed":
        monkeypatch.setattr(topk, "available", lambda: False)
    else:
        monkeypatch.setenv(DISABLED, "1")
    index = await Index.open(tmp_path / "index.sqlite3")
    try:
        await store(index, FILES)
        index.keep_content_store()
        assert not await index.contents.store_settled()
        assert not index.contents.exact and not directory_for(index.path).exists()
        assert (await ranking(index, "where is the checksum of an archive verified"))[0] == "app/checks.py"
    finally:
        await index.close()


async def test_a_one_shot_process_never_keeps_the_store(tmp_path: Path) -> None:
    """A command that answers one question and exits answers from FTS5 whether or not the store
    would have opened in time; a server keeps the store."""
    from filescout.engine import Workspace
    from filescout.engine.hooks import Hooks

    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text(FILES["app/checks.py"])
    env = {**os.environ, "FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}
    for persistent in (False, True):
        engine = await Workspace.open(root, env=env, hooks=Hooks(persistent=persistent))
        try:
            assert (engine._roles.index.contents._keeper is not None) is persistent
        finally:
            await engine.close()
