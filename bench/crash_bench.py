"""Crash-safety benchmark: `kill -9` the indexer again and again, at random points of scanning and
of annotation, sometimes while files are being edited, and check the index against the disk after
every kill and after a clean, complete run.

    python bench/crash_bench.py [--workspace DIR] [--files 10000] [--restarts 120] [--seed 1]
                                [--git] [--out results.json]

Each restart is `filescout serve` driven over stdio (most of them) or `filescout index`, killed
at a random moment of a phase chosen at random (startup, scanning, annotating); between restarts
files are edited (content changed, touched, created, deleted, renamed), and in some restarts an
editing thread keeps changing files while the process runs and is killed. Every tenth restart
runs to idle without a kill ("settle") and is checked as a complete pass.

After every kill the index must pass `PRAGMA integrity_check` and hold no duplicated row, no row
whose size and mtime match the file while its hash does not, no annotation other than its
content's, and no full-text row out of step. After a complete pass with the disk at rest it must
also hold no row out of date, none for a file that is gone, no file waiting for annotation, and
it must equal (paths, hashes, annotations) the index a clean run builds from scratch on the same
disk. Recovery times: from starting `filescout serve` after a kill to the first answer of
files/getFiles (query-ready) and to the end of its pass (idle; settle restarts).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filescout.engine.settings import default_db_path
from harness.index_audit import audit, differences, rows_by_path
from harness.launch import command, server_env
from harness.procfs import load_average
from harness.stats import percentile
from harness.wire import ProgressClient
from harness.workspaces import generate

TARGETS = ("startup", "scanning", "annotating")
SETTLE_EVERY = 10
CLEAN_RESTARTS = 10
CLI_SHARE = 0.2
EDIT_DURING_SHARE = 0.35


class Editor:
    """Changes the workspace the way people and tools do: rewrites in place, appends, atomic
    replacements, deletions, new files, renames and touches."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.paths = sorted(
            str(path.relative_to(root))
            for path in (root / "packages").rglob("*")
            if path.is_file() and "/dist/" not in str(path) and path.suffix in (".py", ".ts", ".go", ".md")
        )
        self.lock = threading.Lock()
        self.serial = 0
        self.done = 0

    def content(self) -> bytes:
        self.serial += 1
        lines = self.rng.randint(1, 60)
        body = "".join(
            f"def edited_{self.serial}_{n}(value):\n    return value * {n}\n\n" for n in range(lines)
        )
        return f'"""Edited {self.serial}."""\n\n{body}'.encode()

    def one(self) -> None:
        with self.lock:
            if not self.paths:
                return
            index = self.rng.randrange(len(self.paths))
            relative = self.paths[index]
            action = self.rng.choices(
                ["rewrite", "append", "replace", "touch", "delete", "create", "rename"],
                weights=[30, 15, 15, 15, 8, 10, 7],
            )[0]
            path = self.root / relative
            try:
                if action == "rewrite":
                    path.write_bytes(self.content())
                elif action == "append":
                    with open(path, "ab") as handle:
                        handle.write(f"# appended {self.serial}\n".encode())
                        self.serial += 1
                elif action == "replace":
                    temporary = path.with_name(f".{path.name}.tmp{self.serial}")
                    temporary.write_bytes(self.content())
                    os.replace(temporary, path)
                elif action == "touch":
                    os.utime(path)
                elif action == "delete":
                    path.unlink()
                    self.paths[index] = self.paths[-1]
                    self.paths.pop()
                elif action == "create":
                    new = path.with_name(f"added_{self.serial}.py")
                    new.write_bytes(self.content())
                    self.paths.append(str(new.relative_to(self.root)))
                else:
                    new = path.with_name(f"renamed_{self.serial}_{path.name}")
                    self.serial += 1
                    os.rename(path, new)
                    self.paths[index] = str(new.relative_to(self.root))
            except FileNotFoundError:
                pass
            self.done += 1

    def between(self, count: int) -> None:
        for _ in range(count):
            self.one()

    def touch_many(self, count: int) -> None:
        """Same content, new mtimes: a scan re-reads and re-hashes them, nothing to annotate."""
        with self.lock:
            for relative in self.rng.sample(self.paths, min(count, len(self.paths))):
                try:
                    os.utime(self.root / relative)
                except FileNotFoundError:
                    pass

    def during(self, stop_editing: threading.Event) -> threading.Thread:
        def loop() -> None:
            while not stop_editing.wait(self.rng.uniform(0.001, 0.02)):
                self.one()

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        return thread


