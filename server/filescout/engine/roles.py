"""Who writes the index: the first process to take its lock. Others open it read-only, answer
from WAL snapshots, keep the access signals they see, and take over when the writer exits.

And what the index may be: only what is positively filescout's is opened for writing, moved
aside or replaced (a path the settings name may hold anyone's file), an index whose storage
refuses writes is served read-only, and the writer keeps its write-ahead log where other
processes can open it."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import shutil
import stat
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Literal

from filescout.core.errors import ReadOnly, WorkspaceUnavailable
from filescout.engine.faults import (
    FULL_ERRNOS,
    UNWRITABLE_ERRNOS,
    cannot_write_message,
    disk_full_message,
    is_disk_full,
)
from filescout.index import Index
from filescout.index.database import IndexForeign, IndexTooNew
from filescout.index.lock import WriterLock
from filescout.index.ondisk import (
    HEADER_BYTES,
    application_id,
    is_filescout_index,
    is_sqlite,
    lost_log,
    read_start,
)

log = logging.getLogger(__name__)

TAKEOVER_INTERVAL = float(os.environ.get("FILESCOUT_TAKEOVER_INTERVAL", "2"))
READER_OPEN_TIMEOUT = 10.0

Role = Literal["writer", "reader"]


def lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lock")


class IndexFull(WorkspaceUnavailable):
    """The disk under the index is full: opening it for writing failed, not the index."""


class IndexUnwritable(WorkspaceUnavailable):
    """The index's file or folder refuses this process's writes (a mode, a read-only mount)."""


# -- what is filescout's own -------------------------------------------------------------------

AsideReason = Literal["damaged", "newer", "foreign"]
"""Why an index of ours was set aside: SQLite calls it corrupt (or it lost part of itself), a
later filescout wrote it, or (in filescout's own folder) it is not a filescout index at all."""
LOCK_BYTES = 32
"""A lock file of ours holds a process id and nothing else."""
_OWN_PLACES: set[Path] = set()
"""Index paths in filescout's own folder (the default place) this process chose: there, whatever
stands at the index's path may be set aside."""


def set_index_aside(path: Path, reason: AsideReason) -> Path:
    """Move filescout's own unusable index, with its log files, to `<name>.<reason>` beside it,
    and return that path. One copy per reason: an earlier copy is replaced, so copies never pile
    up. Outside filescout's own folder only a file that is positively an index of ours is moved
    (a regular file with SQLite's header and filescout's application id), and only over a copy
    of ours; anything else raises WorkspaceUnavailable, and every file stays where it is."""
    aside = path.with_name(f"{path.name}.{reason}")
    if path not in _OWN_PLACES:
        if (why := not_our_index(path)) is not None:
            raise WorkspaceUnavailable(f"{path} is not filescout's index ({why}): it is left where it is")
        if (why := index_path_problem(aside)) is not None:
            raise WorkspaceUnavailable(f"{path} cannot be set aside: {aside} is not filescout's ({why})")
    return _move_aside(path, aside)


def not_our_index(path: Path) -> str | None:
    """Why the file at `path` is not positively an index of ours, or None when it is. An empty
    file counts as ours only beside a lock of ours: filescout creates the file, then writes its
    header, and may be stopped in between."""
    try:
        info = path.lstat()
    except OSError as exc:
        return "nothing is there" if exc.errno == errno.ENOENT else _unexaminable(exc)
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if stat.S_ISDIR(info.st_mode):
        return "it is a folder"
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_size == 0:
        lock = lock_path(path)
        return None if lock.exists() and _lock_problem(lock) is None else "it is not a filescout index"
    try:
        header = read_start(path, HEADER_BYTES)
    except OSError as exc:
        return _unexaminable(exc)
    if is_filescout_index(header):
        return None
    if not is_sqlite(header):
        return "it is not a filescout index"
    if application_id(header) == 0:
        return "it is an SQLite database not marked as filescout's"
    return "it is another application's SQLite database"


def index_path_problem(path: Path) -> str | None:
    """Why filescout may not open, write or set aside what is at `path` or beside it (the files
    SQLite and the writer lock would open), or None. Nothing there is fine, unless a log or
    lock file is: SQLite would replay a stray log into a new index, and the lock is rewritten."""
    lock = lock_path(path)
    if os.path.lexists(path):
        why = not_our_index(path)
    else:
        strays = [f"{path.name}{suffix}" for suffix in ("-wal", "-shm") if os.path.lexists(f"{path}{suffix}")]
        why = f"{strays[0]} exists beside it" if strays else None
    if why is None and os.path.lexists(lock):
        why = _lock_problem(lock)
    return why


def choose_index_path(requested: Path, default: Path, warnings: list[str]) -> Path:
    """Where this process keeps the index: `requested` when nothing is there or an index of
    ours is, else the default place in filescout's own folder, with one warning saying why the
    requested path was left untouched."""
    if requested != default:
        why = index_path_problem(requested)
        if why is None:
            return requested
        _say(
            f"dbPath {requested} is not used: {why}; it is left untouched and the index is kept at {default}",
            warnings,
        )
    _OWN_PLACES.add(default)
    return default


def _lock_problem(lock: Path) -> str | None:
    """Why the lock file is not one of ours (a regular file holding a process id, or nothing)."""
    try:
        content = read_start(lock, LOCK_BYTES + 1)
    except OSError:
        content = b"not ours"
    if len(content) <= LOCK_BYTES and (not content.strip() or content.strip().isdigit()):
        return None
    return f"{lock.name} beside it is not filescout's"


def _unexaminable(exc: OSError) -> str:
    return f"it cannot be examined ({(exc.strerror or str(exc)).lower()})"


def _move_aside(path: Path, aside: Path) -> Path:
    """`path` and its log files to `aside` (replacing the copy there, its stale log files
    included), each by one rename."""
    for suffix in ("", "-wal", "-shm"):
        source, target = Path(f"{path}{suffix}"), Path(f"{aside}{suffix}")
        if os.path.lexists(source):
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(source, target)
        elif os.path.lexists(target):
            target.unlink()  # the older copy's log, which belongs to no file now
    return aside


# -- opening -------------------------------------------------------------------------------


def write_refusal(path: Path) -> OSError | None:
    """Why this process cannot write the index at `path` (its file, or its folder, refuses
    writes), or None. Asked before SQLite opens it: SQLite opens a file it may not write
    read-only without a word, and every pass would then fail."""
    for target, mode in ((path, os.W_OK), (path.parent, os.W_OK | os.X_OK)):
        if target.exists() and not os.access(target, mode):
            code = errno.EROFS if _on_read_only_storage(target) else errno.EACCES
            return OSError(code, os.strerror(code), str(target))
    return None


def _on_read_only_storage(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs on Windows
        return False


def lost_log_message(path: Path, pages: int, aside: Path | None) -> str:
    kept = f"the index was moved to {aside} and" if aside is not None else "what the index lacks"
    return (
        f"the index at {path} lost the changes its write-ahead log held ({pages} pages): "
        f"{path}-wal was deleted while a filescout process wrote the index, and that process "
        f"ended before copying them back; {kept} is being rebuilt from the workspace"
    )


async def open_for_writing(path: Path, warnings: list[str]) -> Index:
    """Open the index for writing; an index of ours that is corrupt, newer, or lost its log is
    set aside (one copy per reason) and rebuilt, with a warning, since the index is only a cache
    of the workspace. What is not positively ours is never moved, except in filescout's own
    folder (`set_index_aside`). A full disk is not the index's fault: the index stays put."""
    if (lost := lost_log(path)) is not None:
        # Without a checkpoint under way the file holds an earlier state whole: it is kept.
        aside = set_index_aside(path, "damaged") if lost.partly_copied else None
        _say(lost_log_message(path, lost.pages, aside), warnings)
    try:
        return await Index.open(path)
    except Exception as exc:  # IndexUnusable, sqlite3.DatabaseError and friends
        if is_disk_full(exc):
            raise IndexFull(disk_full_message(path)) from exc
        if not path.exists():
            raise WorkspaceUnavailable(f"cannot create the index at {path}: {exc}") from exc
        _replace_unusable(path, _aside_reason(exc), str(exc), warnings)
    try:
        return await Index.open(path)
    except Exception as second:
        raise WorkspaceUnavailable(f"cannot create the index at {path}: {second}") from second


def _aside_reason(exc: Exception) -> AsideReason:
    if isinstance(exc, IndexTooNew):
        return "newer"
    return "foreign" if isinstance(exc, IndexForeign) else "damaged"


def _replace_unusable(path: Path, reason: AsideReason, why: str, warnings: list[str]) -> None:
    try:
        aside = set_index_aside(path, reason)
    except (OSError, WorkspaceUnavailable) as exc:
        raise WorkspaceUnavailable(
            f"the index at {path} is unusable ({why}) and cannot be moved aside: {exc}"
        ) from exc
    _say(f"the index at {path} was unusable ({why}); it was moved to {aside} and is being rebuilt", warnings)


def _say(message: str, warnings: list[str]) -> None:
    """Recorded here, shown by the face: each face shows a workspace's `warnings` to its user
    (a notification, the terminal, the MCP server's log), so a warning is said once."""
    log.info("%s", message)
    warnings.append(message)


async def _open_unwritable(db_path: Path, reason: str, warnings: list[str]) -> Index:
    """The index served read-only for good, saying why (once: at startup)."""
    try:
        index = await Index.open_unwritable(db_path)
    except Exception as exc:
        raise WorkspaceUnavailable(f"{reason}; and it cannot be read either: {exc}") from exc
    _say(reason, warnings)
    return index


async def open_for_reading(path: Path, timeout: float = READER_OPEN_TIMEOUT) -> Index:
    """Open an index the lock holder writes, waiting briefly for it to create the index."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await Index.open_readonly(path)
        except Exception as exc:
            if time.monotonic() > deadline:
                raise WorkspaceUnavailable(
                    f"another filescout process writes {path}, and it is not readable yet: {exc}"
                ) from exc
            await asyncio.sleep(0.05)


class Roles:
    """The writer lock, the role it gives this process, and the hand-over between roles."""

    def __init__(
        self,
        index: Index,
        lock: WriterLock,
        warnings: list[str],
        *,
        unwritable: str | None = None,
        requested: Path | None = None,
    ) -> None:
        self.index = index
        self.lock = lock
        self.unwritable = unwritable
        """Why this process can never write the index (its storage refuses writes), if so."""
        self.requested = requested or index.path
        """Where the settings asked for the index; `index.path` differs when that place was left
        untouched because something not ours stands there."""
        self._warnings = warnings
        self._files = _identities(index.path)
        """The index file and its write-ahead log as this process's connections opened them."""
        self._access_backlog: dict[str, float] = {}
        """Accesses a reader saw, by path, for the index once this process writes it."""

    @classmethod
    async def acquire(
        cls,
        requested: Path,
        warnings: list[str],
        *,
        default: Path,
        held: WriterLock | None = None,
        stores: bool = True,
    ) -> Roles:
        """Take the writer role if the lock is free, else open the index for reading. The index
        is kept at `requested` when that is positively ours (or nothing is there), else at
        `default`, filescout's own folder. `held` is that index's writer lock when the caller
        waited for it already (a second lock of this process's own would find it taken).
        `stores`: keep the top-k stores of content words and descriptions (index/topk.py); a
        process that answers one question and exits does not, so its answer never depends on
        whether a store opened in time: FTS5 answers it."""
        db_path = choose_index_path(requested, default, warnings)
        lock = WriterLock(lock_path(db_path))
        if held is not None and held.path == lock.path:
            lock = held

        def made(index: Index, unwritable: str | None = None) -> Roles:
            if stores:
                index.keep_stores()  # opened in the background, in the role taken
            return cls(index, lock, warnings, unwritable=unwritable, requested=requested)

        try:
            writer = lock.try_acquire()
        except OSError as exc:
            # Reads need no lock: an index that exists is served even where nothing can be written.
            if exc.errno in UNWRITABLE_ERRNOS | FULL_ERRNOS and db_path.exists():
                reason = cannot_write_message(db_path, exc)
                return made(await _open_unwritable(db_path, reason, warnings), reason)
            raise WorkspaceUnavailable(f"cannot use {db_path.parent}: {exc}") from exc
        if not writer:
            log.info("another filescout process (pid %s) writes this index; serving reads", lock.holder())
            return made(await open_for_reading(db_path))
        try:
            if (refusal := write_refusal(db_path)) is not None:
                raise IndexUnwritable(cannot_write_message(db_path, refusal))
            return made(await open_for_writing(db_path, warnings))
        except (IndexFull, IndexUnwritable) as exc:
            lock.release()
            return made(await _open_unwritable(db_path, str(exc), warnings), str(exc))
        except BaseException:
            lock.release()  # let another window try, instead of waiting on us forever
            raise

    @property
    def role(self) -> Role:
        return "writer" if self.index.writable else "reader"

    def writer_pid(self) -> int | None:
        if self.unwritable is not None:
            return None
        return os.getpid() if self.index.writable else self.lock.holder()

    def require_writer(self, action: str) -> None:
        if self.unwritable is not None:
            raise ReadOnly(f"{action}: {self.unwritable}")
        if not self.index.writable:
            raise ReadOnly(
                f"{action}: another filescout process (pid {self.lock.holder()}) "
                "indexes this workspace; this one serves reads and takes over when "
                "it exits"
            )

    async def record_access(self, paths: Sequence[str], *, weight: float) -> None:
        """Count a use of `paths`; a reader keeps it until it writes the index itself."""
        if self.index.writable:
            await self.index.access.record(paths, weight=weight)
            return
        for path in paths:
            self._access_backlog[path] = self._access_backlog.get(path, 0.0) + weight

    async def keep_role(
        self,
        became_writer: Callable[[], Awaitable[None]],
        closed: Callable[[], bool],
        warn: Callable[[str], None] | None = None,
    ) -> None:
        """For as long as the workspace is open: a reader takes over once the writer goes away
        (then calls `became_writer`), and the writer keeps its write-ahead log where other
        processes find it. An index on storage that refuses writes needs neither. What taking
        over finds (an index set aside, changes lost) goes to `warn` as well as to the log."""
        while self.unwritable is None and not closed():
            await asyncio.sleep(TAKEOVER_INTERVAL)
            if self.index.writable:
                await self._keep_log()
                continue
            said = len(self._warnings)
            took_over = await self._take_over()
            for message in self._warnings[said:]:
                if warn is not None:
                    warn(message)
            if took_over:
                await became_writer()

    async def _take_over(self) -> bool:
        """Become the writer if the lock is free now."""
        try:
            if not self.lock.try_acquire():
                return False
        except OSError as exc:  # the lock's directory went away or became read-only
            log.debug("cannot take the writer lock: %s", exc)
            return False
        if (refusal := write_refusal(self.index.path)) is not None:
            self.lock.release()
            self.unwritable = cannot_write_message(self.index.path, refusal)
            _say(self.unwritable, self._warnings)  # and it serves reads for good
            return False
        log.info("the other filescout process has exited; this one now indexes")
        try:
            writer = await open_for_writing(self.index.path, self._warnings)
            await self.index.become_writer(writer)
        except Exception:
            log.exception("cannot take over the index; serving reads still")
            self.lock.release()
            return False
        self._files = _identities(self.index.path)
        await self._flush_access_backlog()
        return True

    async def _keep_log(self) -> None:
        """Renew the write-ahead log if it was deleted under this process. SQLite keeps writing
        to the deleted file, which no other process can open (they fail with an I/O error) and
        which dies with this process, taking every change since the last checkpoint with it."""
        path = self.index.path
        files = _identities(path)
        if files == self._files:
            return
        if files[0] != self._files[0] or self._files[1] is None:
            self._files = files  # another index file took this one's place: it opened its own log
            return
        try:
            renewed = await self.index.db.renew_log()
        except Exception:
            log.exception("the write-ahead log of the index at %s was deleted and cannot be renewed", path)
            self._files = files  # said once: tried again only when the files change once more
            return
        if renewed:
            self._files = _identities(path)
            log.warning(
                "the write-ahead log of the index at %s was deleted while this process wrote it: its "
                "changes were copied into the index and a new log begun, so other processes read it again",
                path,
            )

    async def _flush_access_backlog(self) -> None:
        by_weight: dict[float, list[str]] = {}
        for path, weight in self._access_backlog.items():
            by_weight.setdefault(weight, []).append(path)
        for weight, paths in by_weight.items():
            await self.index.access.record(paths, weight=weight)
        self._access_backlog.clear()

    async def close(self) -> None:
        await self.index.close()
        self.lock.release()


FileIdentity = tuple[int, int]


def _identities(path: Path) -> tuple[FileIdentity | None, FileIdentity | None]:
    """The index file's and its write-ahead log's (device, inode), None for one that is missing."""
    return _identity(path), _identity(Path(f"{path}-wal"))


def _identity(path: Path) -> FileIdentity | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino
