"""CLI benchmark: how long `filescout find "QUESTION" --no-model` takes from a terminal, a fresh
process each time (interpreter start, imports, the index brought up to date, the answer), on work
trees of real repositories made from local clones.

    python bench/cli_bench.py --repos DIR [--repo OWNER/NAME ...] [--runs 15]
        [--before TREE] [--after TREE] [--json OUT]

DIR holds the clones (owner+name/, as bench/harness/repositories.py finds them); each work tree is
a git checkout of the clone's HEAD, with its history. For each repository: a cold `filescout index`
(timed, reported, not the figure), then N rounds, each a run of every case, the questions in turn:

    touched    one source file rewritten before the round: the run must read it again
    unchanged  nothing changed since the last run on that index: it is current
    writer     a `filescout mcp ROOT` (stdin kept open) keeps a copy of the index: the run asks
               it through its door, and it reads the round's touched file again first (code
               from before the door answers from the writer's index, as it is)

Wall time from spawn to exit, and CPU time (the process and what it waited for). With --before
TREE (a tree with `server/` and `protocol/`, e.g. a `git worktree` of an earlier commit), that
code runs too, with its own indexes, run by run next to this code (which goes first alternates),
so that load drifting on a shared machine hits both alike; --after TREE runs the code under test
from such a tree too (a checkout with other work in progress). Bytecode is compiled once for both
(PYTHONPYCACHEPREFIX under the work folder), as an installed package has it; the first run of
each code is a warm-up, not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from harness import launch, repositories
from harness.stats import percentile


@dataclass(frozen=True)
class Repository:
    name: str
    questions: tuple[str, ...]
    touched: str
    """A source file the `touched` case rewrites before each run."""


REPOSITORIES = (
    Repository(
        "pytest-dev/pytest",
        ("assertion rewriting", "fixture teardown order", "junit xml report", "parametrize ids"),
        "src/_pytest/junitxml.py",
    ),
    Repository(
        "python/mypy",
        ("type narrowing with isinstance", "incremental cache", "error message formatting", "plugin hooks"),
        "mypy/errors.py",
    ),
    Repository(
        "sqlfluff/sqlfluff",
        ("indentation rules", "jinja templater", "snowflake dialect parsing", "fix command line"),
        "src/sqlfluff/cli/commands.py",
    ),
    Repository(
        "moby/moby",
        ("container network bridge", "image pull registry auth", "volume mounts", "daemon logging driver"),
        "daemon/logger/logger.go",
    ),
    Repository(
        "babel/babel",
        ("typescript decorators parsing", "source map generation", "preset env targets", "class properties"),
        "packages/babel-generator/src/index.ts",
    ),
)
CASES = ("touched", "unchanged", "writer")
WRITER_ANSWERED = ("answered by the process that keeps this index", "answering from its index")
"""In the order each round runs them: a touched run leaves the index current for the next."""
COMMENT = {".py": "#", ".go": "//"}
WRITER_READY_TIMEOUT = 600.0


@dataclass
class Code:
    """One code tree under test, with its own index of each work tree."""

    name: str
    tree: Path | None
    """None: the installed code (this checkout)."""
    env: dict[str, str] = field(default_factory=dict)
    writer_env: dict[str, str] = field(default_factory=dict)
    """For the writer case: the copy of the index the writer keeps."""


def code_env(tree: Path | None, cache: Path, pycache: Path) -> dict[str, str]:
    """The environment that runs the code in `tree` with its index under `cache`: no model, and
    bytecode kept (in `pycache`) even where the shell says not to write it."""
    env = launch.server_env(cache)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    if tree is not None:
        env["PYTHONPATH"] = f"{tree / 'server'}{os.pathsep}{tree / 'protocol'}"
    return env


def timed(arguments: list[str], env: dict[str, str]) -> tuple[float, str, str]:
    """Run to the end: (wall seconds, stdout, stderr). A failure stops the benchmark: a figure of
    a failing run would mean nothing."""
    started = time.perf_counter()
    done = subprocess.run(arguments, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=1800)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(arguments)} failed ({done.returncode}):\n{done.stderr.decode()[-3000:]}")
    return wall, done.stdout.decode(), done.stderr.decode()


class ChildCpu:
    """CPU time of the processes this one waited for (a run, and the git it started), one run at
    a time."""

    def __init__(self) -> None:
        self._last = self._now()

    @staticmethod
    def _now() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def since(self) -> float:
        now = self._now()
        spent, self._last = now - self._last, now
        return spent


def find_command(root: Path, question: str, *, verbose: bool = False) -> list[str]:
    """`verbose` (the log at info) says who answered: the writer through its door, or this
    process from the writer's index."""
    return launch.command(
        *(["--log-level", "info"] if verbose else []), "find", str(root), question, "--no-model"
    )


