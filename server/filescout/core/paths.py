"""Workspace-relative paths: the only form in which paths enter or leave the engine.

Everything a caller hands us is normalised here, and anything that would reach outside the
workspace root is refused before it touches the file system.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from urllib.parse import unquote, urlparse

from filescout.core.errors import InvalidParams


def uri_to_path(uri: str, *, field: str | None = None) -> Path:
    """Turn a `file://` URI into a local path. `field` names where the URI came from, for the
    message when it is refused."""
    where = f"{field}: " if field else ""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise InvalidParams(f"{where}unsupported URI scheme {parsed.scheme!r} in {uri!r}")
    path = unquote(parsed.path)
    if "\0" in path:  # no file system call accepts one: refuse it here, not deep in a stat
        raise InvalidParams(f"{where}{uri!r} names a path with a NUL character")
    if os.name == "nt" and path.startswith("/") and len(path) > 2 and path[2] == ":":
        path = path[1:]
    return Path(path)


def to_relative(root: Path, value: str, *, field: str) -> str:
    """Normalise `value` (relative path, absolute path or file URI) to a workspace-relative
    POSIX path, refusing anything outside `root`. The empty string means the root itself."""
    if "\0" in value:
        raise InvalidParams(f"{field}: {value!r} contains a NUL character")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # JSON can spell a lone surrogate; no indexed name holds one
            raise InvalidParams(f"{field}: {value!r} is not valid Unicode (a lone surrogate)") from None
    if value.startswith("file:"):
        candidate = uri_to_path(value, field=field)
    else:
        candidate = Path(value)
    if candidate.is_absolute():
        try:  # realpath, not Path.resolve: a symlink loop on the way must not raise
            relative = Path(os.path.realpath(candidate)).relative_to(root)
        except ValueError:
            try:
                relative = Path(os.path.normpath(candidate)).relative_to(root)
            except ValueError:
                raise InvalidParams(f"{field}: {value!r} is outside the workspace") from None
        text = relative.as_posix()
    else:
        text = value.replace("\\", "/")
    normalised = posixpath.normpath(text)
    if normalised in (".", ""):
        return ""
    if normalised == ".." or normalised.startswith("../") or normalised.startswith("/"):
        raise InvalidParams(f"{field}: {value!r} is outside the workspace")
    return normalised


def local_path(value: str, *, field: str) -> Path:
    """A plain local path as an editor sends it (`rootPath`), refused if no system call could
    take it."""
    if "\0" in value:
        raise InvalidParams(f"{field}: {value!r} contains a NUL character")
    return Path(value)


def normalise_glob(root: Path, pattern: str, *, field: str) -> str:
    """Validate a gitignore-style pattern. A leading "/" anchors it at the root, as in
    .gitignore; a pattern spelled with the root's absolute path is made relative."""
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams(f"{field}: {pattern!r} is not valid Unicode (a lone surrogate)") from None
    negate = pattern.startswith("!")
    body = pattern[1:] if negate else pattern
    prefix = root.as_posix().rstrip("/") + "/"
    if body.startswith(prefix):
        body = "/" + body[len(prefix) :]
    if ".." in PurePosixPath(body).parts:
        raise InvalidParams(f"{field}: {pattern!r} reaches outside the workspace")
    if not body.strip("/"):
        raise InvalidParams(f"{field}: {pattern!r} is empty")
    return ("!" if negate else "") + body


ALLOW_ANY_ROOT = "FILESCOUT_ALLOW_ANY_ROOT"
SYSTEM_ROOTS = frozenset(
    {
        "/",
        "/bin",
        "/boot",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/opt",
        "/root",
        "/sbin",
        "/srv",
        "/tmp",
        "/usr",
        "/var",
        "/Applications",
        "/Library",
        "/System",
        "/Users",
        "/Volumes",
        "/private",
    }
)
"""Folders that hold a system or everyone's files, not a project: indexing one means walking
hundreds of thousands of files nobody asked about."""
PSEUDO_FILE_SYSTEMS = frozenset(
    {
        "autofs",
        "binfmt_misc",
        "bpf",
        "cgroup",
        "cgroup2",
        "configfs",
        "debugfs",
        "devfs",
        "devpts",
        "devtmpfs",
        "efivarfs",
        "fusectl",
        "mqueue",
        "proc",
        "pstore",
        "securityfs",
        "sysfs",
        "tracefs",
    }
)
"""Kernel views, not files: their entries block, change under a read, or never end."""
PSEUDO_FOLDERS = ("/proc", "/sys", "/dev")
"""Where they live when the mount table cannot be read."""


def file_system_type(path: str, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """The type of the file system `path` is on, from the mount table (Linux); None elsewhere."""
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return None
    best, found = -1, None
    for line in lines:
        fields, _, rest = line.partition(" - ")
        parts = fields.split(" ")
        if len(parts) < 5 or not rest:
            continue
        mount_point = parts[4].replace("\\040", " ")
        inside = path == mount_point or path.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) > best:
            best, found = len(mount_point), rest.split(" ", 1)[0]
    return found


def unsafe_root_reason(root: Path, env: Mapping[str, str] = os.environ) -> str | None:
    """Why `root` (resolved) is no workspace to index, or None when it is one. The user may
    still insist through the environment for a system or home folder, never for a kernel view."""
    text = root.as_posix()
    kind = file_system_type(text)
    if kind in PSEUDO_FILE_SYSTEMS or (
        kind is None and any(text == top or text.startswith(top + "/") for top in PSEUDO_FOLDERS)
    ):
        kind = kind or "a kernel file system"
        return f"{text} is a view of the running system ({kind}), not a folder of files"
    if env.get(ALLOW_ANY_ROOT) == "1":
        return None
    home = env.get("HOME")
    if text in SYSTEM_ROOTS or root.parent == root or PureWindowsPath(text).anchor == text:
        what = "the file system's root" if root.parent == root else "a system folder"
    elif home and text == os.path.realpath(home):
        what = "your home folder"
    else:
        return None
    return (
        f"{text} is {what}, not a project: open a project folder instead "
        f"(set {ALLOW_ANY_ROOT}=1 in the server's environment to index it anyway)"
    )
