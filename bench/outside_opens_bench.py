"""Opens outside the workspace while links flip, and what reading beneath the root costs.

    python bench/outside_opens_bench.py [--flips 1000] [--interval 0.02] [--git]
                                        [--files 10000] [--out results.json]

1. The cost of opening each file beneath the root (a component at a time, no link followed out
   of it) against opening it by its path, on a generated workspace of `--files` files, read as
   a scan reads them (open, fstat, read, fstat, close); best of five rounds, microseconds per
   file, the files warm in the page cache.
2. `filescout serve` under strace (every open of the server and its workers, with the path each
   descriptor names) while a thread flips `link.py` between a file inside and one outside, and
   `pkg/` between a directory and a symlink to one outside, `--flips` times; the client keeps
   saving, opening, accessing and annotating both paths (bench/harness/outside_opens.py). Prints the
   opens outside per flip by filescout (the goal: 0) and by the programs it runs (in a git
   work tree git's own listing may open a directory swapped for a symlink a moment earlier:
   names only, each read through `core/beneath.py`), and whether an outside file's words reached
   the index.

Exits 1 when filescout opened anything outside or an outside file's words reached the index.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from filescout.core.beneath import RootDir, read_regular
from harness.outside_opens import (
    flip_while_asked,
    make_flipping_workspace,
    opened_outside,
    secret_words_in_index,
    strace_missing,
    traced_command,
)
from harness.support import start_client, stop_client, wait_for_indexing
from harness.workspaces import generate

ROUNDS = 5


def read_by_path(path: str) -> bytes:
    """How files were read before: opened by their path, links followed wherever they lead."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size + 1)
        os.fstat(fd)
    finally:
        os.close(fd)
    return data


def open_cost(files: int) -> dict[str, Any]:
    """Microseconds per file: reading by path, reading beneath the root (the root opened once
    for all, as a batch does), and beneath with the root opened for each file."""
    with tempfile.TemporaryDirectory(prefix="filescout-beneath-") as folder:
        root = Path(folder)
        generate(root, files, seed=7)
        relatives = sorted(
            os.path.relpath(os.path.join(current, name), root)
            for current, _, names in os.walk(root)
            for name in names
            if ".git" not in current
        )
        absolute = [f"{root}/{relative}" for relative in relatives]
        depth = sum(relative.count("/") + 1 for relative in relatives) / len(relatives)

        def by_path() -> None:
            for path in absolute:
                read_by_path(path)

        def beneath_shared() -> None:
            with RootDir(root) as opened:
                for relative in relatives:
                    read_regular(opened, relative)

        def beneath_each() -> None:
            for relative in relatives:
                with RootDir(root) as opened:
                    read_regular(opened, relative)

        timings: dict[str, float] = {}
        for name, run in [
            ("by_path", by_path),
            ("beneath", beneath_shared),
            ("beneath_root_each", beneath_each),
        ]:
            run()  # warm
            best = min(_timed(run) for _ in range(ROUNDS))
            timings[name] = round(best / len(relatives) * 1e6, 2)
        return {
            "files": len(relatives),
            "mean_components": round(depth, 2),
            "us_per_file": timings,
            "extra_us_per_file": round(timings["beneath"] - timings["by_path"], 2),
        }


def _timed(run: Any) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


async def flips_run(flips: int, interval: float, git: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="filescout-flips-") as folder:
        base = Path(folder)
        where = make_flipping_workspace(base, git=git)
        log = base / "opens.strace"
        started = time.perf_counter()
        client = await start_client(where.root, base / "cache", command=traced_command(log))
        try:
            await wait_for_indexing(client, timeout=300)
            flipper, rounds, db = await flip_while_asked(client, where, flips, interval)
            words = secret_words_in_index(db)
        finally:
            await stop_client(client)
        outside = opened_outside(log, where.outside)
        with open(log, encoding="utf-8", errors="replace") as lines:
            traced = sum(1 for _ in lines)
        return {
            "mode": "git" if git else "walk",
            "flips": flipper.done,
            "client_rounds": rounds,
            "opens_traced": traced,
            "opens_outside": {program: len(lines) for program, lines in outside.items()},
            "opens_outside_per_flip": sum(map(len, outside.values())) / max(flipper.done, 1),
            "first_outside_opens": {program: lines[:3] for program, lines in outside.items()},
            "outside_words_in_index": words,
            "flipper_errors": [repr(error) for error in flipper.errors],
            "seconds": round(time.perf_counter() - started, 1),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--flips", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between flips")
    parser.add_argument("--git", action="store_true", help="a git work tree rather than a walk")
    parser.add_argument("--files", type=int, default=10000, help="files for the cost of opening")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    missing = strace_missing()
    if missing is not None:
        print(missing, file=sys.stderr)
        return 2
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "open_cost": open_cost(args.files),
    }
    print(json.dumps(results["open_cost"], indent=2), flush=True)
    results["flips"] = asyncio.run(flips_run(args.flips, args.interval, args.git))
    flipped = results["flips"]
    print(json.dumps(flipped, indent=2))
    by_filescout = flipped["opens_outside"].get("filescout", 0)
    print(
        f"opens outside / flips: filescout {by_filescout} / {flipped['flips']} = "
        f"{by_filescout / max(flipped['flips'], 1):.3f}; other programs {flipped['opens_outside']}; "
        f"outside words in the index: {len(flipped['outside_words_in_index'])}"
    )
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if by_filescout or flipped["outside_words_in_index"] or flipped["flipper_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
