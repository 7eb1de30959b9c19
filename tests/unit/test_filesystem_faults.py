"""The engine's reads in-process against a file system that changes under them: a FIFO where a
listed file was, a file rewritten while it is hashed, a workspace folder that vanishes, content
that comes back after its words were forgotten. (End to end, with the server as a subprocess:
tests/e2e/test_filesystem_faults.py.)"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from filescout.core.records import Annotation, FileRecord, PendingFile
from filescout.engine import Hooks, Workspace
from filescout.engine.structural_worker import read_text
from filescout.index import Index
from filescout.scan.ignore import IgnoreRules
from filescout.scan.tree import (
    WorkspaceGone,
    content_hash,
    enumerate_files,
    read_record,
    scan_paths,
)
from harness.index_audit import audit
from harness.support import make_workspace

STRUCTURAL = "structural/test"
MODEL = "model:test"
HANG_GUARD = 30.0  # seconds; only so that a read stuck on a FIFO fails instead of hanging


def unblock_fifo(path: Path) -> None:
    """Open a FIFO's writing end and close it: a reader stuck opening it gets end-of-file."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


async def without_hanging_on(fifo: Path, call: Callable[[], object]) -> object:
    """`call`'s result; if it waits on `fifo` for long, the FIFO is unblocked and the test fails."""
    task = asyncio.ensure_future(asyncio.to_thread(call))
    try:
        return await asyncio.wait_for(asyncio.shield(task), HANG_GUARD)
    except asyncio.TimeoutError:
        unblock_fifo(fifo)
        await task
        raise AssertionError(f"reading {fifo.name} waited for a writer") from None


async def test_a_fifo_where_a_listed_file_was_is_never_waited_on(tmp_path: Path) -> None:
    path = tmp_path / "notes.py"
    path.write_text("NOTES = 1\n")
    listed = os.stat(path)  # what the scan's stat saw, a moment before the swap
    pending = PendingFile("notes.py", content_hash(path.read_bytes()), "python", "source", 10, None)
    path.unlink()
    os.mkfifo(path)
    assert (
        await without_hanging_on(path, lambda: read_record(str(tmp_path), "notes.py", listed, 1 << 20))
        is None
    )
    assert await without_hanging_on(path, lambda: read_text(tmp_path, pending)) is None


async def test_a_file_rewritten_in_place_while_indexed_ends_with_its_last_content(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    path = root / "src/shop/catalog.py"
    size = 512 << 10

    def version(number: int) -> bytes:
        line = f"PRICE_{number:08d} = {number}\n".encode()
        return (line * (size // len(line) + 1))[:size]

    path.write_bytes(version(0))
    stop = threading.Event()

    def rewrite_in_place() -> None:
        """New content of the same size, written over the old in chunks, again and again."""
        with open(path, "r+b", buffering=0) as handle:
            number = 0
            while not stop.is_set():
                number += 1
                data = version(number)
                for offset in range(0, size, 16 << 10):
                    os.pwrite(handle.fileno(), data[offset : offset + (16 << 10)], offset)

    writer = threading.Thread(target=rewrite_in_place)
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}, hooks=Hooks())
    try:
        writer.start()
        try:
            await engine.start_indexing("index")
            await asyncio.sleep(0.3)  # on into annotation
        finally:
            stop.set()
            writer.join()
        db = (await engine.status()).db_path
        for _ in range(300):
            if not audit(db, root).unfinished():
                break
            await asyncio.sleep(0.1)
        assert audit(db, root).unfinished() == {}  # the last version, whole, and annotated
    finally:
        await engine.close()


async def test_a_rewrite_within_the_timestamp_tick_of_the_read_ends_with_the_last_content(
    tmp_path: Path,
) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    # Binary: never read again to be annotated, so only the scan's own care can catch it.
    blob = root / "assets/blob.bin"
    tick = time.time_ns()
    blob.write_bytes(b"\x00\x01 first")
    os.utime(blob, ns=(tick, tick))
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}, hooks=Hooks())
    try:
        await engine.start_indexing("index")  # stored: the first version
        # Rewritten right after the read: same size, and a coarse clock leaves the same mtime.
        # Nothing about its stat tells a later scan that it changed.
        blob.write_bytes(b"\x00\x01 again")
        os.utime(blob, ns=(tick, tick))
        db = (await engine.status()).db_path
        for _ in range(300):
            if not audit(db, root).stale:
                break
            await asyncio.sleep(0.1)
        assert audit(db, root).stale == []
        await engine.wait_idle()
    finally:
        await engine.close()


