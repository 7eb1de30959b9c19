"""The workspace's git history, read for the history index: the commits `git log` shows from
HEAD (refs are followed, the object store is never listed), newest first, each with its message
and the workspace paths it added or modified.

git runs with a bounded format, no pager, `core.quotepath=off` and NUL-separated output, under a
timeout; paths arrive as UTF-8 (a name that is not is left out, as the scan leaves it out). In a
workspace that is a subdirectory of its repository, only that subdirectory's changes are read,
with paths relative to the workspace. Anything that goes wrong (no git, not a work tree, a
repository without commits, a git that fails) means no history, never an error of the index.
"""

from __future__ import annotations

import logging
import re
import subprocess
import tempfile
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from filescout.core.beneath import RootDir, read_regular
from filescout.core.records import PastCommit
from filescout.vcs import git

log = logging.getLogger(__name__)

MAX_COMMITS = 50_000
"""The newest this many commits are read (git.git's 50,000 take about five seconds of `git log`).
Older commits say little about today's files, and the cap bounds the index's size."""
SWEEP_FILES = 50
"""A commit touching more files than this is a sweep (a reformat, a directory moved, a licence
header): it says nothing about any one of them, so its files are not kept."""
MESSAGE_CHARS = 2_000
SUBJECT_CHARS = 120
READ_TIMEOUT = 300.0
"""Seconds one read of the history may take before git is stopped."""
QUICK_TIMEOUT = 15.0
"""Seconds for the small questions (where HEAD is, whether one commit descends from another)."""
BATCH = 2_000
COMMIT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
STATUS = re.compile(rb"[ACDMRTUXB][0-9]*")
HEADER = b"\x1e"
SEPARATOR = b"\x1f"
FORMAT = "--format=%x1e%H %ct %P%x1f%B"
TRAILER = re.compile(r"[A-Za-z0-9-]+: \S|\(cherry picked from commit [0-9a-f]+\)$")
SAFE_REF = re.compile(r"refs/[A-Za-z0-9._/+-]+")
GIT_FILE_BYTES = 4096
"""HEAD and a loose ref hold one line: more than this is no file of git's."""


class HistoryUnavailable(Exception):
    """git could not read the history (it failed, or took too long)."""


