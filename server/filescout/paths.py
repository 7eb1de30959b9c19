"""Workspace-relative paths: the only form in which paths enter or leave the engine.

Everything a caller hands us is normalised here, and anything that would reach outside the
workspace root is refused before it touches the file system.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from filescout.errors import InvalidParams


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
