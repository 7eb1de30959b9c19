"""Where the index writer's time goes: CPU per statement during a cold index, per file.

    python bench/writer_bench.py --workspace WS [--workers 2] [--json OUT]

Runs `filescout index WS` in this process on a fresh cache directory, with every statement the
SQLite connections run timed where it runs (on the connection's own thread, by that thread's
CPU clock and by the wall clock): each `execute`, `executemany` and `commit` is wrapped on its
way to the thread. Statements are grouped by their text (whitespace folded, the first 100
characters). Printed: each group's CPU per indexed file in microseconds, its share of the
writer's statement CPU, calls and wall time; the writer is the connection whose statements took
the most CPU. A statement's CPU includes what SQLite does for it (a COMMIT writes the full-text
tables' pending segments and the log), and the work the workers do is not counted here
(server_cpu_bench.py counts every thread and process).

The timing wraps aiosqlite's private `Connection._execute`, through which every call of its
public methods passes; a bench tool may lean on that, the product does not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

STATEMENT_CHARS = 100


def statement_of(function: Callable[..., Any], args: tuple[Any, ...]) -> str:
    sql = args[0] if args and isinstance(args[0], str) else ""
    name = getattr(function, "__name__", type(function).__name__)
    return re.sub(r"\s+", " ", sql).strip()[:STATEMENT_CHARS] or name.upper()


class StatementClock:
    """CPU and wall seconds per (thread, statement), gathered while installed."""

    def __init__(self) -> None:
        self.spent: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        self._lock = threading.Lock()

    def install(self) -> Callable[[], None]:
        import aiosqlite.core

        original = aiosqlite.core.Connection._execute
        clock = self

        async def timed_execute(self: Any, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            statement = statement_of(function, args)

            def timed(*inner: Any, **named: Any) -> Any:
                cpu, wall = time.thread_time(), time.perf_counter()
                try:
                    return function(*inner, **named)
                finally:
                    clock.add(statement, time.thread_time() - cpu, time.perf_counter() - wall)

            return await original(self, timed, *args, **kwargs)

        aiosqlite.core.Connection._execute = timed_execute  # type: ignore[method-assign]
        return lambda: setattr(aiosqlite.core.Connection, "_execute", original)

    def add(self, statement: str, cpu: float, wall: float) -> None:
        with self._lock:
            spent = self.spent[(threading.current_thread().name, statement)]
            spent[0] += 1
            spent[1] += cpu
            spent[2] += wall


def run(workspace: Path, workers: int) -> dict[str, Any]:
    from filescout.cli import main

    cache = Path(tempfile.mkdtemp(prefix="filescout-writer-"))
    os.environ["FILESCOUT_CACHE_DIR"] = str(cache)
    os.environ["FILESCOUT_WORKERS"] = str(workers)
    clock = StatementClock()
    uninstall = clock.install()
    started = time.perf_counter()
    try:
        code = main(["index", str(workspace)])
    finally:
        uninstall()
    wall = time.perf_counter() - started
    (database,) = cache.glob("*/index.sqlite3")
    with sqlite3.connect(database) as db:
        (files,) = db.execute("SELECT count(*) FROM files").fetchone()
    shutil.rmtree(cache)
    by_thread: dict[str, float] = defaultdict(float)
    for (thread, _), (_, cpu, _) in clock.spent.items():
        by_thread[thread] += cpu
    writer = max(by_thread, key=by_thread.__getitem__)
    writer_cpu = by_thread[writer]
    statements = sorted(
        ((statement, *spent) for (thread, statement), spent in clock.spent.items() if thread == writer),
        key=lambda row: -row[2],
    )
    return {
        "exit": code,
        "files": files,
        "wall_s": round(wall, 1),
        "writer_statement_cpu_s": round(writer_cpu, 2),
        "writer_us_per_file": round(1e6 * writer_cpu / max(files, 1), 1),
        "other_connections_cpu_s": round(sum(by_thread.values()) - writer_cpu, 2),
        "statements": [
            {
                "statement": statement,
                "calls": int(calls),
                "cpu_s": round(cpu, 3),
                "us_per_file": round(1e6 * cpu / max(files, 1), 1),
                "share": round(cpu / max(writer_cpu, 1e-9), 3),
                "wall_s": round(wall_s, 3),
            }
            for statement, calls, cpu, wall_s in statements
        ],
    }


def print_table(result: dict[str, Any], rows: int) -> None:
    print(
        f"{result['files']} files, {result['wall_s']} s; writer statements {result['writer_statement_cpu_s']} s "
        f"CPU = {result['writer_us_per_file']} us a file (other connections {result['other_connections_cpu_s']} s)"
    )
    print(f"{'us/file':>8} {'share':>6} {'calls':>6} {'wall s':>7}  statement")
    for row in result["statements"][:rows]:
        print(
            f"{row['us_per_file']:8.1f} {row['share']:6.1%} {row['calls']:6d} {row['wall_s']:7.2f}  {row['statement']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rows", type=int, default=20, help="statements printed")
    parser.add_argument("--json", type=Path, help="write the whole result here")
    args = parser.parse_args()
    result = run(args.workspace, args.workers)
    print_table(result, args.rows)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