@dataclass
class Cycle:
    number: int
    mode: str
    target: str
    killed_in: str = ""
    edits_before: int = 0
    edits_during: int = 0
    initialized: float | None = None
    """From the start to the answer to `initialize` (the index opened)."""
    query_ready: float | None = None
    idle: float | None = None
    annotated: int | None = None
    """Files the pass annotated before it was idle (settle restarts)."""
    broken: dict[str, object] = field(default_factory=dict)
    unfinished: dict[str, object] = field(default_factory=dict)


def message_of(value: dict[str, Any]) -> str:
    return value.get("message") or ""


def phase_now(client: ProgressClient) -> str:
    """What the server was doing at its last report."""
    for _, kind, value in reversed(client.progress):
        if kind == "end":
            return "idle"
        if kind in ("report", "begin"):
            text = message_of(value)
            if text.startswith("annotating"):
                return "annotating"
            if text.startswith("scanning"):
                return "scanning"
    return "startup"


def annotated_in_pass(client: ProgressClient) -> int | None:
    """From the pass's last words: "10000 files indexed, 1234 annotated"."""
    for _, kind, value in reversed(client.progress):
        text = message_of(value)
        if kind == "end" and " annotated" in text:
            return int(text.split(", ")[1].split()[0])
    return None


def annotation_total(client: ProgressClient) -> int:
    """How many files the pass's annotation said it had to do ("annotating 32/900 files")."""
    for _, kind, value in reversed(client.progress):
        text = message_of(value)
        if kind == "report" and text.startswith("annotating") and "/" in text:
            return int(text.split()[1].split("/")[1])
    return 0


async def reached(client: ProgressClient, phase: str, timeout: float) -> bool:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        now = phase_now(client)
        if now == phase:
            return True
        if now == "idle":
            return False
        await asyncio.sleep(0.005)
    return False


async def kill(client: ProgressClient) -> None:
    client.process.kill()  # SIGKILL: no shutdown, nothing flushed
    await client.process.wait()
    await asyncio.gather(client.reader, return_exceptions=True)  # it ends with the server's output