def index_path(output: str) -> Path:
    """Where `filescout index` says the index is (`N files in PATH`)."""
    first = output.splitlines()[0]
    return Path(first.split(" files in ", 1)[1].strip())


def touch(path: Path, original: bytes, count: int) -> None:
    """Rewrite the file: its content as it was, and one comment line more that differs each time."""
    path.write_bytes(original + f"\n{COMMENT.get(path.suffix, '#')} touched {count}\n".encode())


class Writer:
    """`filescout mcp ROOT` with stdin kept open: the process that writes the index, as an editor's
    server or an agent's would, while the runs answer from it."""

    def __init__(self, root: Path, env: dict[str, str], lock: Path, log: Path) -> None:
        arguments = launch.command("--log-level", "info", "mcp", str(root))
        log.unlink(missing_ok=True)
        self.process = launch.popen(arguments, env, stderr=log)
        self._lock, self._log = lock, log

    def wait_ready(self) -> None:
        """Until it holds the lock and its first pass has stored the scan, and a moment more."""
        deadline = time.monotonic() + WRITER_READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"the writer exited:\n{self._log.read_text()[-3000:]}")
            holder = self._lock.read_text().strip() if self._lock.exists() else ""
            if holder == str(self.process.pid) and "scan:" in self._log.read_text():
                time.sleep(1.0)
                return
            time.sleep(0.1)
        raise SystemExit("the writer did not finish its first pass")

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # the MCP session ends
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def summary(values: list[float]) -> dict[str, float]:
    return {"median": percentile(values, 0.5), "p90": percentile(values, 0.9)}


