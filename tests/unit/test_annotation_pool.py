"""The worker processes that read and annotate while indexing: started when there is work,
stopped when idle or closed, replaced when one dies, and giving the same index as one worker;
the content index filled by the scan itself; a touched file ahead of the backlog."""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import signal
import time
import weakref
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from filescout.annotate.jobs import AnnotationJob, annotate_batch_packed, unpack_batch
from filescout.core.records import Annotation, KnownFile, PendingFile
from filescout.engine import Workspace
from filescout.engine.annotation_pool import AnnotationPool, worker_count
from filescout.engine.settings import load_settings
from filescout.engine.structural_worker import ANNOTATION_BATCH, GATHER, Saves
from filescout.index import Index
from filescout.scan.ignore import IgnoreRules
from filescout.scan.tree import enumerate_files, read_outcomes, scan
from filescout_protocol.types import GetFilesParams
from harness import procfs
from harness.support import make_large_workspace, make_workspace

TIMEOUT = 120  # against hangs only


def alive(pid: int) -> bool:
    """Whether `pid` is a process that has not exited (a zombie has exited)."""
    state = procfs.status_fields(pid).get("State", "Z")  # none: the process is gone
    return not state.startswith("Z")


def children() -> list[int]:
    """This process's children, but multiprocessing's resource tracker (one per process, kept
    for its lifetime)."""
    me = os.getpid()
    return [
        pid
        for pid in procfs.descendants(me)[1:]
        if procfs.parent_of(pid) == me and b"resource_tracker" not in procfs.command_line(pid) and alive(pid)
    ]


