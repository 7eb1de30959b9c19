"""Work a short-lived process cuts short is handed to one background indexer.

An MCP client that starts the server for each call, or a CLI command interrupted mid-way, closes
the workspace while the scan or the annotation backlog is under way; the next process would only
start over and be cut short in turn. Closing instead starts `filescout background-index ROOT`, a
detached process that takes the writer lock once this one lets go of it, finishes the work and
exits (`engine/background_indexer.py`). This module is the one place that starts it: the only
process filescout starts besides git (`vcs/git.py`) and its own worker pool.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

COMMAND = "background-index"
"""The hidden CLI command the background indexer runs as (`filescout.cli`)."""
OPT_OUT = "FILESCOUT_BACKGROUND"
"""Set to 0 (or off, false, no) and work a process leaves is left to the next one."""
LOG_LIMIT = 1 << 20
"""The background log is set aside (one older copy) once it is larger than this."""
_started: list[subprocess.Popen[bytes]] = []
"""Kept so no warning says one is still running when this process lets go of it."""


def enabled(env: Mapping[str, str] = os.environ) -> bool:
    return env.get(OPT_OUT, "").strip().lower() not in {"0", "off", "false", "no"}


def background_lock_path(db_path: Path) -> Path:
    """Held by the background indexer of that index for its whole life, waiting included."""
    return db_path.with_name(db_path.name + ".background")


def log_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".background.log")


def command(root: Path, db_path: Path, env: Mapping[str, str] = os.environ) -> list[str]:
    """The same interpreter (or frozen build) and environment, so the same settings and index."""
    start = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "filescout"]
    level = "debug" if env.get("FILESCOUT_LOG_LEVEL", "").lower() == "debug" else "info"
    return [
        *start,
        "--log-level",
        level,
        COMMAND,
        str(root),
        "--index",
        str(db_path),
        "--after",
        str(os.getpid()),
    ]


def start_background_indexer(root: Path, db_path: Path, env: Mapping[str, str] = os.environ) -> int | None:
    """Start the background indexer for `root`'s index at `db_path`, detached (its own session,
    no terminal, nothing of this process's pipes: a client waiting for this process's output to
    end must not wait for it too); its stderr goes to a log beside the index. Its pid, or None
    when it is switched off, the workspace is gone, or it cannot be started. `env` is what the
    workspace's settings were read from; the index is named outright, so it is the same one."""
    env = {**os.environ, **env, "FILESCOUT_DB_PATH": str(db_path)}
    if not enabled(env) or not root.is_dir():
        return None
    try:
        errors = _open_log(log_path(db_path))
    except OSError as exc:
        log.warning("the work left is not handed on: cannot write %s: %s", log_path(db_path), exc)
        return None
    try:
        with errors:
            process = subprocess.Popen(
                command(root, db_path, env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env=env,
                close_fds=True,
                **_detached(),
            )
    except OSError as exc:
        log.warning("the work left is not handed on: cannot start the background indexer: %s", exc)
        return None
    _started.append(process)
    log.info("work left is handed to a background indexer (pid %d; log %s)", process.pid, log_path(db_path))
    return process.pid


def _open_log(path: Path) -> IO[bytes]:
    """The log, appended to; set aside first when it has grown past LOG_LIMIT."""
    try:
        if path.stat().st_size > LOG_LIMIT:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    return os.fdopen(fd, "ab")


def _detached() -> dict[str, Any]:
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        flags = ("DETACHED_PROCESS", "CREATE_NEW_PROCESS_GROUP")
        return {"creationflags": sum(getattr(subprocess, flag, 0) for flag in flags)}
    return {"start_new_session": True}
