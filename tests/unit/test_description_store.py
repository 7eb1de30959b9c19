"""The description search on its top-k store (index/topk.py `DescriptionTopK`, wired in
index/search.py): made from `files_fts`, it ranks as FTS5 ranks with its column weights; it takes
every description a scan or an annotation rewrites once the transaction has committed, and until
it has, FTS5 answers; a file gone, or described otherwise since, is never an answer; what SQLite
committed and the store missed is found after reopening; and a question FTS5 cannot afford asks
it with every term."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from filescout.annotate.structural import ANNOTATOR_ID
from filescout.core.records import Annotation
from filescout.index import Index, topk
from filescout.index.described import DESCRIPTION_WEIGHTS
from filescout.index.topk import BUILT, DescriptionTopK, directory_for
from filescout.relevance import evidence
from filescout.relevance.filters import PathFilter
from filescout.relevance.prefilter import prefilter
from filescout.relevance.query import analyse
from killed import run_until_killed
from small_index import digest_of, scanned

pytest.importorskip("tantivy")

FILES = {
    "app/checks.py": "def verify_checksum(archive):\n    return checksum(archive)\n",
    "app/download.py": "def download(url):\n    return fetch(url)\n",
    "app/render.py": "def render_template(name):\n    return engine(name)\n",
    "app/routing.py": "def url_for(endpoint):\n    return endpoint\n",
    "for/readme.url": "# For\n\nA url.\n",
    "app/greek.py": "alpha = 1\nomega = 2\n",
}
SUMMARIES = {
    "app/checks.py": (
        "Verifies the checksum of a downloaded archive.",
        ["checksum", "archive"],
        ["verify_checksum"],
    ),
    "app/download.py": ("Downloads an archive from a url.", ["download", "network"], ["download"]),
    "app/render.py": ("Renders a template by name.", ["template"], ["render_template"]),
    "app/routing.py": ("Builds the url for an endpoint.", ["routing"], ["url_for"]),
    "for/readme.url": ("Notes for readers about a url.", ["docs"], []),
    "app/greek.py": ("Two letters.", ["letters"], ["alpha", "omega"]),
}


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topk, "START_DELAY", 0.0)
    monkeypatch.setattr(topk, "QUIET", 0.2)


async def store(index: Index, files: dict[str, str]) -> None:
    """Files, committed as a scan commits them, then described as an annotator describes them."""
    await scanned(index, files)
    await describe(index, {path: SUMMARIES[path] for path in files if path in SUMMARIES}, files)


async def describe(
    index: Index, described: dict[str, tuple[str, list[str], list[str]]], files: dict[str, str]
) -> None:
    await index.annotations.save(
        ANNOTATOR_ID,
        [
            (digest_of(files[path]), Annotation(summary, tags, symbols))
            for path, (summary, tags, symbols) in described.items()
        ],
    )


async def kept(path: Path) -> Index:
    index = await Index.open(path)
    index.keep_description_store()
    assert await index.descriptions.store_settled()
    return index


async def fts5(index: Index, terms: list[str]) -> list[str]:
    match = " OR ".join(f'"{term}"' for term in terms)
    return [hit.path for hit in await index.descriptions.search(match, limit=20, weights=DESCRIPTION_WEIGHTS)]


async def from_store(index: Index, terms: list[str]) -> list[str]:
    assert index.descriptions.exact
    found = await index.descriptions.search_terms(terms, limit=20, weights=DESCRIPTION_WEIGHTS, fallback=None)
    return [hit.path for hit in found]


@pytest_asyncio.fixture
async def index(tmp_path: Path) -> AsyncIterator[Index]:
    opened = await Index.open(tmp_path / "index.sqlite3")
    await store(opened, FILES)
    opened.keep_description_store()
    assert await opened.descriptions.store_settled()
    yield opened
    await opened.close()


async def test_the_store_ranks_the_files_fts5_ranks_with_its_column_weights(index: Index) -> None:
    assert (directory_for(index.path, DescriptionTopK) / BUILT).exists()
    for terms in (["checksum"], ["archive"], ["download", "archive"], ["template"], ["nothing"]):
        assert await from_store(index, terms) == await fts5(index, terms), terms
    # A word of the path outweighs the same word in a summary: `download` in app/download.py's
    # path, symbols, tags and summary; in app/checks.py's summary only (stemmed: `downloaded`).
    assert (await from_store(index, ["download"]))[0] == "app/download.py"
    scores = {
        hit.path: hit.rank
        for hit in await index.descriptions.search_terms(
            ["checksum"], limit=5, weights=DESCRIPTION_WEIGHTS, fallback=None
        )
    }
    fts5_scores = {
        hit.path: hit.rank
        for hit in await index.descriptions.search('"checksum"', limit=5, weights=DESCRIPTION_WEIGHTS)
    }
    assert scores.keys() == fts5_scores.keys()
    for path, score in scores.items():  # BM25 on the same scale: the fused weights were set on FTS5's
        assert score == pytest.approx(fts5_scores[path], rel=0.35), path


async def test_a_term_the_words_split_is_a_phrase_within_one_column(index: Index) -> None:
    """`url_for` is the phrase `url for`: in app/routing.py's symbols, not in for/readme.url,
    which holds both words. app/greek.py's symbols, `alpha omega`, are written three times over
    in its document, and no phrase spans two copies: `omega alpha` is in no file."""
    assert await from_store(index, ["url_for"]) == await fts5(index, ["url_for"]) == ["app/routing.py"]
    assert await from_store(index, ["alpha_omega"]) == ["app/greek.py"]
    assert await from_store(index, ["omega_alpha"]) == await fts5(index, ["omega_alpha"]) == []


async def test_an_annotation_is_searched_once_the_store_has_it_and_fts5_answers_meanwhile(
    index: Index,
) -> None:
    assert await from_store(index, ["telemetry"]) == []
    await describe(index, {"app/render.py": ("Sends telemetry about rendering.", ["telemetry"], [])}, FILES)
    assert not index.descriptions.exact  # waiting to go in: FTS5 answers, and finds it
    found = await index.descriptions.search_terms(
        ["telemetry"], limit=5, weights=DESCRIPTION_WEIGHTS, fallback='"telemetry"'
    )
    assert [hit.path for hit in found] == ["app/render.py"]
    assert await index.descriptions.store_settled()
    assert await from_store(index, ["telemetry"]) == ["app/render.py"]
    assert "app/render.py" not in await from_store(index, ["template"])  # its old description went


async def test_a_flood_of_descriptions_puts_the_store_behind_until_the_index_is_quiet(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More rows to read back than PENDING_ROWS (a model describing many files at once): they
    are dropped, FTS5 answers, reading processes are told (BUILT goes), and a reconciliation
    once the index is quiet brings the store up to date."""
    monkeypatch.setattr(topk, "QUIET", 0.3)
    monkeypatch.setattr(topk, "PENDING_ROWS", 2)
    await describe(
        index,
        {
            path: (f"Part of the deluge, {path}.", ["deluge"], [])
            for path in ("app/checks.py", "app/download.py", "app/render.py")
        },
        FILES,
    )
    assert not index.descriptions.exact
    await asyncio.sleep(0.1)
    assert not (directory_for(index.path, DescriptionTopK) / BUILT).exists()
    assert await index.descriptions.store_settled()
    assert (directory_for(index.path, DescriptionTopK) / BUILT).exists()
    assert sorted(await from_store(index, ["deluge"])) == [
        "app/checks.py",
        "app/download.py",
        "app/render.py",
    ]
    assert await from_store(index, ["deluge", "checksum"]) == await fts5(index, ["deluge", "checksum"])


