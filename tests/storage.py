"""For tests of where the index lives and what its storage allows: a workspace's tree as it is
on disk (to prove a run left it untouched), and the server's command run as root without the
capabilities that bypass file permissions (we run as root, and a mode of 0500 means nothing to
root otherwise)."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest

from mounts import on_ci

DROP_FILE_ACCESS_OVERRIDE = [
    "setpriv",
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
    "--",
]
"""Root without the capabilities that let it read any file: permissions apply to it again."""


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under `root` (root included, symlinks not followed): its kind, its mode, and
    its bytes or its link's target. Two equal digests mean nothing was moved, replaced or written."""
    entries: dict[str, str] = {}
    for directory, names, files in os.walk(root, followlinks=False):
        for name in [".", *names, *files]:
            path = Path(directory, name)
            info = path.lstat()
            relative = path.relative_to(root).as_posix()
            if stat.S_ISLNK(info.st_mode):
                described = f"link -> {os.readlink(path)}"
            elif stat.S_ISREG(info.st_mode):
                described = f"file {hashlib.sha256(path.read_bytes()).hexdigest()}"
            else:
                described = f"kind {stat.S_IFMT(info.st_mode):o} ino {info.st_ino}"
            entries[relative] = f"{described} mode {stat.S_IMODE(info.st_mode):o}"
    return entries


def why_permissions_cannot_apply(probe_dir: Path) -> str | None:
    """Why this machine cannot run a process that file permissions apply to, or None."""
    probe = probe_dir / "probe"
    probe.write_text("x")
    probe.chmod(0)
    try:
        result = subprocess.run(
            [*DROP_FILE_ACCESS_OVERRIDE, "cat", str(probe)], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"setpriv cannot run: {exc}"
    finally:
        probe.unlink()
    if result.returncode == 0:
        return "a process without CAP_DAC_OVERRIDE still reads a file of mode 000 here"
    if b"Permission denied" not in result.stderr:
        return f"setpriv cannot drop capabilities here: {result.stderr.decode(errors='replace').strip()}"
    return None


def without_file_access_override(command: list[str], probe_dir: Path) -> list[str]:
    """`command` run so that file permissions apply to it; the test is skipped where that cannot
    be done, and fails instead on CI."""
    reason = why_permissions_cannot_apply(probe_dir)
    if reason is not None:
        if on_ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return [*DROP_FILE_ACCESS_OVERRIDE, *command]
