"""Enumerate the workspace, detect what changed since the last scan, hash what did.

Synchronous on purpose: the engine runs it in a worker thread and consumes its batches as they
come, so hashing overlaps with the database writes. Paths are plain strings throughout;
pathlib costs more than the stat calls it wraps.
"""

from __future__ import annotations

import errno
import logging
import os
import stat as stat_mod
import subprocess
import time
from collections import deque
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

import xxhash

from filescout.core.beneath import (
    RACY_NS,
    ChangedWhileRead,
    LinkRefused,
    OutsideRoot,
    RootDir,
    opened,
    read_regular,
)
from filescout.core.errors import WorkspaceUnavailable
from filescout.core.records import DirectoryListing, DocumentFacts, FileRecord, KnownFile
from filescout.core.words import body_words, content_text, pack_words
from filescout.scan.classify import BINARY_SNIFF_BYTES, classify, extracted_format
from filescout.scan.extract import extract
from filescout.scan.ignore import IgnoreRules, read_ignore_file
from filescout.vcs import git

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
"""(files examined, files in total)"""

BATCH_SIZE = 2000
READ_CHUNK = 128
"""Files read (and their words found) per job handed to a reader."""
READS_IN_FLIGHT = 8
"""Read jobs under way at once: enough to keep every worker process busy."""
OVERSIZED_HASH_BYTES = 1 << 20
EXTRACTED_SIZE_LIMIT = 64 << 20
"""Documents and images are read up to this size whatever `maxFileSize` says (that setting is
about text: a 5 MB PDF holds less text than a 1 MB source file); beyond it they are oversized."""
EXTRACTED_KINDS = ("document", "image")
DENIED = (errno.EACCES, errno.EPERM)
LISTING_TIMEOUT = 300.0
"""git listing a huge tree (a cold cache, a slow disk) is given this long."""
SUBMODULE_DEPTH = 8
"""Submodules inside submodules are listed this deep at most."""


class WorkspaceGone(WorkspaceUnavailable):
    """The workspace folder cannot be listed: deleted, moved, unmounted or locked. Nothing may
    be concluded about its files, so the index keeps them."""

    def __init__(self, root: Path | str, cause: OSError) -> None:
        what = (
            "is gone (deleted or moved)"
            if isinstance(cause, FileNotFoundError)
            else f"cannot be listed ({cause.strerror or cause})"
        )
        super().__init__(
            f"the workspace folder {root} {what}: the index keeps what it had, and indexing "
            "resumes once the folder is back"
        )


def require_root(root: Path | str) -> None:
    """Raise WorkspaceGone unless the workspace folder can be listed."""
    try:
        with os.scandir(root):
            pass
    except OSError as exc:
        raise WorkspaceGone(root, exc) from None


@dataclass(slots=True)
class ScanBatch:
    changed: list[FileRecord] = field(default_factory=list)
    """New files and files whose content or stat changed."""
    removed: list[str] = field(default_factory=list)
    """Known files that are gone (only in the last batch of a full scan)."""
    added: int = 0
    unchanged: int = 0
    unreadable: list[str] = field(default_factory=list)
    """Files it may not read (permission denied): left out of the index, and said so."""
    settling: list[tuple[str, str]] = field(default_factory=list)
    """(path, hash read) of files read within their modification's timestamp tick, which a
    rewrite of the same size may follow without changing their stat, and (path, "") of files
    that kept changing while read: each is read once more after the tick."""
    bodies: list[ContentWords] = field(default_factory=list)
    """The content words of the changed files' contents (annotatable ones only), found from
    the same bytes that were hashed: the content index is complete when the scan is stored."""


ContentWords = tuple[str, str, bytes]
"""(content hash, its words for the content index, the same packed for storage)"""


@dataclass(slots=True)
class ReadOutcome:
    """What reading one listed file found: a record (with its content words when it is to be
    annotated), or why there is none. Plain and picklable: it may come from a worker process."""

    record: FileRecord | None = None
    words: ContentWords | None = None
    denied: bool = False
    """Permission denied: left out of the index, and said so."""
    changing: bool = False
    """It kept changing while it was read (ChangedWhileRead): looked at again later."""


