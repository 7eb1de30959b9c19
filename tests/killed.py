"""A child process that runs a script and kills itself (SIGKILL) at the point it chooses: what a
crash at that point leaves behind, for the test to open again."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


async def run_until_killed(script: str, *args: str) -> None:
    """Run `script` in a new Python, with the tests' helpers and the bench's importable, and
    check that it died of SIGKILL (its output on failure)."""
    found = os.pathsep.join(str(folder) for folder in (TESTS / "unit", TESTS, TESTS.parent / "bench"))
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", script, *args],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": found},
    )
    assert done.returncode == -9, done.stderr.decode()