class Bench:
    def __init__(self, args: argparse.Namespace, root: Path, cache: Path) -> None:
        self.args = args
        self.root = root
        self.cache = cache
        self.rng = random.Random(args.seed)
        self.editor = Editor(root, random.Random(args.seed + 1))
        self.env = server_env(cache)
        """What `ProgressClient.start(root, cache)` runs the server with: `filescout index` runs
        with it too, and the index is found where both keep it."""
        self.db = default_db_path(root.resolve(), self.env)
        self.cycles: list[Cycle] = []
        self.clean_restarts: list[float] = []
        self.lasted = {"scanning": 0.5}
        """Roughly how long a scan lasts, so a kill delay can fall anywhere in it."""
        self.per_file = 0.002
        """Roughly how long annotating one file takes (seconds)."""

    async def query_ready(self, client: ProgressClient, cycle: Cycle) -> float:
        cycle.initialized = time.perf_counter() - client.started
        await client.result("files/getFiles", {"limit": 1})
        return time.perf_counter() - client.started

    async def serve_and_kill(self, cycle: Cycle, editing: threading.Event | None) -> None:
        client = await ProgressClient.start(self.root, self.cache)
        if cycle.target == "startup":
            await asyncio.sleep(self.rng.uniform(0, 0.3))
        else:
            cycle.query_ready = await self.query_ready(client, cycle)
            if await reached(client, cycle.target, timeout=120):
                # Anywhere in the phase: as long as it should last, a little more.
                if cycle.target == "annotating":
                    expected = self.per_file * annotation_total(client)
                else:
                    expected = self.lasted["scanning"]
                await asyncio.sleep(self.rng.uniform(0, 1.1 * expected))
        cycle.killed_in = phase_now(client)
        self.learn(client)
        if editing is not None and self.rng.random() < 0.5:
            editing.set()  # sometimes the edits stop just before the kill, sometimes just after
        await kill(client)

    def learn(self, client: ProgressClient) -> None:
        """How long the phases lasted in this run, where it showed."""
        first: dict[str, float] = {}
        for at, kind, value in client.progress:
            text = message_of(value)
            if kind == "end":
                first.setdefault("idle", at)
            for phase in ("scanning", "annotating"):
                if text.startswith(phase):
                    first.setdefault(phase, at)
        if "scanning" in first and "annotating" in first:
            self.lasted["scanning"] = max(0.05, first["annotating"] - first["scanning"])
        total = annotation_total(client)
        if "annotating" in first and "idle" in first and total:
            self.per_file = max(0.0002, (first["idle"] - first["annotating"]) / total)

    async def index_and_kill(self, cycle: Cycle) -> None:
        process = await asyncio.create_subprocess_exec(
            *command("index", str(self.root)),
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        delay = self.rng.uniform(0.3, 6.0)
        try:
            await asyncio.wait_for(process.wait(), delay)
            cycle.killed_in = "exited"
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
            cycle.killed_in = f"{delay:.1f}s"

    async def settle(self, cycle: Cycle) -> None:
        await asyncio.sleep(2.1)  # the disk at rest for longer than a timestamp tick
        client = await ProgressClient.start(self.root, self.cache)
        cycle.query_ready = await self.query_ready(client, cycle)
        ended = await client.wait_for_progress("end", timeout=1200)
        cycle.idle = ended - client.started
        cycle.annotated = annotated_in_pass(client)
        self.learn(client)
        cycle.killed_in = "none"
        await client.stop()

    async def clean_restart(self) -> float:
        """For comparison: query-ready after a clean shutdown, nothing to do, same load."""
        cycle = Cycle(0, "serve", "clean")
        client = await ProgressClient.start(self.root, self.cache)
        ready = await self.query_ready(client, cycle)
        await client.wait_for_progress("end", timeout=600)
        await client.stop()
        return ready

    def prepare(self, cycle: Cycle) -> None:
        """Edits while the process is down, so that the phase the kill aims at has work to
        do: many changed files before a kill during annotation; many touched (re-read,
        nothing to annotate) or changed files before one during scanning; a few otherwise."""
        roll = self.rng.random()
        count = 0
        if cycle.target == "annotating" or (cycle.target == "scanning" and roll < 0.5):
            count = self.rng.randint(300, 2500)
        elif cycle.target == "scanning":
            self.editor.touch_many(self.rng.randint(1000, 6000))
        else:
            count = self.rng.randint(0, 60) if roll < 0.8 else self.rng.randint(300, 2500)
        before = self.editor.done
        self.editor.between(count)
        cycle.edits_before = self.editor.done - before

    async def one(self, number: int) -> Cycle:
        settling = number % SETTLE_EVERY == 0
        mode = "serve" if settling or self.rng.random() >= CLI_SHARE else "index"
        target = "settle" if settling else (self.rng.choice(TARGETS) if mode == "serve" else "random")
        cycle = Cycle(number, mode, target)
        if not settling:
            self.prepare(cycle)
        editing: threading.Event | None = None
        thread: threading.Thread | None = None
        before = self.editor.done
        if not settling and self.rng.random() < EDIT_DURING_SHARE:
            editing = threading.Event()
            thread = self.editor.during(editing)
        if settling:
            await self.settle(cycle)
        elif mode == "serve":
            await self.serve_and_kill(cycle, editing)
        else:
            await self.index_and_kill(cycle)
        if editing is not None and thread is not None:
            await asyncio.sleep(self.rng.uniform(0, 0.05))
            editing.set()
            thread.join()
            cycle.edits_during = self.editor.done - before
        if self.db.exists():
            findings = audit(self.db, self.root)
            cycle.broken = findings.broken()
            if settling:
                cycle.unfinished = findings.unfinished()
        return cycle

    async def run(self) -> dict[str, Any]:
        for number in range(1, self.args.restarts + 1):
            cycle = await self.one(number)
            self.cycles.append(cycle)
            flag = (
                ""
                if not (cycle.broken or cycle.unfinished)
                else f"  PROBLEM {cycle.broken} {cycle.unfinished}"
            )
            print(
                f"{number:4d} {cycle.mode:5s} {cycle.target:10s} killed in {cycle.killed_in:10s} "
                f"edits {cycle.edits_before:5d}+{cycle.edits_during:4d} "
                f"ready {cycle.query_ready or 0:.2f}s idle {cycle.idle or 0:.1f}s{flag}",
                file=sys.stderr,
                flush=True,
            )
        final = Cycle(self.args.restarts + 1, "serve", "final")
        await self.settle(final)
        findings = audit(self.db, self.root)
        final.broken, final.unfinished = findings.broken(), findings.unfinished()
        self.cycles.append(final)
        self.clean_restarts = [await self.clean_restart() for _ in range(CLEAN_RESTARTS)]
        reference_cache = Path(tempfile.mkdtemp(prefix="filescout-crash-reference-"))
        try:
            reference_env = server_env(reference_cache)
            subprocess.run(
                command("index", str(self.root)), env=reference_env, check=True, capture_output=True
            )
            reference_db = default_db_path(self.root.resolve(), reference_env)
            against = differences(rows_by_path(self.db), rows_by_path(reference_db))
        finally:
            shutil.rmtree(reference_cache, ignore_errors=True)
        return self.summary(findings.rows, against)

    def summary(self, rows: int, against: dict[str, list[str]]) -> dict[str, Any]:
        kills = [cycle for cycle in self.cycles if cycle.target not in ("settle", "final")]
        after_kill = [
            cycle.query_ready
            for previous, cycle in itertools.pairwise(self.cycles)
            if previous in kills and cycle.query_ready is not None
        ]
        opened = [
            cycle.initialized
            for previous, cycle in itertools.pairwise(self.cycles)
            if previous in kills and cycle.initialized is not None
        ]
        settled = [
            cycle
            for previous, cycle in itertools.pairwise(self.cycles)
            if previous in kills and cycle.idle is not None
        ]
        idles = [cycle.idle for cycle in settled if cycle.idle is not None]
        killed_in: dict[str, int] = {}
        for cycle in kills:
            phase = cycle.killed_in if cycle.mode == "serve" else "index (random time)"
            killed_in[phase] = killed_in.get(phase, 0) + 1
        return {
            "restarts": len(self.cycles) - 1,
            "kills": len(kills),
            "killed_in": killed_in,
            "kills_while_editing": sum(cycle.edits_during > 0 for cycle in kills),
            "edits": self.editor.done,
            "rows": rows,
            "broken_after_kill": sum(bool(cycle.broken) for cycle in self.cycles),
            "unfinished_after_complete_run": sum(bool(cycle.unfinished) for cycle in self.cycles),
            "problems": [
                {"cycle": cycle.number, "broken": cycle.broken, "unfinished": cycle.unfinished}
                for cycle in self.cycles
                if cycle.broken or cycle.unfinished
            ],
            "against_clean_run": {name: len(paths) for name, paths in against.items()},
            "against_clean_run_examples": {name: paths[:5] for name, paths in against.items() if paths},
            "initialized_after_kill": {
                "n": len(opened),
                "p50": statistics.median(opened),
                "p95": percentile(opened, 0.95),
                "max": max(opened),
            },
            "query_ready_after_kill": {
                "n": len(after_kill),
                "p50": statistics.median(after_kill),
                "p95": percentile(after_kill, 0.95),
                "max": max(after_kill),
            },
            "query_ready_after_clean_exit": {
                "n": len(self.clean_restarts),
                "p50": statistics.median(self.clean_restarts),
                "max": max(self.clean_restarts),
            },
            "idle_after_kill_annotated": [cycle.annotated for cycle in settled],
            "idle_after_kill": {
                "n": len(idles),
                "p50": statistics.median(idles) if idles else None,
                "p95": percentile(idles, 0.95) if idles else None,
                "max": max(idles) if idles else None,
            },
            "cycles": [asdict(cycle) for cycle in self.cycles],
        }


def report(summary: dict[str, Any], args: argparse.Namespace, load: tuple[str, str]) -> None:
    opened = summary["initialized_after_kill"]
    ready, idle = summary["query_ready_after_kill"], summary["idle_after_kill"]
    against = summary["against_clean_run"]
    print(
        f"## Crash safety — {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, "
        f"{os.cpu_count()} cores, load {load[0]} → {load[1]}\n"
    )
    print(f"{summary['restarts']} restarts, {summary['kills']} kills -9 ({summary['killed_in']}), ")
    print(f"{summary['kills_while_editing']} of them while files were edited; {summary['edits']} edits\n")
    print("| check | found |")
    print("|---|---|")
    print(f"| restarts after which the index was broken | {summary['broken_after_kill']} |")
    print(f"| complete runs leaving work undone | {summary['unfinished_after_complete_run']} |")
    for name, count in against.items():
        print(f"| {name.replace('_', ' ')} vs a clean run ({summary['rows']} rows) | {count} |")
    print(
        f"| initialize answered after a kill, p50 / p95 / max (n={opened['n']}) | "
        f"{opened['p50']:.2f} / {opened['p95']:.2f} / {opened['max']:.2f} s |"
    )
    print(
        f"| query-ready after a kill, p50 / p95 / max (n={ready['n']}) | "
        f"{ready['p50']:.2f} / {ready['p95']:.2f} / {ready['max']:.2f} s |"
    )
    clean = summary["query_ready_after_clean_exit"]
    print(
        f"| query-ready after a clean exit, p50 / max (n={clean['n']}) | "
        f"{clean['p50']:.2f} / {clean['max']:.2f} s |"
    )
    if idle["n"]:
        annotated = [count for count in summary["idle_after_kill_annotated"] if count is not None]
        print(
            f"| idle after a kill, p50 / p95 / max (n={idle['n']}; {min(annotated)}-{max(annotated)} "
            f"files left to annotate) | {idle['p50']:.1f} / {idle['p95']:.1f} / {idle['max']:.1f} s |"
        )


async def main_async(args: argparse.Namespace) -> int:
    scratch = Path(tempfile.mkdtemp(prefix="filescout-crash-"))
    root = (args.workspace or scratch / "ws").resolve()
    if not root.exists():
        print(f"generating {args.files} files in {root} ...", file=sys.stderr, flush=True)
        generate(root, args.files, seed=7)
        if args.git:
            subprocess.run(["git", "init", "-q", str(root)], check=True)
    cache = scratch / "cache"
    load_before = load_average()
    try:
        summary = await Bench(args, root, cache).run()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary["load"] = [load_before, load_average()]
    summary["command"] = " ".join(sys.argv)
    if args.out is not None:
        args.out.write_text(json.dumps(summary, indent=1, default=str))
    report(summary, args, (load_before, summary["load"][1]))
    clean = (
        not summary["broken_after_kill"]
        and not summary["unfinished_after_complete_run"]
        and not any(summary["against_clean_run"].values())
    )
    return 0 if clean else 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--workspace", type=Path, default=None, help="reuse (and change) this one; default: a new one"
    )
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--restarts", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--git", action="store_true", help="make a new workspace a git repository")
    parser.add_argument("--out", type=Path, default=None, help="write every restart's figures as JSON")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
