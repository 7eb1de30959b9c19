"""One worker's work over a whole tree, in process: every file read as a scan's worker reads it
(read, hash, classify, content words), then annotated as an annotation job is, each file once, as
in a cold index. Reports CPU per file for both and the process's peak RSS, for settings of the
identifier cache (`text.INDEX_SPLIT_CACHE`), each in a fresh process, alternating.

    python bench/worker_pass_bench.py WORKSPACE [--identifier-cache 50000 16000 4000 1] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

READ_CHUNK = 128
JOB_SIZE = 64


def one_pass(root: Path, cache: int) -> dict[str, float]:
    import filescout.core.words as text

    text.INDEX_SPLIT_CACHE = cache
    from filescout.annotate.jobs import AnnotationJob, annotate_batch_packed
    from filescout.core.records import PendingFile
    from filescout.scan.ignore import IgnoreRules
    from filescout.scan.tree import enumerate_files, read_outcomes

    listed = enumerate_files(root, IgnoreRules.for_workspace(root)).paths
    sized = [(path, os.lstat(root / path).st_size) for path in listed]
    started = time.process_time()
    pending = []
    for start in range(0, len(sized), READ_CHUNK):
        for outcome in read_outcomes((str(root), sized[start : start + READ_CHUNK], 1 << 20)):
            record = outcome.record
            if record is not None and record.skip_reason is None:
                pending.append(
                    PendingFile(record.path, record.hash, record.language, record.kind, record.size)
                )
    read = time.process_time()
    for start in range(0, len(pending), JOB_SIZE):
        annotate_batch_packed(AnnotationJob(str(root), pending[start : start + JOB_SIZE]))
    annotated = time.process_time()
    return {
        "cache": cache,
        "files": len(sized),
        "annotated": len(pending),
        "read_ms_per_file": 1000 * (read - started) / max(1, len(sized)),
        "annotate_ms_per_file": 1000 * (annotated - read) / max(1, len(pending)),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--identifier-cache", type=int, nargs="+", default=[50_000, 16_000, 4_000, 1])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child's setting
    args = parser.parse_args()
    root = args.workspace.resolve()
    if args.one is not None:
        print(json.dumps(one_pass(root, args.one)))
        return
    print(f"# {root}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print("| identifier cache | files | read, ms a file | annotate, ms a file | peak RSS |")
    print("|---|---|---|---|---|")
    for _ in range(args.rounds):
        for cache in args.identifier_cache:
            child = subprocess.run(
                [sys.executable, __file__, str(root), "--one", str(cache)],
                check=True,
                capture_output=True,
                text=True,
            )
            found = json.loads(child.stdout)
            print(
                f"| {cache:,} | {found['files']:,} | {found['read_ms_per_file']:.3f} | "
                f"{found['annotate_ms_per_file']:.3f} | {found['peak_rss_mb']:.0f} MB |",
                flush=True,
            )


if __name__ == "__main__":
    main()
