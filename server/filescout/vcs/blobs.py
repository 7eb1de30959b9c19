"""Files as a past revision had them: what the ranking's fit judges each past commit on
(relevance/fit.py), since today's files hold the words the commit itself added."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from filescout.vcs.git import run

REVISION = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})\^?|HEAD")
"""A commit id, its first parent (`<id>^`), or HEAD: nothing else is asked of git here."""
SECONDS = 30.0
"""git's time to answer one batch: a few thousand small objects take well under a second."""


def read_versions(
    root: Path, wanted: Sequence[tuple[str, str]], *, most_bytes: int
) -> dict[tuple[str, str], bytes | None]:
    """For each (revision, workspace path): the file's bytes in that revision, or None when the
    revision had no such file (a commit added it). Left out: a file larger than `most_bytes`,
    something other than a file there, or anything git could not answer. Two `git cat-file`
    runs in all: the sizes, then the texts."""
    asked = [(revision, path) for revision, path in dict.fromkeys(wanted) if _askable(revision, path)]
    if not asked:
        return {}
    sizes = run(
        root, "cat-file", "--batch-check=%(objecttype) %(objectsize)", timeout=SECONDS, input=_names(asked)
    )
    if sizes is None or sizes.returncode != 0:
        return {}
    found: dict[tuple[str, str], bytes | None] = {}
    small: list[tuple[str, str]] = []
    lines = sizes.stdout.splitlines()
    if len(lines) != len(asked):
        return {}
    for key, line in zip(asked, lines, strict=True):
        kind, _, size = line.partition(b" ")
        if line.endswith(b" missing"):
            found[key] = None
        elif kind == b"blob" and size.isdigit() and int(size) <= most_bytes:
            small.append(key)
    if small:
        texts = run(root, "cat-file", "--batch", timeout=SECONDS, input=_names(small))
        if texts is not None and texts.returncode == 0:
            found.update(_split_batch(small, texts.stdout))
    return found


def _askable(revision: str, path: str) -> bool:
    """A revision of ours and a path `cat-file` reads on one line, relative to the workspace."""
    return bool(REVISION.fullmatch(revision)) and bool(path) and not any(c in path for c in "\n\r\0")


def _names(keys: Sequence[tuple[str, str]]) -> bytes:
    # `./` makes the path relative to the workspace, which may be a folder of the repository.
    return b"".join(f"{revision}:./{path}\n".encode() for revision, path in keys)


def _split_batch(keys: Sequence[tuple[str, str]], output: bytes) -> dict[tuple[str, str], bytes]:
    """`cat-file --batch` answers each name with `<id> <type> <size>\\n<bytes>\\n`, or one line
    saying why not."""
    found: dict[tuple[str, str], bytes] = {}
    at = 0
    for key in keys:
        end = output.find(b"\n", at)
        if end < 0:
            break
        header = output[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob" and header[2].isdigit():
            size = int(header[2])
            found[key] = output[at : at + size]
            at += size + 1
    return found
