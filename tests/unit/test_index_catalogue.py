"""The file catalogue in-process, on a real SQLite file: what scans store, what listings read."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio

from filescout.core.records import Annotation, FileRecord
from filescout.index import FileFilter, Index
from filescout.index.catalogue import COUNTS_SQL

CURRENT = "structural/test"


def record(
    path: str,
    *,
    content: str | None = None,
    size: int = 10,
    mtime_ns: int = 1,
    kind: str = "source",
    skip: str | None = None,
) -> FileRecord:
    return FileRecord(
        path=path,
        size=size,
        mtime_ns=mtime_ns,
        hash=f"h-{content or path}",
        language="python",
        kind=kind,
        skip_reason=skip,
    )  # type: ignore[arg-type]


@pytest_asyncio.fixture
async def index(tmp_path: Path):
    opened = await Index.open(tmp_path / "index.sqlite3")
    yield opened
    await opened.close()


async def all_paths(index: Index, where: FileFilter = FileFilter(), **kwargs) -> list[str]:
    found = []
    async for page in index.files.listing(where, current=CURRENT, **kwargs):
        found += [entry.path for entry, _ in page]
    return found


async def test_changes_are_stored_and_status_is_derived_from_the_current_annotator(index: Index) -> None:
    await index.files.apply_changes(
        [record("a.py"), record("b.py"), record("key.pem", skip="sensitive")], [], current=CURRENT
    )
    assert await index.files.count() == 3
    by_status, by_kind = await index.files.counts(current=CURRENT)
    assert by_status == {"pending": 2, "skipped": 1}
    assert by_kind == {"source": 3}

    await index.annotations.save(CURRENT, [("h-a.py", Annotation("A module.", ["x"], ["f"]))])
    entries = await index.files.entries(["a.py", "b.py", "key.pem"], current=CURRENT)
    assert entries["a.py"].status == "annotated" and entries["a.py"].summary == "A module."
    assert entries["b.py"].status == "pending"
    assert entries["key.pem"].status == "skipped"
    assert entries["key.pem"].shown_summary.startswith("Sensitive file")
    # The same rows, asked about under another current annotator, are stale.
    other = await index.files.entries(["a.py"], current="model:x/y")
    assert other["a.py"].status == "stale"


async def test_counts_agree_with_each_entrys_status_and_read_no_table_row(index: Index) -> None:
    """A status counts while annotation commits every moment: from an index, in its order."""
    await index.files.apply_changes(
        [
            record("a.py"),
            record("b.py"),
            record("c_test.py", kind="test"),
            record("README.md", kind="docs"),
            record("key.pem", skip="sensitive"),
            record("blob.bin", kind="binary", skip="binary"),
        ],
        [],
        current=CURRENT,
    )
    await index.annotations.save(
        CURRENT, [("h-a.py", Annotation("A.", [], [])), ("h-c_test.py", Annotation("C.", [], []))]
    )
    await index.annotations.save("model:x/y", [("h-README.md", Annotation("Read me.", [], []))])
    paths = ["a.py", "b.py", "c_test.py", "README.md", "key.pem", "blob.bin"]
    for current in (CURRENT, "model:x/y"):
        entries = (await index.files.entries(paths, current=current)).values()
        expected_status: dict[str, int] = {}
        expected_kind: dict[str, int] = {}
        for entry in entries:
            expected_status[entry.status] = expected_status.get(entry.status, 0) + 1
            expected_kind[entry.kind] = expected_kind.get(entry.kind, 0) + 1
        assert await index.files.counts(current=current) == (expected_status, expected_kind)
    plan = await index.db.reader.execute_fetchall(f"EXPLAIN QUERY PLAN {COUNTS_SQL}")
    assert any("COVERING INDEX files_by_annotator" in str(row[-1]) for row in plan), plan
    assert not any("TEMP B-TREE" in str(row[-1]) for row in plan), plan


async def test_a_rename_is_counted_and_hands_its_history_over(index: Index) -> None:
    await index.files.apply_changes([record("old.py", content="same")], [], current=CURRENT)
    await index.access.record(["old.py"], weight=2.0)
    renamed = await index.files.apply_changes([record("new.py", content="same")], ["old.py"], current=CURRENT)
    assert renamed == 1
    assert await index.files.existing(["old.py", "new.py"]) == ["new.py"]
    rows = await index.db.reader.execute_fetchall("SELECT path, count FROM access")
    assert [tuple(row) for row in rows] == [("new.py", 1)]


async def test_a_changed_file_shows_an_existing_annotation_of_its_new_content(index: Index) -> None:
    await index.annotations.save(CURRENT, [("h-v2", Annotation("Version two.", [], []))])
    await index.files.apply_changes([record("a.py", content="v2")], [], current=CURRENT)
    entry = (await index.files.entries(["a.py"], current=CURRENT))["a.py"]
    assert (entry.summary, entry.status) == ("Version two.", "annotated")


async def test_listing_pages_by_keyset_and_filters_in_sql(index: Index) -> None:
    changes = [record(f"src/m{n:02d}.py", mtime_ns=n) for n in range(25)]
    changes += [record("tests/test_a.py", kind="test"), record("srcx/other.py")]
    await index.files.apply_changes(changes, [], current=CURRENT)
    everything = await all_paths(index, first_page=7, page_size=5)
    assert everything == sorted(everything) and len(everything) == 27
    assert await all_paths(index, FileFilter(prefixes=("src",))) == [f"src/m{n:02d}.py" for n in range(25)]
    assert await all_paths(index, FileFilter(kinds=("test",))) == ["tests/test_a.py"]
    recent = await all_paths(index, order="recent", first_page=4, page_size=3)
    assert recent[:3] == ["src/m24.py", "src/m23.py", "src/m22.py"]
    assert len(recent) == 27 and len(set(recent)) == 27


async def test_tags_filter_any_or_all(index: Index) -> None:
    await index.files.apply_changes([record("a.py"), record("b.py")], [], current=CURRENT)
    await index.annotations.save(
        CURRENT, [("h-a.py", Annotation("A", ["http", "cli"], [])), ("h-b.py", Annotation("B", ["http"], []))]
    )
    assert await all_paths(index, FileFilter(tags=("http", "cli"))) == ["a.py", "b.py"]
    assert await all_paths(index, FileFilter(tags=("http", "cli"), all_tags=True)) == ["a.py"]
    assert [entry.path for entry in await index.files.with_tags(["cli"], limit=5, current=CURRENT)] == [
        "a.py"
    ]
    assert await index.files.tag_vocabulary() == [("http", 2), ("cli", 1)]


async def test_directory_listing_stays_in_the_directory(index: Index) -> None:
    await index.files.apply_changes(
        [record("top.py"), record("pkg/a.py"), record("pkg/sub/b.py"), record("pkg0/c.py")],
        [],
        current=CURRENT,
    )
    assert await index.files.in_directory("pkg", limit=10) == ["pkg/a.py"]
    assert await index.files.in_directory("", limit=10) == ["top.py"]


async def test_a_reader_cannot_write(tmp_path: Path) -> None:
    writer = await Index.open(tmp_path / "index.sqlite3")
    reader = await Index.open_readonly(tmp_path / "index.sqlite3")
    try:
        await writer.files.apply_changes([record("a.py")], [], current=CURRENT)
        assert await reader.files.existing(["a.py"]) == ["a.py"]
        assert not reader.writable
        with pytest.raises(RuntimeError):
            await reader.files.apply_changes([record("b.py")], [], current=CURRENT)
    finally:
        await reader.close()
        await writer.close()


async def test_counts_are_kept_until_the_next_commit_and_never_by_a_second_process(
    index: Index, tmp_path: Path
) -> None:
    await index.files.apply_changes([record("a.py"), record("b.py")], [], current=CURRENT)
    assert (await index.files.counts(current=CURRENT))[0] == {"pending": 2}
    returned, _ = await index.files.counts(current=CURRENT)
    returned["pending"] = 99  # a caller changing its copy changes nothing kept
    assert (await index.files.counts(current=CURRENT))[0] == {"pending": 2}

    await index.annotations.save(CURRENT, [("h-a.py", Annotation("A module.", ["x"], ["f"]))])
    assert (await index.files.counts(current=CURRENT))[0] == {"annotated": 1, "pending": 1}
    assert (await index.files.counts(current="model:x/y"))[0] == {"stale": 1, "pending": 1}

    second = await Index.open_readonly(tmp_path / "index.sqlite3")
    try:
        assert (await second.files.counts(current=CURRENT))[0] == {"annotated": 1, "pending": 1}
        await index.files.apply_changes([record("c.py")], [], current=CURRENT)  # the other process writes
        assert (await second.files.counts(current=CURRENT))[0] == {"annotated": 1, "pending": 2}
    finally:
        await second.close()


async def test_meta_values_are_kept_until_the_next_commit_and_never_by_a_second_process(
    index: Index, tmp_path: Path
) -> None:
    assert await index.meta.get("last_scan") is None
    await index.meta.set("last_scan", "one")
    assert await index.meta.get("last_scan") == "one"
    assert await index.meta.get("last_scan") == "one"
    second = await Index.open_readonly(tmp_path / "index.sqlite3")
    try:
        assert await second.meta.get("last_scan") == "one"
        await index.meta.set("last_scan", "two")
        assert await index.meta.get("last_scan") == "two"
        assert await second.meta.get("last_scan") == "two"
    finally:
        await second.close()