def _quick(root: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    return git.run(root, *args, timeout=QUICK_TIMEOUT)


@dataclass(frozen=True, slots=True)
class Head:
    """Where the workspace's history ends, and where the workspace sits in its repository."""

    commit: str
    prefix: str
    """The workspace's directory inside the repository (`""` at its top, else `sub/dir/`)."""


def find_head(root: Path) -> Head | None:
    """HEAD's commit, or None when the workspace is no git work tree or has no commit yet."""
    result = _quick(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", "--show-prefix")
    if result is None or result.returncode != 0:
        return None
    lines = result.stdout.decode("utf-8", "surrogateescape").splitlines()
    commits = [line for line in lines if COMMIT_ID.fullmatch(line)]
    prefixes = [line for line in lines if line.endswith("/")]  # printed in no fixed order
    if len(commits) != 1 or any(not _path(line.encode("utf-8", "surrogateescape")) for line in prefixes):
        return None
    return Head(commits[0], prefixes[0] if prefixes else "")


def head_signature(root: Path) -> str | None:
    """What HEAD is, read from the files git keeps it in (the HEAD file, the branch it names,
    packed refs): it changes whenever HEAD moves, and reading it costs no process. None when
    the workspace has no `.git` directory of its own (then git is asked instead)."""
    git_dir = root / ".git"
    if not git_dir.is_dir():
        return None
    try:
        with RootDir(root) as beneath:  # a FIFO is never waited on, a link out never read
            head = _git_file_text(beneath, ".git/HEAD")
            parts = [head]
            ref = head.removeprefix("ref: ").strip() if head.startswith("ref: ") else None
            if ref is not None and SAFE_REF.fullmatch(ref) and ".." not in ref:
                loose = git_dir / ref
                parts.append(_git_file_text(beneath, f".git/{ref}") if loose.is_file() else "")
                packed = git_dir / "packed-refs"
                if packed.is_file():
                    stat = packed.stat()
                    parts.append(f"{stat.st_mtime_ns}:{stat.st_size}")
    except OSError:
        return None
    return "\n".join(parts)


def _git_file_text(beneath: RootDir, relative: str) -> str:
    """A small file of git's (HEAD, a ref), stripped; "" when it is no regular file."""
    found = read_regular(beneath, relative, GIT_FILE_BYTES)
    return found[0].decode("utf-8", "replace").strip() if found is not None else ""


def is_ancestor(root: Path, older: str, newer: str) -> bool:
    """Whether `older` is an ancestor of `newer` (False when git cannot tell: a commit gone)."""
    if not (COMMIT_ID.fullmatch(older) and COMMIT_ID.fullmatch(newer)):
        return False
    result = _quick(root, "merge-base", "--is-ancestor", older, newer)
    return result is not None and result.returncode == 0


def count_between(root: Path, older: str, newer: str) -> int | None:
    """How many commits `git log older..newer` shows; None when git cannot tell."""
    if not (COMMIT_ID.fullmatch(older) and COMMIT_ID.fullmatch(newer)):
        return None
    result = _quick(root, "rev-list", "--count", f"{older}..{newer}")
    if result is None or result.returncode != 0:
        return None
    try:
        return int(result.stdout.strip())
    except ValueError:
        return None


def _tokens(stream: IO[bytes]) -> Iterator[bytes]:
    """NUL-separated fields of `git log -z`, as they arrive."""
    rest = b""
    while chunk := stream.read(1 << 16):
        fields = (rest + chunk).split(b"\0")
        rest = fields.pop()
        yield from fields
    if rest:
        yield rest


def _path(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass(slots=True)
class _Pending:
    sha: str
    time: int
    merge: bool
    message: str
    changes: list[tuple[bytes, list[bytes]]]


class HistoryReader:
    """One `git log` from `head` (down to `since`, excluded), newest first, in batches. Paths
    are given the names they have at `head`: walking back, a rename tells which older name
    becomes which newer one. `renamed` ends up holding that map for commits older than the
    range, so an index extended by this range can rename its older rows too. `stop()`, from
    any thread, ends a read under way."""

    def __init__(self, root: Path, head: Head, since: str | None = None, limit: int = MAX_COMMITS) -> None:
        self.root = root
        self.head = head
        self.since = since
        self.limit = limit
        self.renamed: dict[str, str] = {}
        self._process: subprocess.Popen[bytes] | None = None
        self._stopped = threading.Event()

    def arguments(self) -> list[str]:
        """`git log`'s arguments: NUL-separated, no external diff or textconv, renames found."""
        args = [
            "log",
            "-z",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--find-renames",
            "--encoding=UTF-8",
            FORMAT,
            "--name-status",
            f"--max-count={self.limit}",
        ]
        if self.head.prefix:
            args.append("--relative")
        args.append(self.head.commit)
        if self.since is not None:
            args.append(f"^{self.since}")
        args += ["--", "."] if self.head.prefix else ["--"]
        return args

    def stop(self) -> None:
        self._stopped.set()
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()

    def batches(self, size: int = BATCH) -> Generator[list[PastCommit], None, None]:
        """The commits in batches of `size`; raises HistoryUnavailable if git fails or is
        stopped."""
        if not COMMIT_ID.fullmatch(self.head.commit) or (
            self.since is not None and not COMMIT_ID.fullmatch(self.since)
        ):
            raise HistoryUnavailable("not a commit id")
        with tempfile.TemporaryFile() as errors:
            try:
                process = git.start(self.root, self.arguments(), stderr=errors)
            except OSError as exc:
                raise HistoryUnavailable(f"git log: {exc}") from exc
            self._process = process
            timer = threading.Timer(READ_TIMEOUT, self.stop)
            timer.daemon = True
            timer.start()
            try:
                yield from self._parse(process, size)
                code = process.wait()
                if self._stopped.is_set():
                    raise HistoryUnavailable("git log was stopped")
                if code != 0:
                    errors.seek(0)
                    said = errors.read(2000).decode("utf-8", "replace").strip()
                    raise HistoryUnavailable(f"git log failed ({code}): {said}")
            finally:
                timer.cancel()
                if process.poll() is None:
                    process.kill()
                process.wait()
                if process.stdout is not None:
                    process.stdout.close()

    def _parse(self, process: subprocess.Popen[bytes], size: int) -> Iterator[list[PastCommit]]:
        assert process.stdout is not None
        batch: list[PastCommit] = []
        current: _Pending | None = None
        expecting: list[bytes] | None = None
        wanted = 0
        for token in _tokens(process.stdout):
            if expecting is not None:
                expecting.append(token)
                if len(expecting) == wanted:
                    expecting = None
                continue
            field = token.lstrip(b"\n")
            if current is not None and STATUS.fullmatch(field):
                expecting = []
                wanted = 2 if field[:1] in (b"R", b"C") else 1
                current.changes.append((field[:1], expecting))
            elif token.startswith(HEADER):
                if current is not None:
                    batch.append(self._finish(current))
                    if len(batch) >= size:
                        yield batch
                        batch = []
                current = _header(token)
        if current is not None:
            batch.append(self._finish(current))
        if batch:
            yield batch

    def _finish(self, pending: _Pending) -> PastCommit:
        """The commit with its paths under their newest names; then its renames are noted for
        the older commits still to come."""
        renamed = self.renamed
        paths: list[str] = []
        for status, names in pending.changes:
            if status in (b"A", b"M", b"T", b"R", b"C") and names:
                path = _path(names[-1])
                if path is not None:
                    paths.append(renamed.get(path, path))
        for status, names in pending.changes:
            if status == b"R" and len(names) == 2:
                old, new = _path(names[0]), _path(names[1])
                if old is not None and new is not None:
                    renamed[old] = renamed.get(new, new)
        message = without_trailers(pending.message.strip())
        subject = message.split("\n", 1)[0].strip()
        keep = not pending.merge and len(pending.changes) <= SWEEP_FILES
        return PastCommit(
            sha=pending.sha,
            time=pending.time,
            subject=subject[:SUBJECT_CHARS],
            message=message[:MESSAGE_CHARS],
            paths=list(dict.fromkeys(paths)) if keep else [],
            changed=len(pending.changes),
        )


def without_trailers(message: str) -> str:
    """The message without its closing block of trailers (`Signed-off-by: ...`, `Cc: ...`):
    names and addresses, which say nothing about the change and would fill the index."""
    body, _, last = message.rpartition("\n\n")
    if body and all(TRAILER.match(line) for line in last.splitlines()):
        return body.rstrip()
    return message


def _header(token: bytes) -> _Pending:
    head, _, message = token[1:].partition(SEPARATOR)
    fields = head.decode("ascii", "replace").split()
    sha = fields[0] if fields else ""
    try:
        time = int(fields[1]) if len(fields) > 1 else 0
    except ValueError:
        time = 0
    return _Pending(sha, time, len(fields) > 3, message.decode("utf-8", "replace"), [])