async def eventually(condition, *, timeout: float = TIMEOUT) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def open_engine(root: Path, tmp_path: Path, workers: int | None = 2) -> Workspace:
    settings = {"index": {"workers": workers}} if workers is not None else {}
    return await Workspace.open(root, settings, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")})


async def indexed(engine: Workspace) -> None:
    engine.start_indexing("index")
    await asyncio.wait_for(engine.wait_idle(), TIMEOUT)


async def entries(engine: Workspace) -> dict[str, tuple[str, list[str], str]]:
    found = {}
    async for batch in engine.stream_files(GetFilesParams()):
        for item in batch:
            found[item.path] = (item.summary, item.tags, item.status)
    return found


# -- the pool itself ---------------------------------------------------------------------------


async def test_the_pool_starts_with_work_stops_when_idle_and_closes_without_leftovers() -> None:
    pool = AnnotationPool(2, idle_seconds=0.3)
    assert not pool.running and pool.pids() == []
    assert await pool.run(abs, -3) == 3
    assert pool.running and 1 <= len(pool.pids()) <= 2
    workers = pool.pids()
    await eventually(lambda: not pool.running)  # idle: stopping
    await eventually(lambda: not any(alive(pid) for pid in workers))
    assert await pool.run(abs, -4) == 4  # and started again for new work
    assert pool.started == 2
    workers = pool.pids()
    pool.close()
    assert not any(alive(pid) for pid in workers)
    assert children() == []
    with pytest.raises(RuntimeError):
        await pool.run(abs, -5)


async def test_a_worker_killed_mid_job_gets_its_job_done_by_a_new_one() -> None:
    pool = AnnotationPool(1)
    try:
        job = pool.submit(time.sleep, 1.0)
        await eventually(lambda: bool(pool.pids()))
        await asyncio.sleep(0.3)  # the job is under way
        os.kill(pool.pids()[0], signal.SIGKILL)
        assert await asyncio.wait_for(asyncio.wrap_future(job), TIMEOUT) is None
        assert pool.started == 2
    finally:
        pool.close()


async def test_a_worker_imports_what_it_runs_and_not_the_server(tmp_path: Path) -> None:
    """Each worker would otherwise hold the engine, the index and the protocol: MBs apiece."""
    root = make_workspace(tmp_path / "ws", git=False)
    pool = AnnotationPool(1)
    try:
        listed = [(path, (root / path).stat().st_size) for path in ("src/shop/cart.py", "README.md")]
        outcomes = await pool.run(read_outcomes, (str(root), listed, 1 << 20))
        assert all(outcome.record is not None for outcome in outcomes)
        pending = [
            PendingFile(record.path, record.hash, record.language, record.kind, record.size)
            for record in (outcome.record for outcome in outcomes)
            if record is not None
        ]
        batch = unpack_batch(await pool.run(annotate_batch_packed, AnnotationJob(str(root), pending)))
        assert len(batch.annotations) == 2
        modules = set(await pool.run(eval, "list(__import__('sys').modules)"))
    finally:
        pool.close()
    assert {"filescout.scan.tree", "filescout.annotate.jobs"} <= modules
    held = {name.split(".")[0] for name in modules} | modules
    server_side = ("filescout.engine", "filescout.index", "filescout.lsp", "filescout_protocol", "asyncio")
    assert sorted(held.intersection(server_side)) == []
    assert not {"aiosqlite", "pygls", "lsprotocol", "sqlite3"} & held


async def test_a_result_is_freed_when_its_caller_drops_it_without_a_garbage_collection() -> None:
    """A job's results (a scan batch's words, an annotated batch: MBs) must not wait for the
    cyclic collector, which a server holding many objects seldom runs in full."""
    pool = AnnotationPool(1)
    gc.disable()
    try:
        result = await pool.run(set, range(1000))
        assert len(result) == 1000
        freed = weakref.ref(result)
        del result
        await eventually(lambda: freed() is None, timeout=10)  # the pool's threads let go of it
    finally:
        gc.enable()
        pool.close()


async def test_a_job_cancelled_before_it_starts_never_runs(tmp_path: Path) -> None:
    pool = AnnotationPool(1)
    try:
        busy = pool.submit(time.sleep, 0.5)
        fillers = [pool.submit(abs, -number) for number in range(3)]  # the executor's call queue
        queued = pool.submit(Path.touch, tmp_path / "ran")
        assert queued.cancel()
        await asyncio.wait_for(asyncio.wrap_future(busy), TIMEOUT)
        assert [await asyncio.wrap_future(filler) for filler in fillers] == [0, 1, 2]
        assert await pool.run(abs, -7) == 7  # every job before and after has run
        assert not (tmp_path / "ran").exists()
    finally:
        pool.close()


async def test_a_job_that_kills_every_worker_fails_or_falls_back_and_never_hangs() -> None:
    pool = AnnotationPool(1)
    try:
        with pytest.raises(BrokenProcessPool):
            await asyncio.wait_for(pool.run(os._exit, 3), TIMEOUT)
        assert pool.started == 2  # tried once more in a new pool
        fallen_back = pool.submit(os._exit, 4, fallback=lambda code: -code)
        assert await asyncio.wait_for(asyncio.wrap_future(fallen_back), TIMEOUT) == -4
        assert await pool.run(abs, -1) == 1  # and the pool still works
    finally:
        pool.close()
    assert children() == []


def test_the_setting_is_validated_and_defaults_to_the_cpu_count(tmp_path: Path) -> None:
    assert worker_count(None, cpus=2) == 1  # the other core: the server's writer
    assert worker_count(None, cpus=3) == 2
    assert worker_count(None, cpus=1) == 1
    assert worker_count(None, cpus=64) == 4
    assert worker_count(3, cpus=64) == 3
    loaded = load_settings(tmp_path, {"index": {"workers": 3}}, env={})
    assert loaded.settings.index.workers == 3 and loaded.warnings == []
    assert load_settings(tmp_path, None, env={"FILESCOUT_WORKERS": "5"}).settings.index.workers == 5
    for bad in (0, 65, -1, "two"):
        loaded = load_settings(tmp_path, {"index": {"workers": bad}}, env={})
        assert loaded.settings.index.workers is None
        assert len(loaded.warnings) == 1 and "index.workers" in loaded.warnings[0], loaded.warnings


# -- the engine with its pool -------------------------------------------------------------------


async def test_a_restart_with_nothing_to_do_starts_no_worker(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 300, grow=False)
    engine = await open_engine(root, tmp_path)
    try:
        await indexed(engine)
        assert engine._pool.started >= 1  # 300 new files: read and annotated by workers
    finally:
        await engine.close()
    assert children() == []
    engine = await open_engine(root, tmp_path)
    try:
        await indexed(engine)
        assert engine._pool.started == 0
        (root / "pkg0" / "mod0" / "unit_00000.py").write_text("def changed():\n    return 1\n")
        await indexed(engine)  # one changed file: read and annotated here, no worker started
        assert engine._pool.started == 0
        assert (await entries(engine))["pkg0/mod0/unit_00000.py"][2] == "annotated"
    finally:
        await engine.close()


async def test_one_and_two_workers_build_the_same_index(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    make_large_workspace(root / "more", 120)
    results = []
    for workers in (1, 2):
        engine = await open_engine(root, tmp_path / f"w{workers}", workers)
        try:
            await indexed(engine)
            assert engine._pool.started >= 1 and engine._pool.workers == workers
            index: Index = engine._index
            words = await index.db.reader.execute_fetchall(
                "SELECT c.hash, c.words FROM contents AS c ORDER BY c.hash"
            )
            results.append((await entries(engine), list(words)))
        finally:
            await engine.close()
    assert results[0] == results[1]
    listed, words = results[0]
    assert len(listed) > 120 and {status for _, _, status in listed.values()} == {"annotated"}
    assert len(words) > 120


async def test_a_worker_killed_while_annotating_leaves_no_file_behind(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 600)
    engine = await open_engine(root, tmp_path, workers=2)
    try:
        engine.start_indexing("index")
        pool = engine._pool
        await eventually(lambda: bool(pool.pids()))
        os.kill(pool.pids()[0], signal.SIGKILL)
        await asyncio.wait_for(engine.wait_idle(), TIMEOUT)
        assert pool.started >= 2
        statuses = {status for _, _, status in (await entries(engine)).values()}
        assert statuses == {"annotated"}
        assert len(await entries(engine)) == 600
    finally:
        await engine.close()
    assert children() == []


async def test_content_is_searchable_when_the_scan_is_stored(tmp_path: Path) -> None:
    """The scan alone (no annotator runs here) fills the content index."""
    root = make_large_workspace(tmp_path / "ws", 400, grow=False)
    (root / "pkg1" / "notes.py").write_text("def quarterly_reconciliation():\n    return 'zanzibar'\n")
    index = await Index.open(tmp_path / "index.sqlite3")
    pool = AnnotationPool(2)
    try:
        rules = IgnoreRules.for_workspace(root, [], [])
        known: dict[str, KnownFile] = {}
        listing = enumerate_files(root, rules)
        reader = functools.partial(pool.submit, read_outcomes)
        for batch in scan(root, known, listing, max_file_size=1 << 20, reader=reader):
            await index.files.apply_changes(batch.changed, batch.removed, current="none", bodies=batch.bodies)
        assert pool.started == 1
        hits = await index.contents.search("zanzibar", limit=5)
        assert [hit.path for hit in hits] == ["pkg1/notes.py"]
        hits = await index.contents.search("reconciliation", limit=5)
        assert [hit.path for hit in hits] == ["pkg1/notes.py"]
        ((annotations,),) = await index.db.reader.execute_fetchall("SELECT count(*) FROM annotations")
        ((contents,),) = await index.db.reader.execute_fetchall("SELECT count(*) FROM contents")
        assert annotations == 0 and contents == 401
    finally:
        pool.close()
        await index.close()


async def test_the_engine_stores_content_words_with_the_scan(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 400, grow=False)
    engine = await open_engine(root, tmp_path)
    try:
        await asyncio.wait_for(engine.start_indexing("index"), TIMEOUT)
        index: Index = engine._index
        hashes = [row[0] for row in await index.db.reader.execute_fetchall("SELECT hash FROM files")]
        assert len(hashes) == 400 and await index.contents.missing(hashes) == set()
        await asyncio.wait_for(engine.wait_idle(), TIMEOUT)
    finally:
        await engine.close()


async def test_a_touched_file_is_annotated_before_the_backlog(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 2500, grow=False)
    last = "pkg19/mod0/unit_02499.py"  # made the largest: last in the default order (small first)
    (root / last).write_text((root / last).read_text() + "# a little longer\n" * 40)
    engine = await open_engine(root, tmp_path)
    try:
        await asyncio.wait_for(engine.start_indexing("index"), TIMEOUT)
        await engine.touch([last])
        while True:
            listed = await entries(engine)
            if listed[last][2] == "annotated":
                break
            await asyncio.sleep(0.01)
        pending = sum(status == "pending" for _, _, status in listed.values())
        assert pending > 500, pending
        await asyncio.wait_for(engine.wait_idle(), TIMEOUT)
    finally:
        await engine.close()


def annotated(count: int, start: int) -> list[tuple[str, Annotation]]:
    return [(f"h{n}", Annotation(f"file {n}", [], [])) for n in range(start, start + count)]


async def test_the_writer_gathers_batches_while_more_are_under_way() -> None:
    stored: list[int] = []
    under_way = True

    async def save(annotations: list[tuple[str, Annotation]]) -> None:
        stored.append(len(annotations))

    saves = Saves(save, more_coming=lambda: under_way, gather_seconds=60)
    for start in range(0, GATHER, ANNOTATION_BATCH):
        saves.put(annotated(ANNOTATION_BATCH, start))
        for _ in range(5):
            await asyncio.sleep(0)  # the writer runs: with one batch only, it waits for more
    await saves.flush()
    assert stored == [GATHER]  # one transaction, not one per batch

    saves.put(annotated(ANNOTATION_BATCH, GATHER))
    under_way = False  # the last batch: stored at once
    await asyncio.wait_for(saves.flush(), 30)
    assert stored == [GATHER, ANNOTATION_BATCH]


async def test_what_the_user_touched_is_stored_without_gathering_more() -> None:
    stored: list[int] = []

    async def save(annotations: list[tuple[str, Annotation]]) -> None:
        stored.append(len(annotations))

    # Batches stay under way for the whole test: only urgency ends the (minute-long) gathering.
    saves = Saves(save, more_coming=lambda: True, gather_seconds=60)
    saves.put(annotated(ANNOTATION_BATCH, 0))
    for _ in range(5):
        await asyncio.sleep(0)
    assert stored == []  # gathering
    saves.put(annotated(1, ANNOTATION_BATCH), urgent=True)
    await asyncio.wait_for(saves.flush(), 30)
    assert stored == [ANNOTATION_BATCH + 1]
    saves.put(annotated(ANNOTATION_BATCH, 100))  # urgency passed with the write it was in
    for _ in range(5):
        await asyncio.sleep(0)
    assert stored == [ANNOTATION_BATCH + 1]
    saves.cancel()


async def test_closing_stops_a_job_under_way_instead_of_waiting_for_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A closing workspace will not store what a batch under way finds; waiting for it took
    seconds with large files, longer than an MCP client gives a server to exit."""
    started, finished = tmp_path / "started", tmp_path / "finished"
    job = (
        "import pathlib, time\n"
        f"pathlib.Path({str(started)!r}).touch()\n"
        "time.sleep(30)\n"
        f"pathlib.Path({str(finished)!r}).touch()\n"
    )
    pool = AnnotationPool(1)
    under_way = pool.submit(exec, job, fallback=exec)  # a fallback would run it here: it must not
    await eventually(started.exists)
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(asyncio.to_thread(pool.close), 20)  # well before the job would end
    with pytest.raises(BrokenProcessPool):
        await asyncio.wait_for(asyncio.wrap_future(under_way), TIMEOUT)
    assert not finished.exists() and children() == []
    assert [record.getMessage() for record in caplog.records if "died" in record.getMessage()] == []
