"""Where a workspace's door is: a Unix socket in a directory only this user may enter.

The name is a digest of the workspace root and of the cache settings, so a command finds the
door of the process that keeps the same index it would open itself. Standard library only: the
command computes this before it imports anything of its own."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path

CACHE_VARIABLES = ("FILESCOUT_CACHE_DIR", "XDG_CACHE_HOME")
"""What decides where a workspace's index is kept, besides its root (engine/settings.py)."""
SUFFIX = ".door"


def doors_directory(env: Mapping[str, str], *, create: bool) -> Path | None:
    """The directory that holds this user's doors: the session's runtime directory when there is
    one, else one of the user's own under the temporary directory. None when it is missing (and
    not to be created) or anyone else could enter it: a door there would let them in."""
    runtime = env.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime and os.path.isabs(runtime) else None
    directory = (
        base / "filescout"
        if base is not None and base.is_dir()
        else Path(env.get("TMPDIR") or "/tmp") / f"filescout-{os.getuid()}"
    )
    if create:
        try:
            directory.mkdir(mode=0o700, exist_ok=True)
        except OSError:
            return None
    return directory if private(directory) else None


def private(path: Path) -> bool:
    """Whether `path` is a real directory of this user's that no one else may enter."""
    try:
        found = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o077


def door_path(root: Path, env: Mapping[str, str], *, create: bool = False) -> Path | None:
    """The socket of the door to `root`'s index (resolved), or None where doors cannot be kept
    (no Unix sockets, no private directory, a path too long for a socket's address)."""
    if os.name != "posix":
        return None
    directory = doors_directory(env, create=create)
    if directory is None:
        return None
    key = "\0".join([str(root), *(env.get(name, "") for name in CACHE_VARIABLES)])
    path = directory / (hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32] + SUFFIX)
    return path if len(os.fsencode(path)) < 100 else None  # sun_path holds 104-108 bytes


def open_door(root: Path, env: Mapping[str, str]) -> Path | None:
    """`root`'s door when a socket of this user's is there (someone may listen on it), else
    None: what a command checks before it loads anything to connect with."""
    path = door_path(root, env)
    if path is None:
        return None
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return path if stat.S_ISSOCK(found.st_mode) and found.st_uid == os.getuid() else None