ReadJob = tuple[str, Sequence[tuple[str, int]], int]
"""(root, [(relative path, listed size)], max file size): what `read_outcomes` takes."""
Reader = Callable[[ReadJob], "Future[list[ReadOutcome]]"]
"""Runs `read_outcomes` somewhere (a pool of worker processes, or right here)."""


@dataclass(slots=True)
class Listing:
    paths: list[str]
    source: str
    undecodable: list[str] = field(default_factory=list)
    """Files left out because their names are not valid UTF-8: neither SQLite's text nor JSON
    can carry them. Each is a str with surrogate escapes (`printable` shows it)."""
    unlistable: list[str] = field(default_factory=list)
    """Directories a walk could not enter (permission denied): what they hold is left out."""
    walked: WalkMemory | None = None
    """What a walk learnt about the directories, for the next one; None when git listed."""


@dataclass(slots=True)
class WalkMemory:
    """Directory listings from the last complete walk under the same rules, and what this walk
    listed anew: stored once the pass is complete, so the next walk lists only what changed."""

    before: Mapping[str, DirectoryListing] = field(default_factory=dict)
    listed: list[DirectoryListing] = field(default_factory=list)
    """Directories listed this time: new, changed, or not settled when last listed."""
    kept: set[str] = field(default_factory=set)
    """Directories whose listing (old or new) stays stored."""
    reused: int = 0

    @property
    def gone(self) -> list[str]:
        return [path for path in self.before if path not in self.kept]


