"""The one way filescout runs git. A workspace's repository is not trusted: its own
configuration may name programs to run (an fsmonitor hook, a pager), ask for credentials, or
make a read take git's index lock, which a sidecar must never hold against the user's own
commands. Every call here turns those off, never reads the client's stdin, and is bounded."""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

SETTINGS = (
    "core.quotepath=off",  # names as they are (UTF-8), not octal escapes
    "core.fsmonitor=false",  # a repository's hook would run a program of its choosing
    "log.showSignature=false",  # no gpg run for each commit
)
ENVIRONMENT = {
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",  # never wait for a password nobody will type
    "GIT_OPTIONAL_LOCKS": "0",  # a read takes no lock on git's index
}


def command(root: Path, *args: str) -> list[str]:
    settings = [part for setting in SETTINGS for part in ("-c", setting)]
    return ["git", "--no-pager", *settings, "-C", str(root), *args]


def environment() -> dict[str, str]:
    return {**os.environ, **ENVIRONMENT}


def run(
    root: Path, *args: str, timeout: float, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes] | None:
    """git's answer, whatever its exit code; None when it could not run or took too long."""
    try:
        return subprocess.run(
            command(root, *args),
            input=input,
            capture_output=True,
            timeout=timeout,
            check=False,
            env=environment(),
            stdin=None if input is not None else subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("git %s failed: %s", args[0], exc)
        return None


def start(root: Path, args: Sequence[str], *, stderr: IO[bytes]) -> subprocess.Popen[bytes]:
    """git with its output to read as it comes (a long `git log`); raises OSError."""
    return subprocess.Popen(
        command(root, *args),
        stdout=subprocess.PIPE,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
        env=environment(),
    )
