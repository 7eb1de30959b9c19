"""The index's files read as bytes, before SQLite opens them: whether a file is positively
filescout's index, and whether its write-ahead log lost what its shared-memory index still
counts. Opening a file with SQLite may write to it (a journal mode, a recovery), so what is not
ours is judged by its bytes alone. The layouts are SQLite's documented file formats
(sqlite.org/fileformat.html, sqlite.org/walformat.html)."""

from __future__ import annotations

import errno
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from filescout.index.schema import APPLICATION_ID

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100
APPLICATION_ID_AT = 68
"""The database header's application id: four bytes, big-endian."""
WAL_HEADER_BYTES = 32
WAL_FRAME_HEADER_BYTES = 24
WAL_SALTS_AT = 16
SHM_VERSION = 3007000
SHM_HEADER_BYTES = 48
"""The shared-memory index starts with two copies of this header, then the checkpoint's state."""
BACKFILL_AT = 2 * SHM_HEADER_BYTES
"""Then the checkpoint's state: how many frames are copied into the database file, ..."""
BACKFILL_ATTEMPTED_AT = BACKFILL_AT + 32
"""... and how many a checkpoint set out to copy (more while one is under way, or was cut short)."""
SHM_READ_BYTES = BACKFILL_ATTEMPTED_AT + 4
_READ_FLAGS = os.O_RDONLY | sum(getattr(os, flag, 0) for flag in ("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC"))


def read_start(path: Path, size: int) -> bytes:
    """The first `size` bytes of a regular file, never through a symlink and never waiting on a
    FIFO; OSError (ELOOP for a link, EISDIR or EINVAL for what is not a regular file) otherwise."""
    fd = os.open(path, _READ_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return os.read(fd, size)
    finally:
        os.close(fd)


def is_sqlite(header: bytes) -> bool:
    return len(header) >= HEADER_BYTES and header.startswith(SQLITE_MAGIC)


def application_id(header: bytes) -> int:
    return int.from_bytes(header[APPLICATION_ID_AT : APPLICATION_ID_AT + 4], "big")


def is_filescout_index(header: bytes) -> bool:
    """SQLite's header carrying filescout's application id (written before anything else)."""
    return is_sqlite(header) and application_id(header) == APPLICATION_ID


@dataclass(frozen=True)
class LostLog:
    """Changes the shared-memory index counts in the write-ahead log that the log lacks."""

    pages: int
    """Frames (pages written) not copied into the database file before the log was lost."""
    partly_copied: bool
    """A checkpoint had begun copying them: the database file may hold some and not others."""


def lost_log(path: Path) -> LostLog | None:
    """What the index at `path` lost, when the shared-memory index counts frames not yet copied
    into the database but the log file beside it does not hold them: the log was deleted (or
    replaced) while a writer ran, and the writer ended before copying them back. None when
    nothing is known lost: no shared-memory file, one not written yet, or a log that holds them."""
    try:
        shm = read_start(Path(f"{path}-shm"), SHM_READ_BYTES)
    except OSError:
        return None
    header = shm[:SHM_HEADER_BYTES]
    if len(shm) < SHM_READ_BYTES or header != shm[SHM_HEADER_BYTES : 2 * SHM_HEADER_BYTES]:
        return None  # torn or never written: SQLite rebuilds it from the log, nothing to compare
    version, initialised = _native(header, 0, 4), header[12]
    last_frame, copied = _native(header, 16, 4), _native(shm, BACKFILL_AT, 4)
    if version != SHM_VERSION or not initialised or last_frame <= copied:
        return None
    page_size = _native(header, 14, 2)
    page_size = 65536 if page_size == 1 else page_size
    wal = Path(f"{path}-wal")
    try:
        log_header = read_start(wal, WAL_HEADER_BYTES)
        log_size = wal.stat().st_size
    except OSError:
        log_header, log_size = b"", 0
    needed = WAL_HEADER_BYTES + last_frame * (WAL_FRAME_HEADER_BYTES + page_size)
    if log_header[WAL_SALTS_AT : WAL_SALTS_AT + 8] == header[32:40] and log_size >= needed:
        return None
    return LostLog(pages=last_frame - copied, partly_copied=_native(shm, BACKFILL_ATTEMPTED_AT, 4) > copied)


def _native(data: bytes, at: int, size: int) -> int:
    """The shared-memory index is written in the machine's own byte order."""
    return int.from_bytes(data[at : at + size], sys.byteorder)
