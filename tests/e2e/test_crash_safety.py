"""Crash safety end to end: the server killed with SIGKILL at random points of scanning and of
annotation (a fixed seed), with files edited between restarts and, twice, while it runs. After
every kill the index must be sound; after a clean run to the end it must equal the disk.
bench/crash_bench.py does the same at scale (>= 100 restarts) and measures recovery."""

from __future__ import annotations

import asyncio
import os
import random
import threading
from pathlib import Path

from filescout.engine.settings import default_db_path
from harness.index_audit import audit, regular_files
from harness.support import (
    TestClient,
    as_dict,
    execute,
    make_large_workspace,
    progress_tokens,
    start_client,
    stop_client,
    wait_for_indexing,
)

SEED = 20261123
KILLS = 9
FILES = 1200
PHASES = ("startup", "scanning", "annotating")


def phase_of(client: TestClient) -> str:
    """What the server last said it was doing."""
    phase = "startup"
    for token in progress_tokens(client, "filescout/index"):
        for report in client.progress_reports[token]:
            message = getattr(report, "message", None) or ""
            if message.startswith(("scanning", "annotating")):
                phase = message.split()[0]
            elif getattr(report, "kind", "") == "end":
                phase = "idle"
    return phase


class Edits:
    """Content changes (so each restart has files to re-read and re-annotate), new files,
    deletions and renames, all from one seeded generator."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.paths = sorted(regular_files(root))
        self.serial = 0
        self.lock = threading.Lock()

    def one(self) -> None:
        with self.lock:
            self.serial += 1
            index = self.rng.randrange(len(self.paths))
            path = self.root / self.paths[index]
            roll = self.rng.random()
            body = "".join(
                f"def edit_{self.serial}_{n}():\n    return {n}\n\n" for n in range(1 + self.serial % 9)
            )
            try:
                if roll < 0.8:
                    path.write_text(f'"""Edited {self.serial}."""\n\n{body}')
                elif roll < 0.87:
                    new = path.with_name(f"added_{self.serial}.py")
                    new.write_text(f'"""Added {self.serial}."""\n\n{body}')
                    self.paths.append(str(new.relative_to(self.root)))
                elif roll < 0.94:
                    path.unlink()
                    self.paths.pop(index)
                else:
                    new = path.with_name(f"moved_{self.serial}_{path.name}")
                    os.rename(path, new)
                    self.paths[index] = str(new.relative_to(self.root))
            except FileNotFoundError:
                pass

    def many(self, count: int) -> None:
        for _ in range(count):
            self.one()

    def touch_all(self) -> None:
        """New mtimes, same contents: the next scan reads and hashes every file again."""
        for relative in self.paths:
            os.utime(self.root / relative)

    def meanwhile(self, stop: threading.Event) -> threading.Thread:
        def loop() -> None:
            while not stop.wait(0.004):
                self.one()

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        return thread


async def kill_at(client: TestClient, phase: str, rng: random.Random) -> str:
    """SIGKILL somewhere in `phase` (startup: right after the start); the phase it hit."""
    if phase != "startup":
        for _ in range(3000):
            if phase_of(client) in (phase, "idle"):
                break
            await asyncio.sleep(0.005)
    await asyncio.sleep(rng.uniform(0, {"startup": 0.8, "scanning": 0.1, "annotating": 0.3}[phase]))
    hit = phase_of(client)
    server = client._server
    assert server is not None
    server.kill()
    await server.wait()
    await client.stop()
    return hit


async def test_kill_9_at_random_points_never_breaks_the_index(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    root = make_large_workspace(tmp_path / "ws", FILES)
    cache = tmp_path / "cache"
    db = default_db_path(root.resolve(), {"XDG_CACHE_HOME": str(cache)})
    edits = Edits(root, random.Random(SEED + 1))
    hits: list[str] = []
    for kill in range(KILLS):
        target = PHASES[kill % len(PHASES)]
        # While it is down: work for the phase the kill aims at.
        edits.many(rng.randint(200, 400) if target == "annotating" else rng.randint(50, 250))
        if target == "scanning":
            edits.touch_all()
        stop = threading.Event()
        editor = edits.meanwhile(stop) if kill in (3, 6) else None
        client = await start_client(root, cache)
        try:
            hits.append(await kill_at(client, target, rng))
        finally:
            stop.set()
            if editor is not None:
                editor.join()
        if db.exists():
            assert audit(db, root).broken() == {}, f"after kill {kill + 1} ({hits[-1]})"
    assert {"scanning", "annotating"} <= set(hits), f"the kills missed a phase: {hits}"

    await asyncio.sleep(2.1)  # the disk at rest for longer than a timestamp tick
    client = await start_client(root, cache)
    try:
        await wait_for_indexing(client, timeout=120)
        status = as_dict(await execute(client, "filescout.status"))
    finally:
        await stop_client(client)
    on_disk = regular_files(root)
    assert status["files"] == len(on_disk) and status["lastError"] is None
    assert audit(db, root, expected=on_disk).unfinished() == {}
