"""Generate a realistic synthetic workspace (see harness/workspaces.py for what it holds).

python bench/make_workspace.py DIR [--files 100000] [--seed 7] [--git] [--vocabulary V]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from harness.workspaces import generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("directory", type=Path)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--git", action="store_true", help="make it a git repository (nothing committed)")
    parser.add_argument("--vocabulary", choices=["realistic", "uniform"], default="realistic")
    args = parser.parse_args(argv)
    if args.directory.exists() and any(args.directory.iterdir()):
        print(f"{args.directory} is not empty", file=sys.stderr)
        return 1
    counts = generate(args.directory, args.files, args.seed, args.vocabulary)
    if args.git:
        subprocess.run(["git", "init", "-q", str(args.directory)], check=True)
    total = sum(len(files) for _, _, files in os.walk(args.directory) if ".git" not in _)
    print(
        f"{args.directory}: {args.files} workspace files ({counts['binary']} binary), "
        f"{counts['ignored']} ignored, {counts['vendored']} vendored; {total} files on disk"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
