"""Small file systems of the tests' own, for storage faults no chmod can fake as root: a tmpfs
remounted read-only, a tmpfs too small for the index. Mounting needs root (or CAP_SYS_ADMIN);
without it the tests that need one are skipped on a developer's machine and fail on CI."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


class Mounts:
    """tmpfs mounts under one temporary directory, all unmounted at the end."""

    def __init__(self, base: Path) -> None:
        self._base = base
        self._mounted: list[Path] = []

    def tmpfs(self, name: str, size: str) -> Path:
        target = self._base / name
        target.mkdir(parents=True)
        try:
            result = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(target)],
                capture_output=True,
                text=True,
                timeout=30,
            )
            error = result.stderr.strip() if result.returncode else ""
        except (OSError, subprocess.SubprocessError) as exc:
            error = str(exc)
        if error:
            reason = f"cannot mount a tmpfs ({error}): these tests need root or CAP_SYS_ADMIN"
            if on_ci():
                pytest.fail(reason, pytrace=False)
            pytest.skip(reason)
        self._mounted.append(target)
        return target

    @staticmethod
    def read_only(target: Path) -> None:
        subprocess.run(
            ["mount", "-o", "remount,ro", str(target)], check=True, capture_output=True, timeout=30
        )

    def unmount_all(self) -> None:
        for target in reversed(self._mounted):
            subprocess.run(["umount", "-l", str(target)], check=False, capture_output=True, timeout=30)
        self._mounted.clear()


def mounts_under(base: Path) -> Iterator[Mounts]:
    """The body of a test module's `mounts` fixture."""
    mounts = Mounts(base / "mounts")
    try:
        yield mounts
    finally:
        mounts.unmount_all()


def fill_workspace(root: Path, files: int = 400, words: int = 200) -> None:
    """Files of distinct random words: an index of them needs far more room than their count."""
    import random
    import string

    generator = random.Random(7)
    for index in range(files):
        text = " ".join("".join(generator.choices(string.ascii_lowercase, k=8)) for _ in range(words))
        path = root / "bulk" / f"part_{index:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""{text}"""\n\ndef part_{index}():\n    return {index}\n')
