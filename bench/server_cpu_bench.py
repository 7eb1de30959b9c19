"""The server's own CPU per file during a cold index, and the index's size by table.

    python bench/server_cpu_bench.py --workspace WS [--workers 2] [--before TREE]

Runs `filescout index WS` on a fresh cache directory and samples /proc every 0.25 s: CPU seconds
of each thread of the server's process (its main thread runs the event loop; the SQLite writer
is the busiest other thread) and of its children (the worker processes). With `--before TREE`
(a tree with `server/filescout`, e.g. `git archive COMMIT server | tar x -C TREE`), the same for
that code first, so both runs see about the same load. The worker processes spread over the
cores; the server's writer thread is serial, so its CPU per file bounds the throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.procfs import descendants, thread_cpu


def run(workspace: Path, workers: int, tree: Path | None) -> dict[str, object]:
    cache = Path(tempfile.mkdtemp(prefix="filescout-cpu-"))
    env = {**os.environ, "FILESCOUT_CACHE_DIR": str(cache), "FILESCOUT_WORKERS": str(workers)}
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "server")
    load = os.getloadavg()[0]
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "filescout", "index", str(workspace)], env=env, stdout=subprocess.DEVNULL
    )
    threads: dict[tuple[int, int], float] = {}
    while proc.poll() is None:
        for pid in descendants(proc.pid):  # the worker processes, and any command the index runs
            for _, tid, seconds in thread_cpu(pid):  # 0 for a thread gone while read: keep the last
                threads[(pid, tid)] = max(threads.get((pid, tid), 0.0), seconds)
        time.sleep(0.25)
    wall = time.monotonic() - started
    (database,) = cache.glob("*/index.sqlite3")
    with sqlite3.connect(database) as db:
        (files,) = db.execute("SELECT count(*) FROM files").fetchone()
        tables = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    size = database.stat().st_size
    shutil.rmtree(cache)
    own = {tid: seconds for (pid, tid), seconds in threads.items() if pid == proc.pid}
    event_loop = own.pop(proc.pid, 0.0)
    busiest = max(own.values(), default=0.0)
    per_file = 1000 / max(files, 1)
    return {
        "code": str(tree) if tree else "this tree",
        "files": files,
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "wall_s": round(wall, 1),
        "server_ms_per_file": round((event_loop + sum(own.values())) * per_file, 3),
        "event_loop_ms_per_file": round(event_loop * per_file, 3),
        "writer_ms_per_file": round(busiest * per_file, 3),
        "workers_ms_per_file": round(
            sum(s for (pid, _), s in threads.items() if pid != proc.pid) * per_file, 3
        ),
        "index_mb": round(size / 1e6, 1),
        "largest_tables_mb": {name: round(size / 1e6, 1) for name, size in tables[:10]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--before", type=Path, help="another code tree, measured first")
    args = parser.parse_args()
    trees = [args.before, None] if args.before else [None]
    for tree in trees:
        print(json.dumps(run(args.workspace, args.workers, tree), indent=1), flush=True)


if __name__ == "__main__":
    main()
