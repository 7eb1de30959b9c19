"""What Linux's /proc says about a process: memory, CPU time, descriptors, threads, children.

Every reader returns a neutral value (None, 0, an empty list) once the process is gone, since a
benchmark samples processes that come and go (workers, the server after a kill)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def status_fields(pid: int) -> dict[str, str]:
    """/proc/PID/status as name → value ("VmRSS" → "1234 kB"); empty once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return {name: value.strip() for name, _, value in (line.partition(":") for line in text.splitlines())}


def kib(fields: dict[str, str], name: str) -> int:
    """A "1234 kB" field of status_fields in KiB; 0 when absent."""
    value = fields.get(name, "")
    return int(value.split()[0]) if value else 0


def rss_mb(pid: int) -> float:
    """Resident memory now (VmRSS), MB; nan once the process is gone."""
    fields = status_fields(pid)
    return kib(fields, "VmRSS") / 1024 if fields else float("nan")


def peak_rss_mb(pid: int) -> float:
    """The most resident memory the process has had (VmHWM), MB; nan once it is gone."""
    fields = status_fields(pid)
    return kib(fields, "VmHWM") / 1024 if fields else float("nan")


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in kB from smaps_rollup: PSS shares pages between processes fairly, so the
    PSS of a process tree adds up to what it holds at once; (0, 0) once it is gone."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return 0, 0
    values = {line.split(":")[0]: int(line.split()[1]) for line in rollup if line.endswith("kB")}
    return values.get("Rss", 0), values.get("Pss", 0)


def _stat_fields(path: str) -> list[str] | None:
    """The fields of a stat file after the command name (which may hold spaces and parentheses)."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def parent_of(pid: int) -> int | None:
    fields = _stat_fields(f"/proc/{pid}/stat")
    return int(fields[1]) if fields else None


def cpu_seconds(pid: int, tid: int | None = None) -> float:
    """User + system CPU time of a process (or one of its threads), seconds; 0 once it is gone."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    fields = _stat_fields(path)
    return (int(fields[11]) + int(fields[12])) / TICKS if fields else 0.0


def thread_cpu(pid: int) -> list[tuple[str, int, float]]:
    """(thread name, thread id, CPU seconds) of each thread of `pid`, busiest first."""
    try:
        tids = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []
    found = []
    for tid in tids:
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
        except OSError:
            continue
        found.append((name, tid, cpu_seconds(pid, tid)))
    return sorted(found, key=lambda item: -item[2])


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it, found from every process's parent in /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (parent := parent_of(int(entry))) is not None:
            parents[int(entry)] = parent
    found, frontier = [pid], {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found += sorted(frontier)
    return found


def command_line(pid: int) -> bytes:
    """The process's argv joined by NULs; b"" once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as `uptime` shows them."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


@dataclass(frozen=True)
class ProcessSample:
    at: float
    rss_mb: float
    fds: int
    threads: int


def sample_process(pid: int) -> ProcessSample | None:
    """RSS, open file descriptors and threads of a live process, or None once it is gone."""
    fields = status_fields(pid)
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    if not fields:
        return None
    return ProcessSample(time.perf_counter(), kib(fields, "VmRSS") / 1024, fds, int(fields["Threads"]))


@dataclass
class Sampler:
    """Samples a process every `every` seconds until it is gone or the task is cancelled;
    `label` tags each sample (e.g. with the phase the server announced)."""

    pid: int
    every: float = 0.5
    label: Callable[[], str] = lambda: ""
    samples: list[tuple[str, ProcessSample]] = field(default_factory=list)

    async def run(self) -> None:
        while (sample := sample_process(self.pid)) is not None:
            self.samples.append((self.label(), sample))
            await asyncio.sleep(self.every)

    def of(self, label: str | None = None) -> list[ProcessSample]:
        return [sample for tag, sample in self.samples if label is None or tag == label]
