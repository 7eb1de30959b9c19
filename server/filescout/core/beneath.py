"""Reading files beneath the workspace root without ever leaving it.

A workspace may hold symlinks to anywhere, and may retarget them at any moment: checking a path
with `realpath` and then opening it by name is a race that a flipped link wins. So every read
of workspace content opens the root once, then walks the path one component at a time with
`O_NOFOLLOW`, resolving each link itself: a relative target continues from the directory it is
in, `..` never climbs above the root, an absolute target counts only below the root's real
path. No inode outside the root is ever opened, not even to be checked and closed.

Imports nothing of the project: the worker processes, the ignore rules and the settings loader
all read through it.
"""

from __future__ import annotations

import errno
import logging
import os
import stat as stat_mod
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

log = logging.getLogger(__name__)

MAX_LINKS = 40
MAX_RULES_FILE_BYTES = 4 * 1024 * 1024
"""The most of a settings or ignore file that is read: ample for any real one (git's own
`.gitignore` files are a few KB), and a repository cannot make the server hold gigabytes."""
"""Links followed for one path at most, as the kernel allows (MAXSYMLINKS)."""
READ_ATTEMPTS = 4
"""Reads of a file that changes while it is read, before it is left for the next look."""
RACY_NS = 2_000_000_000
"""A file modified this recently may change without its size or mtime showing it."""
_NO_WAIT = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
FILE_FLAGS = os.O_RDONLY | _NO_WAIT
"""A FIFO or a device put where a file was is never waited on, nor made a terminal."""
DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | _NO_WAIT
SPECIAL = ("", ".", "..")


class ChangedWhileRead(OSError):
    """A file kept changing while it was read: what was read may be a mix of two versions."""


class OutsideRoot(OSError):
    """The path leads out of the workspace root (a link, or `..`): nothing was opened there."""

    def __init__(self, relative: str) -> None:
        super().__init__(errno.EXDEV, "leads outside the workspace root", relative)


class LinkRefused(OSError):
    """A symlink where none may be (a settings or ignore file, or on the way to one)."""

    def __init__(self, relative: str) -> None:
        super().__init__(errno.ELOOP, "is reached through a symbolic link", relative)


class RootDir:
    """The workspace root, opened once for a batch of reads: each file beneath it is opened
    relative to this descriptor, so a batch pays for the root once. The last file's directory
    stays open too (reached beneath the root with no link followed): a listing brings the
    files of a directory together, and the next one there costs one call rather than one per
    component. Both close with the batch. (A directory moved out of the root, not replaced by
    a link, while a batch holds it is not noticed: a repository's content cannot do that.)"""

    __slots__ = ("_lock", "_parent", "_parent_fd", "_prefixes", "fd", "path")

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        spellings = (os.path.realpath(self.path), os.path.normpath(self.path))
        self._prefixes = tuple(dict.fromkeys(spelling.rstrip("/") + "/" for spelling in spellings))
        """The root's real path (and the path as given): an absolute link target below one of
        these stays beneath the root."""
        self._parent = ""
        self._parent_fd = -1
        self._lock = threading.Lock()  # a descriptor closed by one thread is never used by another

    def close(self) -> None:
        with self._lock:
            self._keep_parent("", -1)
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1

    def __enter__(self) -> RootDir:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def open(self, relative: str, *, follow_links: bool = True, directory: bool = False) -> int:
        """A read-only descriptor of `relative`, opened without blocking. Links that stay
        beneath the root are followed (none at all without `follow_links`: LinkRefused); one
        that leads out raises OutsideRoot, more than MAX_LINKS raise ELOOP. Any other OSError
        is the file system's (FileNotFoundError, PermissionError, ...)."""
        parent, _, name = relative.rpartition("/")
        with self._lock:
            if parent and parent == self._parent and follow_links and not directory and name not in SPECIAL:
                try:
                    return os.open(name, FILE_FLAGS, dir_fd=self._parent_fd)
                except OSError:
                    pass  # a link there, a file gone, a folder moved: walked from the root
            return self._walk(relative, follow_links=follow_links, directory=directory)

    def _walk(self, relative: str, *, follow_links: bool, directory: bool) -> int:
        pending = _components(relative)
        held: list[int] = []  # directories opened below the root, the innermost last
        links = 0
        try:
            while pending:
                name = pending.pop()
                if name == "..":
                    if not held:
                        raise OutsideRoot(relative)
                    os.close(held.pop())
                    continue
                at = held[-1] if held else self.fd
                flags = DIRECTORY_FLAGS if pending or directory else FILE_FLAGS
                try:
                    fd = os.open(name, flags, dir_fd=at)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    target = _link_target(name, at)
                    if target is None:
                        raise
                    if not follow_links:
                        raise LinkRefused(relative) from None
                    links += 1
                    if links > MAX_LINKS:
                        raise OSError(errno.ELOOP, "too many levels of symbolic links", relative) from None
                    if target.startswith("/"):
                        pending.extend(_components(self._beneath(target, relative)))
                        while held:  # an absolute target starts again from the root
                            os.close(held.pop())
                    else:
                        pending.extend(_components(target))
                    continue
                if pending:
                    held.append(fd)
                    continue
                # Every name plain and no link followed: the directory is the one the path names.
                if held and not links and not directory and len(held) == relative.count("/"):
                    self._keep_parent(relative.rpartition("/")[0], held.pop())
                return fd
            return os.open(".", DIRECTORY_FLAGS, dir_fd=held[-1] if held else self.fd)
        finally:
            for fd in held:
                os.close(fd)

    def _keep_parent(self, parent: str, fd: int) -> None:
        if self._parent_fd >= 0:
            os.close(self._parent_fd)
        self._parent, self._parent_fd = parent, fd

    def _beneath(self, target: str, relative: str) -> str:
        """An absolute link target as a path relative to the root; OutsideRoot elsewhere. The
        rest is walked like any path (its `..` may not climb above the root either)."""
        for prefix in self._prefixes:
            if target.startswith(prefix) or target == prefix[:-1]:
                return target[len(prefix) :]
        raise OutsideRoot(relative)


