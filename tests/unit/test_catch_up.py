"""Before a terminal command's question, the engine takes in what changed on disk since it last
looked (`Workspace.catch_up`, which the door calls), also while a pass is under way: a file
written after that pass listed the workspace is no change the pass takes in."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from filescout.engine import Workspace
from filescout.engine import workspace as workspace_module
from filescout_protocol.types import GetFilesParams


async def listed(engine: Workspace) -> list[str]:
    page = await engine.files_page(GetFilesParams(limit=100))
    return sorted(item.path for item in page.items)


async def test_a_file_written_after_a_pass_listed_the_workspace_is_taken_in(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    for n in range(5):
        (root / "src" / f"part_{n}.py").write_text(f"def part_{n}():\n    return {n}\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "FILESCOUT_CACHE_DIR": ""}
    engine = await Workspace.open(root, env=env)
    released = asyncio.Event()
    try:
        history = engine._indexer.history

        async def held_update() -> None:  # the pass stays under way until the test lets it end
            await released.wait()

        history.update = held_update  # type: ignore[method-assign]
        await engine.start_indexing("index")
        (root / "src" / "numbat.py").write_text("def numbat_tally():\n    return 'numbat'\n")
        assert not engine._indexer.idle  # the pass is under way, its scan stored without the file

        await engine.catch_up()
        assert "src/numbat.py" in await listed(engine)
    finally:
        released.set()
        await engine.close()


async def test_a_scan_that_takes_long_is_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first index of a large tree: the question is answered from what is stored, not after it."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "part.py").write_text("def part():\n    return 1\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "FILESCOUT_CACHE_DIR": ""}
    monkeypatch.setattr(workspace_module, "CAUGHT_UP_WAIT", 0.2)
    engine = await Workspace.open(root, env=env)
    released = asyncio.Event()
    try:
        real_scan = engine._indexer._scan

        async def slow_scan(*args: Any, **kwargs: Any) -> Any:
            await released.wait()
            return await real_scan(*args, **kwargs)

        engine._indexer._scan = slow_scan  # type: ignore[method-assign]
        scanned = engine.start_indexing("index")
        await asyncio.sleep(0)
        assert not engine._indexer.idle
        await asyncio.wait_for(engine.catch_up(), 30)  # not the scan's time: the bound's
        assert not scanned.done()
    finally:
        released.set()
        await engine.close()
