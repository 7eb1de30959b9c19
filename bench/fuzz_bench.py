"""Protocol fuzzing at scale: generated JSON-RPC traffic on both faces, judged message by message.

    python bench/fuzz_bench.py [--messages 10000] [--frames 1000] [--timeout 10] [--faces lsp,mcp]

For each face a real server (`filescout serve`, `filescout mcp`) is started on the sample
workspace of the tests and initialized; then batches of generated messages (bench/harness/fuzz_messages.py,
the generators of tests/e2e/test_fuzz.py) are sent until --messages have gone, and on LSP's stdio
--frames corruptions of the framing itself. Every reply is judged (bench/harness/fuzz_harness.py): each
request must be answered exactly once within --timeout seconds, malformed input with an error,
never with -32603 or a traceback, and after each batch a known-good listing must come back intact.

Reported per face: crashes (the server exited), hangs (a request without a reply within
--timeout s, or a known-good request unanswered), non-error replies to malformed input, -32603
replies, other faults (wrong codes, double or stray replies, tracebacks in the log), and the
server's resident memory, open descriptors and threads (from /proc) after a warm-up of 500
messages, then every 1,000 messages, and at the end. Goals: 0 / 0 / 0 / 0 / 0, and resources
flat: descriptors as after the warm-up, memory within 4 MiB over the second half of the run
(when caches have filled). Threads are reported, not judged: the executors start their workers
on demand, so the count rises by a few and then stays (run with --messages 40000 to see it). The
generators are seeded, so a run sends the same messages every time.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from harness.fuzz_harness import Findings, Fuzzer, Resources
from harness.fuzz_messages import Face, batches, lsp_messages, mcp_messages, raw_frames
from harness.procfs import load_average
from harness.support import make_workspace

WARM_UP = 500  # messages before the first reading of the server's resources
SAMPLE_EVERY = 1_000  # messages between readings of the server's resources
SETTLE_SECONDS = 2.0
RSS_GOAL_KIB = 4 * 1024  # growth allowed over the second half of the run


def drive(
    strategy: st.SearchStrategy[Any], each: Callable[[Any], None], done: Callable[[], bool], first_seed: int
) -> None:
    """Feed generated values to `each` until `done()`; one Hypothesis run per seed, in order."""
    run_seed = first_seed
    while not done():

        @settings(
            max_examples=500,
            database=None,
            deadline=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @seed(run_seed)
        @given(strategy)
        def run(value: Any) -> None:
            if not done():
                each(value)

        run()
        run_seed += 1


def fuzz_face(face: Face, base: Path, args: argparse.Namespace) -> dict[str, Any]:
    root = make_workspace(base / face / "ws", git=True)
    findings = Findings()
    fuzzer = Fuzzer(
        face,
        root,
        base / face / "cache",
        base / face / "stderr.log",
        reply_timeout=args.timeout,
        findings=findings,
    )
    fuzzer.initialize()
    started = fuzzer.resources()
    messages = batches(lsp_messages() if face == "lsp" else mcp_messages())
    drive(messages, fuzzer.run_batch, lambda: findings.messages >= WARM_UP, args.seed)
    time.sleep(SETTLE_SECONDS)
    samples = [(findings.messages, fuzzer.resources())]

    def batch_and_sample(batch: Any) -> None:
        fuzzer.run_batch(batch)
        if findings.messages >= samples[-1][0] + SAMPLE_EVERY:
            samples.append((findings.messages, fuzzer.resources()))

    began = time.perf_counter()
    total = args.messages + WARM_UP
    drive(messages, batch_and_sample, lambda: findings.messages >= total, args.seed + 1000)
    if face == "lsp":
        drive(raw_frames(), fuzzer.run_frames, lambda: findings.frames >= args.frames, args.seed + 2000)
    elapsed = time.perf_counter() - began
    time.sleep(SETTLE_SECONDS)
    samples.append((findings.messages, fuzzer.resources()))
    exit_code = fuzzer.wire.close()
    return {
        "face": face,
        "findings": findings,
        "started": started,
        "samples": samples,
        "elapsed": elapsed,
        "exit_code": exit_code,
    }


def resources_text(resources: Resources) -> str:
    return f"{resources.rss_kib / 1024:.1f} MiB, {resources.fds} fds, {resources.threads} threads"


def report(outcome: dict[str, Any]) -> bool:
    findings: Findings = outcome["findings"]
    samples: list[tuple[int, Resources]] = outcome["samples"]
    warm, middle, ended = samples[0][1], samples[len(samples) // 2][1], samples[-1][1]
    late_growth = ended.rss_kib - middle.rss_kib
    flat = late_growth <= RSS_GOAL_KIB and ended.fds == warm.fds
    print(f"\n## {outcome['face'].upper()}")
    print(f"messages: {findings.messages} (incl. {WARM_UP} warm-up); frame corruptions: {findings.frames}")
    print(f"time: {outcome['elapsed']:.1f} s after warm-up; exit code at the end: {outcome['exit_code']}")
    print(f"crashes: {findings.crashes}")
    print(f"hangs: {findings.hangs}")
    print(f"non-error replies to malformed input: {findings.accepted_malformed}")
    print(f"-32603 replies: {findings.internal_errors}")
    print(f"other faults: {findings.other}")
    print(f"resources after start-up: {resources_text(outcome['started'])}")
    print(f"resources after warm-up:  {resources_text(warm)}")
    print(
        f"resources half-way:       {resources_text(middle)} (after {samples[len(samples) // 2][0]} messages)"
    )
    print(f"resources at the end:     {resources_text(ended)}")
    print(
        f"RSS growth: {(ended.rss_kib - warm.rss_kib) / 1024:+.1f} MiB since warm-up, {late_growth / 1024:+.1f} MiB over the second half"
    )
    print(
        "RSS series (messages: MiB/threads): "
        + ", ".join(f"{count}: {res.rss_kib / 1024:.1f}/{res.threads}" for count, res in samples)
    )
    for example in findings.examples:
        print(f"  - {example[:800]}")
    met = findings.total == 0 and flat and outcome["exit_code"] == 0
    print(
        "goals (no crash, hang, accepted malformed input, -32603 or other fault; fds as after warm-up; "
        f"RSS within {RSS_GOAL_KIB // 1024} MiB over the second half): {'met' if met else 'NOT met'}"
    )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=10_000, help="generated messages per face")
    parser.add_argument("--frames", type=int, default=1_000, help="framing corruptions on LSP's stdio")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds a reply may take")
    parser.add_argument("--faces", default="lsp,mcp")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"# filescout protocol fuzzing, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"load average at start: {load_average()}")
    met = True
    with tempfile.TemporaryDirectory(prefix="filescout-fuzz-") as temp:
        for face in args.faces.split(","):
            met = report(fuzz_face(face, Path(temp), args)) and met  # type: ignore[arg-type]
    print(f"\nload average at the end: {load_average()}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