def test_a_workspace_folder_that_is_gone_is_never_taken_for_an_empty_one(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    rules = IgnoreRules.for_workspace(root, [], [])
    shutil.rmtree(root)
    with pytest.raises(WorkspaceGone, match="is gone"):
        enumerate_files(root, rules)
    known = {"README.md": ("README.md", 10, 1)}
    with pytest.raises(WorkspaceGone):
        scan_paths(root, ["README.md"], known, rules, git_mode=False, max_file_size=1 << 20)


async def test_a_workspace_folder_gone_during_a_pass_keeps_its_index(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=True)
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}, hooks=Hooks())
    try:
        await engine.start_indexing("index")
        await engine.wait_idle()
        files = (await engine.status()).files
        shutil.move(root, tmp_path / "away")
        with pytest.raises(WorkspaceGone):
            await engine.start_indexing("index")
        await engine.refresh([str(root / "README.md")])  # an editor reporting it deleted
        status = await engine.status()
        assert status.files == files and status.phase == "failed"
        assert status.last_error is not None and str(root) in status.last_error
        shutil.move(tmp_path / "away", root)
        await engine.refresh([str(root / "README.md")])  # back: a full pass follows
        await engine.wait_idle()
        status = await engine.status()
        assert status.files == files and status.phase == "idle" and status.last_error is None
    finally:
        await engine.close()


async def test_content_that_comes_back_is_annotated_and_its_words_indexed_again(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    cart = root / "src/shop/cart.py"
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}, hooks=Hooks())

    async def full_pass() -> None:
        await engine.start_indexing("index")
        await engine.wait_idle()

    try:
        await full_pass()
        kept = cart.read_bytes()
        cart.unlink()  # deleted, a pass forgets its words ...
        await full_pass()
        cart.write_bytes(kept)  # ... and restored, as a revert or an undo does
        await full_pass()
        db = (await engine.status()).db_path
        assert audit(db, root).words_missing == []
        assert (await engine.status()).by_status.get("pending", 0) == 0
    finally:
        await engine.close()


async def test_a_model_annotated_content_that_comes_back_gets_its_words_again(tmp_path: Path) -> None:
    index = await Index.open(tmp_path / "index.sqlite3")
    try:
        cart = FileRecord(
            path="cart.py", size=10, mtime_ns=1, hash="h1", language="python", kind="source", skip_reason=None
        )
        await index.files.apply_changes([cart], [], current=MODEL)
        await index.annotations.save(STRUCTURAL, [("h1", Annotation("Cart.", [], [], body="basket"))])
        await index.annotations.save(MODEL, [("h1", Annotation("A shopping cart.", [], []))])
        await index.files.apply_changes([], ["cart.py"], current=MODEL)
        assert await index.annotations.drop_orphans() == 1  # the words, and what they came with
        await index.files.apply_changes([cart], [], current=MODEL)  # back: shows the model's at once
        assert (await index.files.entries(["cart.py"], current=MODEL))["cart.py"].status == "annotated"
        assert await index.annotations.backlog(STRUCTURAL, machine=True) == ["cart.py"]
        assert [item.path for item in await index.annotations.pending(STRUCTURAL, ["cart.py"])] == ["cart.py"]
        await index.annotations.save(
            STRUCTURAL, [("h1", Annotation("Cart.", [], [], body="basket"))], replace=False
        )
        assert [hit.path for hit in await index.contents.search('"basket"', limit=5)] == ["cart.py"]
        assert await index.annotations.backlog(STRUCTURAL, machine=True) == []
        entry = (await index.files.entries(["cart.py"], current=MODEL))["cart.py"]
        assert entry.summary == "A shopping cart."  # the model's annotation still shows
    finally:
        await index.close()
