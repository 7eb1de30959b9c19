"""The references a benchmark quotes its figures against, measured in the same run: `ctags -R`
over the same files, and reading the whole tree."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CTAGS_EXCLUDES = (".git", "node_modules", "dist")
"""What filescout leaves out of this tree too (git's directory, dependencies, the ignored build
output), so ctags parses the same files."""


def timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def ctags_seconds(root: Path) -> float | None:
    """universal-ctags over the same files; None when it is not installed."""
    ctags = shutil.which("ctags")
    if ctags is None:
        return None
    with tempfile.TemporaryDirectory(prefix="filescout-bench-ctags-") as temporary:
        command = [ctags, "-R", "-f", str(Path(temporary) / "tags")]
        command += [f"--exclude={name}" for name in CTAGS_EXCLUDES]
        return timed([*command, "."], root)


def warm_up(root: Path) -> None:
    """Read the whole tree so the page cache holds it, as right after a checkout."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    for name in listing.decode("utf-8", "surrogateescape").split("\0"):
        if name:
            try:
                (root / name).read_bytes()
            except OSError:
                pass


def drop_caches() -> bool:
    """Empty the kernel's page, dentry and inode caches (root only); False if not allowed."""
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True