def bench_repository(repo: Repository, args: argparse.Namespace, codes: list[Code]) -> dict[str, object]:
    parent = subprocess.run(
        ["git", f"--git-dir={repositories.git_dir(args.repos, repo.name)}", "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    root = repositories.workspace_with_history(args.work / "trees", args.repos, repo.name, parent)
    git = ["git", "-C", str(root)]
    files = subprocess.run([*git, "ls-files", "-z"], capture_output=True, check=True).stdout.count(b"\0")
    touched = root / repo.touched
    original = subprocess.run([*git, "show", f"HEAD:{repo.touched}"], capture_output=True, check=True).stdout
    touched.write_bytes(original)  # as checked out, whatever an interrupted run left
    cpu = ChildCpu()
    result: dict[str, object] = {"commit": parent, "files": files, "index_seconds": {}}
    writers: dict[str, Writer] = {}
    try:
        for code in codes:
            cache = args.work / "cache" / code.name / repo.name.replace("/", "+")
            shutil.rmtree(cache, ignore_errors=True)
            code.env = code_env(code.tree, cache, args.work / "pycache")
            wall, stdout, _ = timed(launch.command("index", str(root)), code.env)
            result["index_seconds"][code.name] = round(wall, 3)  # type: ignore[index]
            print(
                f"{repo.name}: {code.name} indexed {files} files in {wall:.1f} s", file=sys.stderr, flush=True
            )
            if "writer" in args.cases:
                # The writer keeps a copy of the index: the other cases' runs write their own.
                kept = args.work / "cache" / f"{code.name}-writer" / repo.name.replace("/", "+")
                shutil.rmtree(kept, ignore_errors=True)
                shutil.copytree(cache, kept)
                code.writer_env = code_env(code.tree, kept, args.work / "pycache")
                lock = Path(str(index_path(stdout)).replace(str(cache), str(kept), 1) + ".lock")
                log = args.work / f"writer-{code.name}.log"
                writers[code.name] = Writer(root, code.writer_env, lock, log)
            timed(find_command(root, repo.questions[0]), code.env)  # bytecode, page cache
        for writer in writers.values():
            writer.wait_ready()
        walls: dict[str, dict[str, list[float]]] = {
            case: {code.name: [] for code in codes} for case in args.cases
        }
        cpus: dict[str, dict[str, list[float]]] = {
            case: {code.name: [] for code in codes} for case in args.cases
        }
        for run in range(args.runs):
            question = repo.questions[run % len(repo.questions)]
            order = codes if run % 2 == 0 else codes[::-1]  # neither code always goes first
            if "touched" in args.cases:
                touch(touched, original, run)  # each code's own index has it to read again
            for case in args.cases:  # touched before unchanged: that run leaves the index current
                for code in order:
                    env = code.writer_env if case == "writer" else code.env
                    cpu.since()
                    wall, stdout, stderr = timed(find_command(root, question, verbose=case == "writer"), env)
                    cpus[case][code.name].append(cpu.since())
                    walls[case][code.name].append(wall)
                    if "-- " not in stdout:
                        raise SystemExit(f"{code.name} gave no answer:\n{stdout}\n{stderr}")
                    if case == "writer" and not any(said in stderr for said in WRITER_ANSWERED):
                        raise SystemExit(f"{code.name} did not answer from the writer's index:\n{stderr}")
            shown = "; ".join(
                f"{case} "
                + ", ".join(f"{name} {values[-1] * 1000:.0f}" for name, values in walls[case].items())
                for case in args.cases
            )
            print(f"{repo.name} run {run + 1}: {shown} ms", file=sys.stderr, flush=True)
    finally:
        for writer in writers.values():
            writer.stop()
        touched.write_bytes(original)
    result["cases"] = {
        case: {
            code.name: {
                "seconds": summary(walls[case][code.name]),
                "cpu_seconds": summary(cpus[case][code.name]),
                "runs": [round(value, 4) for value in walls[case][code.name]],
            }
            for code in codes
        }
        for case in args.cases
    }
    return result


def table(results: dict[str, dict[str, object]], codes: list[Code]) -> str:
    header = f"{'repository':<20} {'files':>6}  {'case':<10}" + "".join(
        f"  {code.name + ' p50/p90 ms':>20}  {'cpu p50':>7}" for code in codes
    )
    lines = [header]
    for name, result in results.items():
        for case, by_code in result["cases"].items():  # type: ignore[attr-defined]
            line = f"{name:<20} {result['files']:>6}  {case:<10}"
            for code in codes:
                figures = by_code[code.name]
                wall, cpu = figures["seconds"], figures["cpu_seconds"]
                line += f"  {wall['median'] * 1000:>9.0f} / {wall['p90'] * 1000:<8.0f}"
                line += f"  {cpu['median'] * 1000:>7.0f}"
            lines.append(line)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", type=Path, required=True, help="the folder of clones (owner+name/)")
    parser.add_argument(
        "--repo",
        action="append",
        choices=[repo.name for repo in REPOSITORIES],
        help="only these repositories (default: all five)",
    )
    parser.add_argument("--runs", type=int, default=15, help="runs of each case (default: 15)")
    parser.add_argument("--case", dest="cases", action="append", choices=CASES, help="only these cases")
    parser.add_argument("--before", type=Path, help="a tree with server/ and protocol/: the code to compare")
    parser.add_argument(
        "--after", type=Path, help="such a tree for the code under test (default: the installed code)"
    )
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / ".work" / "cli")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    args.cases = [case for case in CASES if case in (args.cases or CASES)]
    args.work = args.work.resolve()
    codes = [Code("after", args.after.resolve() if args.after is not None else None)]
    if args.before is not None:
        codes.insert(0, Code("before", args.before.resolve()))
    chosen = [repo for repo in REPOSITORIES if not args.repo or repo.name in args.repo]
    results = {repo.name: bench_repository(repo, args, codes) for repo in chosen}
    print(table(results, codes))
    if args.json is not None:
        report = {
            "date": date.today().isoformat(),
            "cpus": os.cpu_count(),
            "load": os.getloadavg()[0],
            "runs": args.runs,
            "repositories": results,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