def printable(path: str) -> str:
    """A path for messages: bytes that are not UTF-8 shown as `\\xNN` escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def is_utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def split_undecodable(paths: list[str]) -> tuple[list[str], list[str]]:
    """(paths with UTF-8 names, the others). One encode of the whole listing answers the
    usual case, where every name is UTF-8."""
    try:
        "\0".join(paths).encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return paths, []
    good: list[str] = []
    bad: list[str] = []
    for path in paths:
        (good if is_utf8(path) else bad).append(path)
    return good, bad


def content_hash(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def _git(
    root: Path, *args: str, timeout: float = LISTING_TIMEOUT
) -> subprocess.CompletedProcess[bytes] | None:
    return git.run(root, *args, timeout=timeout)


def _nul_split(output: bytes) -> list[str]:
    return [name for name in output.decode("utf-8", errors="surrogateescape").split("\0") if name]


def in_git_work_tree(root: Path) -> bool:
    if (root / ".git").exists():
        return True
    result = _git(root, "rev-parse", "--is-inside-work-tree", timeout=10)
    return result is not None and result.returncode == 0 and result.stdout.strip() == b"true"


def git_ls_files(
    root: Path, rules: IgnoreRules, vetted: Callable[[], Container[str]] | None = None
) -> list[str] | None:
    """Tracked plus untracked-but-not-ignored files, then git-ignored files that filescout's
    re-include patterns bring back; None when git cannot list the tree. `vetted` gives the
    paths these same rules let through before (asked once git has answered): they are not
    checked again."""
    if not in_git_work_tree(root):
        return None
    listed = _git_listing(root)
    if listed is None:
        return None
    passed = vetted() if vetted is not None else ()
    paths = [
        path
        for path in dict.fromkeys(listed)
        if path in passed or not rules.is_ignored_after_git(path, git_ignored=False)
    ]
    if rules.has_reincludes:
        paths.extend(_git_reincluded(root, rules))
    return paths


def _git_listing(root: Path, prefix: str = "", depth: int = 0) -> list[str] | None:
    """What `git ls-files` lists (tracked, and untracked but not ignored) in the work tree at
    `root`, and in each checked-out submodule, as git lists them with `--recurse-submodules`
    (which cannot list untracked files). None when git cannot list it."""
    listing = _git(root, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    if listing is None or listing.returncode != 0:
        if listing is not None:
            log.warning("git ls-files failed: %s", listing.stderr.decode(errors="replace").strip())
        return None
    paths = [prefix + path for path in _nul_split(listing.stdout)]
    if depth < SUBMODULE_DEPTH and os.path.lexists(root / ".gitmodules"):
        for submodule in _checked_out_submodules(root):
            inner = _git_listing(root / submodule, f"{prefix}{submodule}/", depth + 1)
            if inner is None:
                log.warning("cannot list the submodule %s%s; its files are left out", prefix, submodule)
            else:
                paths.extend(inner)
    return paths


def _checked_out_submodules(root: Path) -> list[str]:
    """The submodules git's index records (mode 160000) that are checked out: a real directory
    (no symlink, which could lead out of the workspace) holding their `.git`."""
    staged = _git(root, "ls-files", "--stage", "-z")
    if staged is None or staged.returncode != 0:
        return []
    found: list[str] = []
    for entry in _nul_split(staged.stdout):
        mode, _, rest = entry.partition(" ")
        path = rest.partition("\t")[2]
        if mode != "160000" or not path:
            continue
        directory = root / path
        if os.path.realpath(directory) == str(directory) and os.path.lexists(directory / ".git"):
            found.append(path)
    return found


def _git_reincluded(root: Path, rules: IgnoreRules) -> list[str]:
    ignored = _git(root, "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z")
    if ignored is None or ignored.returncode != 0:
        return []
    found: list[str] = []
    for entry in _nul_split(ignored.stdout):
        if entry.endswith("/"):
            directory = entry.rstrip("/")
            if rules.may_reinclude_below(directory):
                candidates: Iterable[str] = _walk_all(root, directory)
            else:
                continue
        else:
            candidates = (entry,)
        found.extend(path for path in candidates if not rules.is_ignored_after_git(path, git_ignored=True))
    return found


def _walk_all(root: Path, directory: str) -> Iterator[str]:
    """Every file below `directory`, symlinked directories not entered (nor one that became a
    symlink meanwhile: each is listed beneath the root)."""
    try:
        beneath = RootDir(root)
    except OSError:
        return
    with beneath:
        stack = [directory]
        while stack:
            current = stack.pop()
            try:
                entries = _entries_beneath(beneath, current)
            except OSError:
                continue
            for name, is_dir in entries:
                if not is_dir:
                    yield f"{current}/{name}"
                elif name != ".git":
                    stack.append(f"{current}/{name}")


def walk(
    root: Path,
    rules: IgnoreRules,
    unlistable: list[str] | None = None,
    memory: WalkMemory | None = None,
    is_cancelled: Callable[[], bool] = lambda: False,
) -> list[str]:
    """A directory walk honoring nested .gitignore files and .git/info/exclude; symlinked
    directories are not entered (they may lead out of the workspace or into cycles), not even
    one that replaced a directory while the walk went on. Directories it cannot list are added
    to `unlistable`; the root itself raises WorkspaceGone.

    With `memory`, a directory whose stamp (mtime, ctime, inode, device) is what it was at the
    last walk, settled then, under the same ignore rules, has the entries it had: they are taken
    from `memory.before` rather than listed and matched again. The files are still stat'ed by
    the scan (a content change does not touch the directory). Restoring a directory's mtime
    (`touch -d`) sets its ctime, so an entry added behind a restored mtime is found too."""
    try:
        beneath = RootDir(root)
    except OSError as exc:
        raise WorkspaceGone(root, exc) from None
    with beneath:
        return _walk(root, beneath, rules, unlistable, memory, is_cancelled)


def _walk(
    root: Path,
    beneath: RootDir,
    rules: IgnoreRules,
    unlistable: list[str] | None,
    memory: WalkMemory | None,
    is_cancelled: Callable[[], bool],
) -> list[str]:
    base = str(root)
    memory = memory if memory is not None else WalkMemory()
    excluded = read_ignore_file(beneath, ".git/info/exclude")
    if excluded is not None:
        rules.add_gitignore("", excluded)
    found: list[str] = []
    # Each directory with whether the ignore rules above it are those of the last walk.
    stack: list[tuple[str, bool]] = [("", True)]
    while stack:
        if is_cancelled():  # a huge tree must not keep a shutdown waiting
            raise InterruptedError("walk cancelled")
        directory, same_rules_above = stack.pop()
        absolute = os.path.join(base, directory) if directory else base
        try:
            stamp = os.lstat(absolute)  # before listing: a change after it shows next time
            previous = memory.before.get(directory) if same_rules_above else None
            unchanged = previous is not None and _unchanged(previous, stamp)
            # An unchanged directory that had no .gitignore has none now: same entries.
            had_none = previous is not None and unchanged and directory and not previous.ignore_digest
            ignored_here = None if had_none else _ignore_lines(beneath, directory)
            if ignored_here is not None:
                rules.add_gitignore(directory, ignored_here)
            digest = _ignore_digest(ignored_here, excluded if not directory else None)
            if previous is not None and unchanged and previous.ignore_digest == digest:
                listing = previous
                memory.reused += 1
                memory.kept.add(directory)
            else:
                listing = _list_directory(beneath, directory, rules, stamp, digest)
                if is_utf8("".join((directory, *listing.files, *listing.subdirs))):  # storable as text
                    memory.listed.append(listing)
                    memory.kept.add(directory)
        except OSError as exc:
            if not directory:
                raise WorkspaceGone(root, exc) from None
            if exc.errno in DENIED and unlistable is not None:
                unlistable.append(directory)
            elif isinstance(exc, (LinkRefused, OutsideRoot)):  # replaced by a symlink meanwhile
                log.debug("not listed: %s", exc)
            else:
                log.warning("cannot list %s: %s", absolute, exc)
            continue
        prefix = f"{directory}/" if directory else ""
        found.extend(prefix + name for name in listing.files)
        same_rules_below = previous is not None and previous.ignore_digest == digest
        stack.extend((prefix + name, same_rules_below) for name in reversed(listing.subdirs))
    return found


def _ignore_lines(beneath: RootDir, directory: str) -> list[str] | None:
    """The patterns of the directory's .gitignore; None without one (or with a symlink there,
    which git does not follow either)."""
    gitignore = f"{directory}/.gitignore" if directory else ".gitignore"
    if not os.path.lexists(f"{beneath.path}/{gitignore}"):  # most directories: one stat
        return None
    return read_ignore_file(beneath, gitignore)


def _ignore_digest(*sources: list[str] | None) -> str:
    """Identifies the ignore rules a directory adds ("" for none)."""
    if all(lines is None for lines in sources):
        return ""
    text = "\0".join("\n".join(lines) if lines is not None else "-" for lines in sources)
    return xxhash.xxh3_64_hexdigest(text.encode("utf-8", "surrogateescape"))


def _unchanged(previous: DirectoryListing, stamp: os.stat_result) -> bool:
    return previous.settled and (
        previous.mtime_ns,
        previous.ctime_ns,
        previous.inode,
        previous.device,
    ) == (stamp.st_mtime_ns, stamp.st_ctime_ns, stamp.st_ino, stamp.st_dev)


def _entries_beneath(beneath: RootDir, directory: str) -> list[tuple[str, bool]]:
    """(name, whether it is a directory, not a link to one) of each entry, sorted by name,
    listed through a descriptor reached beneath the root: a directory replaced by a symlink
    meanwhile raises LinkRefused rather than being listed. Entries whose type cannot be found
    (gone meanwhile) are left out."""
    fd = beneath.open(directory, follow_links=False, directory=True)
    try:
        with os.scandir(fd) as iterator:
            found: list[tuple[str, bool]] = []
            for entry in iterator:
                try:  # while `fd` is open: an entry's type may be looked up relative to it
                    found.append((entry.name, entry.is_dir(follow_symlinks=False)))
                except OSError:
                    continue
    finally:
        os.close(fd)
    found.sort()
    return found


def _list_directory(
    beneath: RootDir, directory: str, rules: IgnoreRules, stamp: os.stat_result, digest: str
) -> DirectoryListing:
    """The files and the directories to enter in one directory, by the rules. Raises OSError
    when it cannot be listed (LinkRefused when it is a symlink now)."""
    files: list[str] = []
    subdirs: list[str] = []
    for name, is_dir in _entries_beneath(beneath, directory):
        relative = f"{directory}/{name}" if directory else name
        if is_dir:
            if not rules.is_ignored(relative, is_dir=True) or rules.may_reinclude_below(relative):
                subdirs.append(name)
        elif not rules.is_ignored(relative):
            files.append(name)
    return DirectoryListing(
        path=directory,
        mtime_ns=stamp.st_mtime_ns,
        ctime_ns=stamp.st_ctime_ns,
        inode=stamp.st_ino,
        device=stamp.st_dev,
        # Entries changed within a timestamp tick of the listing may change again unseen.
        settled=not recently_modified(max(stamp.st_mtime_ns, stamp.st_ctime_ns)),
        ignore_digest=digest,
        files=tuple(files),
        subdirs=tuple(subdirs),
    )


def enumerate_files(
    root: Path,
    rules: IgnoreRules,
    vetted: Callable[[], Container[str]] | None = None,
    walked_before: Mapping[str, DirectoryListing] | None = None,
    is_cancelled: Callable[[], bool] = lambda: False,
) -> Listing:
    """Workspace-relative paths of candidate files, and how they were found. Names that are not
    valid UTF-8 are set aside, so one such file never stops a pass. A workspace folder that
    cannot be listed raises WorkspaceGone rather than looking empty. `walked_before`: the
    directory listings the last complete walk under these rules left (see `walk`)."""
    require_root(root)
    listed = git_ls_files(root, rules, vetted)
    source = "git"
    unlistable: list[str] = []
    memory: WalkMemory | None = None
    if listed is None:
        memory = WalkMemory(walked_before or {})
        listed, source = walk(root, rules, unlistable, memory, is_cancelled), "walk"
    paths, undecodable = split_undecodable(listed)
    return Listing(paths, source, undecodable, unlistable, memory)


def stat_inside(root: str, relative: str, *, check_parents: bool = False) -> os.stat_result | None:
    """Stat a regular file; a symlink counts only if it resolves inside the root. With
    `check_parents`, a path through a symlinked directory must stay inside too (listings never
    pass through one; a path an editor reports may)."""
    absolute = f"{root}/{relative}"
    try:
        if check_parents and "/" in relative:
            parent = os.path.realpath(absolute.rpartition("/")[0])
            if os.path.commonpath([root, parent]) != root:
                return None
        info = os.lstat(absolute)
        if stat_mod.S_ISLNK(info.st_mode):
            target = os.path.realpath(absolute)
            if os.path.commonpath([root, target]) != root:
                return None
            info = os.stat(target)
    except (OSError, ValueError):
        return None
    return info if stat_mod.S_ISREG(info.st_mode) else None


def recently_modified(mtime_ns: int) -> bool:
    """Modified so recently that a further change may leave size and mtime as they are."""
    return mtime_ns >= time.time_ns() - RACY_NS


def read_record(
    root: RootDir | str, relative: str, info: os.stat_result, max_file_size: int
) -> FileRecord | None:
    """Hash and classify one file, with the size and mtime of the version read. Oversized files
    are hashed by their first megabyte and size: enough to notice change, never a reason to
    read gigabytes. None when the file vanished, is no regular file any more, or lies outside
    the root (a link that leads out, even one retargeted since the stat); raises
    PermissionError and ChangedWhileRead."""
    found = _read_and_record(root, relative, info.st_size, max_file_size)
    return found[0] if found is not None else None


def _read_and_record(
    root: RootDir | str, relative: str, listed_size: int, max_file_size: int
) -> tuple[FileRecord, bytes] | None:
    """The record of one file and the bytes it was made from (see `read_record`)."""
    if extracted_format(relative):
        max_file_size = max(max_file_size, EXTRACTED_SIZE_LIMIT)
    try:
        with opened(root) as beneath:
            limit = OVERSIZED_HASH_BYTES if listed_size > max_file_size else -1
            found = read_regular(beneath, relative, limit)
            if found is not None and found[1].st_size <= max_file_size < listed_size:
                found = read_regular(beneath, relative)  # it shrank since it was listed: read it all
    except (PermissionError, ChangedWhileRead):
        raise
    except OSError as exc:
        log.debug("cannot read %s: %s", relative, exc)
        return None
    if found is None:
        return None
    data, info = found
    oversized = info.st_size > max_file_size
    classification = classify(relative, data[:BINARY_SNIFF_BYTES])
    digest = (
        content_hash(data)
        if not oversized
        else f"{content_hash(data[:OVERSIZED_HASH_BYTES])[:24]}{info.st_size:08x}"
    )
    record = FileRecord(
        path=relative,
        size=info.st_size,
        mtime_ns=info.st_mtime_ns,
        hash=digest,
        language=classification.language,
        kind=classification.kind,
        skip_reason=classification.skip_reason(oversized=oversized),
    )
    return record, data


def read_outcome(root: RootDir | str, relative: str, listed_size: int, max_file_size: int) -> ReadOutcome:
    """Read, hash and classify one file and, when it is to be annotated (not skipped), find
    its content words from the same bytes: one read per change serves the catalogue and the
    content index."""
    try:
        found = _read_and_record(root, relative, listed_size, max_file_size)
    except PermissionError:
        return ReadOutcome(denied=True)
    except ChangedWhileRead:
        return ReadOutcome(changing=True)
    if found is None:
        return ReadOutcome()
    record, data = found
    if record.skip_reason is not None:
        return ReadOutcome(record)
    body = body_words(readable(record.kind, record.language, data)[0])
    if not body and record.kind in EXTRACTED_KINDS:  # a picture: no words, and no empty row either
        return ReadOutcome(record)
    return ReadOutcome(record, (record.hash, body, pack_words(body)))


def readable(kind: str, language: str | None, data: bytes) -> tuple[str, DocumentFacts | None]:
    """What a file says in words: a text file's text, or a document's or an image's extracted
    text and its facts (bounded in time and size; trouble is a fact, never an exception)."""
    if kind in EXTRACTED_KINDS and language:
        extracted = extract(language, data)
        return extracted.text, extracted.facts
    return content_text(data), None


def read_outcomes(job: ReadJob) -> list[ReadOutcome]:
    """`read_outcome` for each file of a job, in order (what a worker process runs), the root
    opened once for them all."""
    root, items, max_file_size = job
    try:
        beneath = RootDir(root)
    except OSError as exc:  # the folder is gone: so is every file of the job
        log.debug("cannot open %s: %s", root, exc)
        return [ReadOutcome() for _ in items]
    with beneath:
        return [read_outcome(beneath, relative, size, max_file_size) for relative, size in items]


def read_here(job: ReadJob) -> Future[list[ReadOutcome]]:
    """A Reader that reads in the calling thread."""
    done: Future[list[ReadOutcome]] = Future()
    try:
        done.set_result(read_outcomes(job))
    except BaseException as exc:
        done.set_exception(exc)
    return done


def scan(
    root: Path,
    known: Mapping[str, KnownFile],
    listing: Listing,
    *,
    max_file_size: int,
    progress: ProgressCallback | None = None,
    is_cancelled: Callable[[], bool] = lambda: False,
    batch_size: int = BATCH_SIZE,
    reader: Reader = read_here,
) -> Iterator[ScanBatch]:
    """Compare the listed files with `known` (the index's view): stat first, read and hash
    only when the stat changed. This thread lists and stats; `reader` reads, hashes,
    classifies and finds the words of what changed, in chunks, several under way at once
    (results are taken in listing order). Yields batches; the last one carries the removed
    paths. A file that keeps changing while it is read keeps its row as it was (see
    `settling`); a workspace folder gone by the end raises WorkspaceGone rather than taking
    every file with it."""
    base = str(root)
    prefix = base + "/"
    total = len(listing.paths)
    seen: set[str] = set()
    lstat, is_regular, known_get = os.lstat, stat_mod.S_ISREG, known.get  # the hot loop
    inside: dict[str, bool] = {"": True}
    reads = _Reads(base, max_file_size, reader, seen, batch_size)

    def directory_inside(directory: str) -> bool:
        """Git lists what its index holds, even below a directory since replaced by a symlink
        to elsewhere: each directory is checked once per scan."""
        verdict = inside.get(directory)
        if verdict is None:
            verdict = directory_inside(directory.rpartition("/")[0])
            if verdict:
                try:
                    is_link = stat_mod.S_ISLNK(lstat(prefix + directory).st_mode)
                except OSError:
                    is_link, verdict = False, False
                if is_link:
                    verdict = os.path.commonpath([base, os.path.realpath(prefix + directory)]) == base
            inside[directory] = verdict
        return verdict

    try:
        for index, relative in enumerate(listing.paths):
            if index % 1000 == 0:
                if progress is not None:
                    progress(index, total)
                if is_cancelled():
                    raise InterruptedError("scan cancelled")
            try:
                info = lstat(prefix + relative)
            except OSError as exc:
                if exc.errno in DENIED:  # a directory on the way may not be searched
                    reads.batch.unreadable.append(relative)
                continue
            if not directory_inside(relative.rpartition("/")[0]):
                continue
            if not is_regular(info.st_mode):
                followed = stat_inside(base, relative)  # a symlink, or not a file at all
                if followed is None:
                    continue
                info = followed
            previous = known_get(relative)
            if previous is not None and previous[1] == info.st_size and previous[2] == info.st_mtime_ns:
                seen.add(relative)
                reads.batch.unchanged += 1
                continue
            reads.add(relative, info.st_size, known=previous is not None)
            yield from reads.ready()
        yield from reads.finish()
    finally:
        reads.abandon()
    if progress is not None:
        progress(total, total)
    require_root(root)  # files that vanished with the folder are not gone from the workspace
    batch = reads.batch
    batch.removed = [path for path in known if path not in seen]
    yield batch


class _Reads:
    """The files a scan reads, in chunks handed to a reader, and their outcomes folded into
    batches in listing order."""

    def __init__(
        self, base: str, max_file_size: int, reader: Reader, seen: set[str], batch_size: int
    ) -> None:
        self.batch = ScanBatch()
        self._base = base
        self._max_file_size = max_file_size
        self._reader = reader
        self._seen = seen
        self._batch_size = batch_size
        self._chunk: list[tuple[str, int]] = []
        self._known: list[bool] = []
        self._in_flight: deque[tuple[list[tuple[str, int]], list[bool], Future[list[ReadOutcome]]]] = deque()

    def add(self, relative: str, listed_size: int, *, known: bool) -> None:
        self._chunk.append((relative, listed_size))
        self._known.append(known)
        if len(self._chunk) >= READ_CHUNK:
            self._send()

    def _send(self) -> None:
        if self._chunk:
            future = self._reader((self._base, self._chunk, self._max_file_size))
            self._in_flight.append((self._chunk, self._known, future))
            self._chunk, self._known = [], []

    def ready(self) -> Iterator[ScanBatch]:
        """Fold in the oldest chunks while more are under way than the readers need."""
        while len(self._in_flight) > READS_IN_FLIGHT:
            yield from self._take_oldest()

    def finish(self) -> Iterator[ScanBatch]:
        self._send()
        while self._in_flight:
            yield from self._take_oldest()

    def abandon(self) -> None:
        """A scan that stops early leaves nothing queued behind it."""
        for _, _, future in self._in_flight:
            future.cancel()
        self._in_flight.clear()

    def _take_oldest(self) -> Iterator[ScanBatch]:
        items, known, future = self._in_flight.popleft()
        for (relative, _), was_known, outcome in zip(items, known, future.result(), strict=True):
            self._fold(relative, was_known, outcome)
            if len(self.batch.changed) >= self._batch_size:
                yield self.batch
                self.batch = ScanBatch()

    def _fold(self, relative: str, known: bool, outcome: ReadOutcome) -> None:
        batch, record = self.batch, outcome.record
        if outcome.denied:
            batch.unreadable.append(relative)
        elif outcome.changing:
            if known:  # its row stays as it was until it holds still
                self._seen.add(relative)
            batch.settling.append((relative, ""))
        elif record is not None:
            self._seen.add(relative)
            if recently_modified(record.mtime_ns):
                batch.settling.append((relative, record.hash))
            batch.changed.append(record)
            if outcome.words is not None:
                batch.bodies.append(outcome.words)
            batch.added += not known


def scan_paths(
    root: Path,
    paths: Iterable[str],
    known: Mapping[str, KnownFile],
    rules: IgnoreRules,
    *,
    git_mode: bool,
    max_file_size: int,
    reread: bool = False,
) -> ScanBatch:
    """Re-examine a few paths (a save, a watcher event): changed ones are re-read, vanished or
    now-ignored ones are reported removed. With `reread`, files are read even when their stat
    did not change (their content was found not to match the index). A workspace folder that
    cannot be listed raises WorkspaceGone: its files are not known to be gone."""
    base = str(root)
    require_root(root)
    batch = ScanBatch()
    candidates = [path for path in dict.fromkeys(paths) if is_utf8(path)]  # as a full scan does
    # Indexed paths passed the rules already (a rule change triggers a full rescan instead).
    ignored = git_check_ignore(root, [p for p in candidates if p not in known]) if git_mode else set()
    try:
        beneath = RootDir(base)  # one for every path: a checkout reports thousands at once
    except OSError as exc:
        raise WorkspaceGone(root, exc) from None
    with beneath:
        for relative in candidates:
            excluded = (
                rules.is_ignored_after_git(relative, git_ignored=relative in ignored)
                if git_mode
                else rules.is_ignored(relative)
            )
            info = None if excluded else stat_inside(base, relative, check_parents=True)
            previous = known.get(relative)
            if info is None:
                if previous is not None:
                    batch.removed.append(relative)
            elif (
                not reread
                and previous is not None
                and previous[1] == info.st_size
                and previous[2] == info.st_mtime_ns
            ):
                batch.unchanged += 1
            else:
                outcome = read_outcome(beneath, relative, info.st_size, max_file_size)
                _fold_rescanned(batch, relative, outcome, known=previous is not None)
    return batch


def _fold_rescanned(batch: ScanBatch, relative: str, outcome: ReadOutcome, *, known: bool) -> None:
    """Add what reading one re-examined file found to `batch`."""
    if outcome.changing:
        batch.settling.append((relative, ""))
        return
    if outcome.denied:
        batch.unreadable.append(relative)
    if (record := outcome.record) is not None:
        if recently_modified(record.mtime_ns):
            batch.settling.append((relative, record.hash))
        batch.changed.append(record)
        if outcome.words is not None:
            batch.bodies.append(outcome.words)
        batch.added += not known
    elif known:
        batch.removed.append(relative)


def drifted(root: Path, read: Mapping[str, str], *, max_file_size: int) -> list[str]:
    """Of files read before (path -> the hash read then), those whose content is not that any
    more, or that cannot be read as a whole now."""
    base = str(root)
    found: list[str] = []
    try:
        beneath = RootDir(base)
    except OSError:  # the folder is gone: whatever was read may not be what is there
        return list(read)
    with beneath:
        for relative, digest in read.items():
            info = stat_inside(base, relative)
            try:
                record = read_record(beneath, relative, info, max_file_size) if info is not None else None
            except OSError:
                record = None
            if record is None or record.hash != digest:
                found.append(relative)
    return found


def git_check_ignore(root: Path, paths: list[str]) -> set[str]:
    """Which of `paths` git ignores (one `git check-ignore --stdin` for all of them)."""
    if not paths:
        return set()
    stdin = b"\0".join(path.encode("utf-8", "surrogateescape") for path in paths) + b"\0"
    result = git.run(root, "check-ignore", "--stdin", "-z", timeout=60, input=stdin)
    if result is None:
        return set()
    return set(_nul_split(result.stdout))