async def test_a_search_with_other_weights_is_fts5s(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_store(*args: object, **kwargs: object) -> None:
        raise AssertionError("the description search asked the store")

    monkeypatch.setattr(DescriptionTopK, "ranked", no_store)
    found = await index.descriptions.search_terms(
        ["checksum"], limit=5, weights=(1.0, 1.0, 1.0, 1.0), fallback='"checksum"'
    )
    assert [hit.path for hit in found] == ["app/checks.py"]


async def test_a_file_removed_or_described_otherwise_by_another_process_is_never_an_answer(
    index: Index,
) -> None:
    other = await Index.open(index.path)  # writes SQLite; the store is never told
    try:
        await other.files.apply_changes([], ["app/download.py"], current=ANNOTATOR_ID)
        await describe(other, {"app/checks.py": ("Hashes files.", ["hashing"], [])}, FILES)
    finally:
        await other.close()
    assert index.descriptions.exact
    assert "app/download.py" not in await from_store(index, ["download", "network"])
    assert "app/checks.py" not in await from_store(index, ["checksum", "archive"])
    await index.close()

    reopened = await kept(index.path)  # reconciled on opening: both as SQLite has them
    try:
        assert await from_store(reopened, ["hashing"]) == ["app/checks.py"]
        assert await from_store(reopened, ["download", "network"]) == await fts5(
            reopened, ["download", "network"]
        )
        assert "app/download.py" not in await from_store(reopened, ["download"])
    finally:
        await reopened.close()


async def test_a_question_fts5_cannot_afford_asks_the_store_with_every_term(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[str]] = []
    original = DescriptionTopK.ranked

    async def counted(self: DescriptionTopK, terms: list[str], **kwargs: object) -> object:
        asked.append(list(terms))
        return await original(self, terms, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(DescriptionTopK, "ranked", counted)
    question = analyse("where is the checksum of a downloaded archive verified")

    async def first() -> str:
        found = await prefilter(index, question, limit=5, scope=PathFilter(), current=ANNOTATOR_ID)
        return found[0].item.path

    assert await first() == "app/checks.py"
    assert asked == []  # a few rows: FTS5 scores them all, exactly
    monkeypatch.setattr(evidence, "FTS5_AFFORDS", 1)
    assert await first() == "app/checks.py"
    assert asked == [question.terms]


KILLED_AFTER_COMMIT = """
import asyncio, os, signal, sys
from pathlib import Path
from filescout.annotate.structural import ANNOTATOR_ID
from filescout.index import topk
from test_description_store import FILES, describe, kept
topk.START_DELAY = 0.0

async def main():
    index = await kept(Path(sys.argv[1]))
    await describe(index, {"app/render.py": ("Sends telemetry about rendering.", ["telemetry"], [])}, FILES)
    await index.files.apply_changes([], ["app/download.py"], current=ANNOTATOR_ID)
    os.kill(os.getpid(), signal.SIGKILL)  # committed to SQLite; the store was never told

asyncio.run(main())
"""


async def test_a_kill_between_the_sqlite_commit_and_the_store_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    index = await Index.open(path)
    await store(index, FILES)
    await index.close()
    index = await kept(path)
    assert (await from_store(index, ["download"]))[0] == "app/download.py"
    await index.close()

    await run_until_killed(KILLED_AFTER_COMMIT, str(path))

    reader = await Index.open_readonly(path)  # the store as the killed writer left it
    reader.keep_description_store()
    try:
        assert await reader.descriptions.store_settled()
        assert "app/download.py" not in await from_store(reader, ["download"])  # gone from SQLite
        assert "app/render.py" not in await from_store(reader, ["template"])  # described otherwise
        assert await from_store(reader, ["telemetry"]) == []  # the store never had it
    finally:
        await reader.close()

    index = await kept(path)  # reconciled on opening
    try:
        assert await from_store(index, ["telemetry"]) == ["app/render.py"]
        assert await from_store(index, ["download", "archive"]) == await fts5(index, ["download", "archive"])
        assert "app/download.py" not in await from_store(index, ["download"])
    finally:
        await index.close()
