"""How the tests and benchmarks start filescout: one command line and one environment."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

SERVE = [sys.executable, "-m", "filescout", "serve"]

# Set in a developer's shell, these would make a run use a real model; a benchmark names its model.
MODEL_VARIABLES = ("FILESCOUT_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "FILESCOUT_API_KEY")


def command(face: str = "serve", *arguments: str) -> list[str]:
    """`python -m filescout FACE ARGUMENTS...` with this interpreter (face: serve, mcp, index, ...)."""
    return [sys.executable, "-m", "filescout", face, *arguments]


MODULES_PROBE = (
    "import atexit, os, runpy, sys\n"
    "atexit.register(lambda: open(os.environ['FILESCOUT_TEST_MODULES'], 'w').write('\\n'.join(sys.modules)))\n"
    "sys.argv = ['filescout', *sys.argv[1:]]\n"
    "runpy.run_module('filescout', run_name='__main__', alter_sys=True)\n"
)


def probed(*arguments: str) -> list[str]:
    """`command`, which on the way out writes the names of the modules the process imported to
    the file named by FILESCOUT_TEST_MODULES."""
    return [sys.executable, "-c", MODULES_PROBE, *arguments]


def server_env(
    cache: Path,
    extra: Mapping[str, str] | None = None,
    *,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a server whose index lives under `cache`, with no model unless `extra`
    names one. `base` replaces this process's environment (e.g. to run another code tree)."""
    environment = {
        name: value
        for name, value in (base if base is not None else os.environ).items()
        if name not in MODEL_VARIABLES
    }
    environment.update({"FILESCOUT_CACHE_DIR": str(cache), **(extra or {})})
    return environment


async def spawn(
    arguments: Sequence[str],
    env: Mapping[str, str],
    *,
    stderr: Path | None = None,
) -> asyncio.subprocess.Process:
    """A server with piped stdin and stdout; its stderr appended to `stderr`, or dropped."""
    log: IO[bytes] | None = open(stderr, "ab") if stderr else None  # noqa: SIM115 - the child keeps it
    try:
        return await asyncio.create_subprocess_exec(
            *arguments,
            env=dict(env),
            limit=1 << 26,  # a page of 1,000 files with summaries is one long line of JSON
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log if log else asyncio.subprocess.DEVNULL,
        )
    finally:
        if log:
            log.close()


def popen(
    arguments: Sequence[str], env: Mapping[str, str], *, stderr: Path | None = None
) -> subprocess.Popen[bytes]:
    """The same, for code that reads the server from threads instead of an event loop."""
    log: IO[bytes] | None = open(stderr, "ab") if stderr else None  # noqa: SIM115 - the child keeps it
    try:
        return subprocess.Popen(
            list(arguments),
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log if log else subprocess.DEVNULL,
        )
    finally:
        if log:
            log.close()
