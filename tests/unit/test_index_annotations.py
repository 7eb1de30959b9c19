"""Annotations, the content index, frecency and usage in-process, on a real SQLite file."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest_asyncio

from filescout.core.records import Annotation, Definition, FileRecord
from filescout.index import Index
from filescout.index.access import HALF_LIFE_SECONDS, current_score, ranked

STRUCTURAL = "structural/test"


def record(path: str, digest: str, *, kind: str = "source", size: int = 10) -> FileRecord:
    return FileRecord(
        path=path, size=size, mtime_ns=1, hash=digest, language="python", kind=kind, skip_reason=None
    )


@pytest_asyncio.fixture
async def index(tmp_path: Path):
    opened = await Index.open(tmp_path / "index.sqlite3")
    yield opened
    await opened.close()


async def test_one_annotation_serves_every_copy_and_pending_asks_once(index: Index) -> None:
    await index.files.apply_changes(
        [record("a.py", "h1"), record("copy/a.py", "h1"), record("b.py", "h2")], [], current=STRUCTURAL
    )
    pending = await index.annotations.pending(STRUCTURAL, ["b.py", "a.py", "copy/a.py"])
    assert [item.hash for item in pending] == ["h2", "h1"]  # each content once, in the order asked
    await index.annotations.save(STRUCTURAL, [("h1", Annotation("Shared.", ["t"], ["f"]))])
    entries = await index.files.entries(["a.py", "copy/a.py"], current=STRUCTURAL)
    assert {entry.summary for entry in entries.values()} == {"Shared."}
    assert [item.path for item in await index.annotations.pending(STRUCTURAL, ["a.py", "b.py"])] == ["b.py"]


async def test_a_fallback_annotator_only_fills_files_that_show_nothing(index: Index) -> None:
    await index.files.apply_changes([record("a.py", "h1"), record("b.py", "h2")], [], current="model:m")
    await index.annotations.save("model:m", [("h1", Annotation("From the model.", [], []))])
    await index.annotations.save(
        STRUCTURAL,
        [("h1", Annotation("Outline.", [], [])), ("h2", Annotation("Outline two.", [], []))],
        replace=False,
    )
    entries = await index.files.entries(["a.py", "b.py"], current="model:m")
    assert entries["a.py"].summary == "From the model." and entries["a.py"].status == "annotated"
    assert entries["b.py"].summary == "Outline two." and entries["b.py"].status == "stale"
    assert (await index.annotations.of(STRUCTURAL, ["h1"]))["h1"].summary == "Outline."


async def test_backlog_order_frecent_then_source_then_small(index: Index) -> None:
    await index.files.apply_changes(
        [
            record("docs/guide.md", "d", kind="docs", size=1),
            record("big.py", "b", size=500),
            record("small.py", "s", size=5),
            record("tests/test_x.py", "t", kind="test", size=1),
            record("used.md", "u", kind="docs", size=1000),
        ],
        [],
        current=STRUCTURAL,
    )
    await index.access.record(["used.md"])
    assert await index.annotations.backlog(STRUCTURAL, machine=True) == [
        "used.md",
        "small.py",
        "big.py",
        "tests/test_x.py",
        "docs/guide.md",
    ]
    await index.annotations.save(STRUCTURAL, [("s", Annotation("S.", [], []))])
    assert "small.py" not in await index.annotations.backlog(STRUCTURAL, machine=True)
    # A model's backlog is every file that does not show its annotation.
    assert "small.py" in await index.annotations.backlog("model:m", machine=False)


async def test_content_words_are_indexed_once_and_forgotten_with_the_last_copy(index: Index) -> None:
    await index.files.apply_changes([record("a.py", "h1"), record("b.py", "h1")], [], current=STRUCTURAL)
    await index.annotations.save(STRUCTURAL, [("h1", Annotation("A.", [], [], body="tokenizer lexer"))])
    total, frequency = await index.contents.frequencies(["tokenizer", "parser"])
    assert (total, frequency) == (1, {"tokenizer": 1})
    assert sorted(hit.path for hit in await index.contents.search('"lexer"', limit=10)) == ["a.py", "b.py"]
    await index.files.apply_changes([], ["a.py"], current=STRUCTURAL)
    assert await index.annotations.drop_orphans() == 0  # b.py still has it
    await index.files.apply_changes([], ["b.py"], current=STRUCTURAL)
    assert await index.annotations.drop_orphans() == 1
    assert await index.contents.search('"lexer"', limit=10) == []


async def test_term_counts_kept_between_commits_follow_every_commit(index: Index) -> None:
    """The writing process keeps the counts it read until its next commit: a question asked
    again sees what every commit since changed, a stored content and a forgotten one alike."""
    await index.files.apply_changes([record("a.py", "h1")], [], current=STRUCTURAL)
    await index.annotations.save(STRUCTURAL, [("h1", Annotation("A.", [], [], body="lexer token"))])
    assert await index.contents.frequencies(["lexer", "parser"]) == (1, {"lexer": 1})
    assert await index.contents.frequencies(["parser", "lexer", "token"]) == (1, {"lexer": 1, "token": 1})
    await index.files.apply_changes([record("b.py", "h2")], [], current=STRUCTURAL)
    await index.annotations.save(STRUCTURAL, [("h2", Annotation("B.", [], [], body="lexer parser"))])
    assert await index.contents.frequencies(["lexer", "parser"]) == (2, {"lexer": 2, "parser": 1})
    await index.files.apply_changes([], ["a.py"], current=STRUCTURAL)
    assert await index.annotations.drop_orphans() == 1
    assert await index.contents.frequencies(["parser", "lexer", "token"]) == (1, {"lexer": 1, "parser": 1})


def leaves_written(database: Path, table: str) -> int:
    """How many leaf pages an FTS5 table has written since it was made: the write counter of its
    structure record (4-byte cookie, then varints: levels, segments, leaves written)."""
    with sqlite3.connect(database) as db:
        (block,) = db.execute(f"SELECT block FROM {table}_data WHERE id = 10").fetchone()
    values, value, at = [], 0, 4
    while len(values) < 3:
        byte = block[at]
        at += 1
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value = 0
    return int(values[2])


async def test_a_batch_of_annotations_reaches_the_full_text_indexes_in_one_piece(
    index: Index, tmp_path: Path
) -> None:
    # FTS5 writes what it holds as a new segment whenever a row id comes out of order or a
    # statement opens a savepoint: once per file, that made a cold index's writer several times
    # slower (segments written, then merged again and again).
    count = 300
    digests = [
        f"{(number * 7919) % 1000:03d}-{number}" for number in range(count)
    ]  # hash order is not id order
    await index.files.apply_changes(
        [record(f"m{number}.py", digest) for number, digest in enumerate(digests)], [], current=STRUCTURAL
    )
    definitions = [
        Definition(f"handler_{n}", "function", None, f"def handler_{n}(request)", "", n) for n in range(5)
    ]
    await index.annotations.save(
        STRUCTURAL,
        [
            (digest, Annotation("A module.", [], [], body=f"request route{number}", definitions=definitions))
            for number, digest in enumerate(digests)
        ],
    )
    assert leaves_written(tmp_path / "index.sqlite3", "body_fts") < count // 10
    assert leaves_written(tmp_path / "index.sqlite3", "definitions_fts") < count // 10
    hits = await index.definitions.search('"handler"', limit=2000, weights=(1.0, 1.0, 1.0, 1.0))
    assert len(hits) == count * len(definitions)  # and every row is there


async def test_description_search_weighs_paths_and_symbols(index: Index) -> None:
    await index.files.apply_changes(
        [record("router/match.py", "r"), record("notes.py", "n")], [], current=STRUCTURAL
    )
    await index.annotations.save(
        STRUCTURAL,
        [
            ("r", Annotation("Matching.", [], ["parseHTTPHeader"])),
            ("n", Annotation("Mentions router once.", [], [])),
        ],
    )
    hits = await index.descriptions.search('"router"', limit=10, weights=(6.0, 3.0, 1.0, 2.0))
    assert [hit.path for hit in hits][0] == "router/match.py"
    assert [
        hit.path
        for hit in await index.descriptions.search('"header"', limit=10, weights=(6.0, 3.0, 1.0, 2.0))
    ] == ["router/match.py"]


def test_frecency_halves_every_half_life() -> None:
    now = 1_000_000.0
    stored = ranked(4.0, now)
    assert math.isclose(current_score(stored, now), 4.0)
    assert math.isclose(current_score(stored, now + HALF_LIFE_SECONDS), 2.0)


async def test_accesses_add_up_and_usage_sums_per_day(index: Index) -> None:
    await index.access.record(["a.py"], weight=1.0, now=1000.0)
    await index.access.record(["a.py"], weight=1.0, now=1000.0)
    ((rank,),) = await index.db.reader.execute_fetchall("SELECT rank FROM access WHERE path = 'a.py'")
    assert math.isclose(current_score(rank, 1000.0), 2.0)
    await index.usage.record("model:a", "2026-11-01", calls=1, input_tokens=10, output_tokens=5)
    await index.usage.record("model:b", "2026-11-01", calls=2, failures=1, input_tokens=1)
    await index.usage.record("model:a", "2026-10-31", calls=9)
    assert await index.usage.since("2026-11-01") == [("2026-11-01", 3, 1, 11, 5)]
    await index.meta.set("k", "v1")
    await index.meta.set("k", "v2")
    assert await index.meta.get("k") == "v2" and await index.meta.get("missing") is None