def _components(path: str) -> list[str]:
    """The names of `path` as a stack: the first one last, empty names and `.` left out."""
    return [name for name in reversed(path.split("/")) if name and name != "."]


def _link_target(name: str, at: int) -> str | None:
    """What the link `name` in directory `at` points to; None when it is no link."""
    try:
        return os.readlink(name, dir_fd=at)
    except OSError:
        return None


@contextmanager
def opened(root: RootDir | str | os.PathLike[str]) -> Iterator[RootDir]:
    """`root` when it is open already, else the root opened for the block."""
    if isinstance(root, RootDir):
        yield root
        return
    with RootDir(root) as fresh:
        yield fresh


def read_regular(
    root: RootDir, relative: str, limit: int = -1, *, follow_links: bool = True
) -> tuple[bytes, os.stat_result] | None:
    """Up to `limit` bytes of a regular file beneath the root (all with -1) and its stat: one
    version of the file, never a mix of two. None when it is no regular file (any more), or an
    odd one that no second look would settle: a read that would block, or a kernel view whose
    length is not what its stat says (/proc's files say 0 bytes, sysfs's 4096, both stored
    nowhere). Raises OSError (PermissionError,
    FileNotFoundError, OutsideRoot, ...) and ChangedWhileRead. Links are followed as
    `RootDir.open` does.

    A write during the read changes the size or the modification time, except when the file
    was already modified within the file system's timestamp tick (a few milliseconds, up to
    two seconds on some): such a recently modified file must read the same twice in a row."""
    previous: bytes | None = None
    for _ in range(READ_ATTEMPTS):
        fd = root.open(relative, follow_links=follow_links)
        try:
            before = os.fstat(fd)
            if not stat_mod.S_ISREG(before.st_mode):
                return None
            # A file stored nowhere (a kernel view) may lie about its size: one byte more than
            # its stat says shows it. A stored file that grows changes its stat, seen below.
            data = _read_up_to(fd, before.st_size + (before.st_blocks == 0) if limit < 0 else limit)
            after = os.fstat(fd)
        except BlockingIOError:
            log.debug("%s: reading it would wait: left out", relative)
            return None
        finally:
            os.close(fd)
        if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
            previous = None
            continue
        if len(data) > after.st_size and (limit < 0 or len(data) < limit):
            log.debug("%s: longer than its stat says (a kernel view?): left out", relative)
            return None
        if len(data) != after.st_size and len(data) != limit:
            if after.st_blocks == 0:  # nothing stored: a kernel view (sysfs says 4096 bytes)
                log.debug("%s: shorter than its stat says, and stored nowhere: left out", relative)
                return None
            previous = None  # truncated and written again within a timestamp tick
            continue
        if after.st_mtime_ns < time.time_ns() - RACY_NS or data == previous:
            return data, after
        previous = data
    raise ChangedWhileRead(errno.EAGAIN, "changed while it was read", relative)


def _read_up_to(fd: int, count: int) -> bytes:
    """Up to `count` bytes, fewer at the end of the file; BlockingIOError when a read would
    wait (no file on a disk does)."""
    first = os.read(fd, count)
    if len(first) == count or not first:
        return first
    chunks = [first]
    total = len(first)
    while total < count and (chunk := os.read(fd, count - total)):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


_refusals_said: set[str] = set()


def read_rules_file(root: RootDir | str | os.PathLike[str], relative: str) -> bytes | None:
    """A settings or ignore file of the workspace: its first MAX_RULES_FILE_BYTES, cut at a line's
    end (a warning says so); None when there is none. Such a file decides what else is read, so
    it is never reached through a symlink (git does not follow a symlinked `.gitignore` either):
    one is passed over, said once at info level. A FIFO or a device there is never waited on.
    Raises OSError when it cannot be read."""
    try:
        with opened(root) as directory:
            found = read_regular(directory, relative, MAX_RULES_FILE_BYTES + 1, follow_links=False)
    except LinkRefused:
        where = os.path.join(os.fspath(root.path if isinstance(root, RootDir) else root), relative)
        if where not in _refusals_said:
            _refusals_said.add(where)
            log.info("%s is a symbolic link or reached through one: not read", where)
        return None
    except (FileNotFoundError, NotADirectoryError):
        return None
    if found is None:
        return None
    data = found[0]
    if len(data) > MAX_RULES_FILE_BYTES:
        data = data[: data.rfind(b"\n", 0, MAX_RULES_FILE_BYTES) + 1]
        log.warning(
            "%s is over %d bytes: only its first %d are read", relative, MAX_RULES_FILE_BYTES, len(data)
        )
    return data
