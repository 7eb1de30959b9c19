"""Enumerate the workspace, detect what changed since the last scan, hash what did.

Synchronous on purpose: the engine runs it in a worker thread, and plain loops over `os.stat`
and `read` are the fastest thing Python has for this.
"""

from __future__ import annotations

import logging
import os
import stat as stat_mod
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import xxhash

from filescout.classify import BINARY_SNIFF_BYTES, classify, is_binary
from filescout.ignore import IgnoreRules, read_ignore_file

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
"""(files examined, files in total)"""


@dataclass(frozen=True, slots=True)
class KnownFile:
    size: int
    mtime_ns: int
    hash: str


@dataclass(slots=True)
class ScannedFile:
    path: str
    size: int
    mtime_ns: int
    hash: str
    language: str | None
    kind: str
    sensitive: bool


@dataclass(slots=True)
class ScanResult:
    changed: list[ScannedFile] = field(default_factory=list)
    """New files and files whose content or stat changed."""
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: int = 0
    """Files seen but left out: binary, oversized, unreadable."""
    added: int = 0
    """How many of `changed` were not in the index before."""
    source: str = "walk"


def content_hash(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def git_ls_files(root: Path) -> list[str] | None:
    """Tracked plus untracked-but-not-ignored files, or None outside a git work tree."""
    if not (root / ".git").exists():
        try:
            inside = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
                capture_output=True, text=True, timeout=10, check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return None
    try:
        listing = subprocess.run(
            ["git", "-c", "core.quotepath=off", "-C", str(root), "ls-files", "--cached",
             "--others", "--exclude-standard", "-z"],
            capture_output=True, timeout=300, check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("git ls-files failed (%s); walking the tree instead", exc)
        return None
    if listing.returncode != 0:
        log.warning("git ls-files failed: %s; walking the tree instead",
                    listing.stderr.decode(errors="replace").strip())
        return None
    names = listing.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    return list(dict.fromkeys(name for name in names if name))


def walk(root: Path, rules: IgnoreRules) -> list[str]:
    """A directory walk honoring nested .gitignore files; symlinked directories are not
    entered (they may lead out of the workspace or into cycles)."""
    found: list[str] = []
    stack: list[str] = [""]
    while stack:
        directory = stack.pop()
        absolute = root / directory if directory else root
        gitignore = absolute / ".gitignore"
        if gitignore.is_file():
            rules.add_gitignore(directory, read_ignore_file(gitignore))
        try:
            entries = sorted(os.scandir(absolute), key=lambda entry: entry.name)
        except OSError as exc:
            log.warning("cannot list %s: %s", absolute, exc)
            continue
        subdirs: list[str] = []
        for entry in entries:
            relative = f"{directory}/{entry.name}" if directory else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not rules.is_ignored(relative, is_dir=True):
                        subdirs.append(relative)
                elif not rules.is_ignored(relative):
                    found.append(relative)
            except OSError:
                continue
        stack.extend(reversed(subdirs))
    return found


def enumerate_files(root: Path, rules: IgnoreRules) -> tuple[list[str], str]:
    """Workspace-relative paths of candidate files, and how they were found."""
    listed = git_ls_files(root)
    if listed is None:
        return walk(root, rules), "walk"
    return [path for path in listed if not rules.is_ignored(path)], "git"


def _stat_inside(root: Path, absolute: Path) -> os.stat_result | None:
    """Stat a regular file; a symlink counts only if it resolves inside the root."""
    try:
        info = os.lstat(absolute)
        if stat_mod.S_ISLNK(info.st_mode):
            target = absolute.resolve(strict=True)
            target.relative_to(root)
            info = os.stat(target)
    except (OSError, ValueError, RuntimeError):
        return None
    return info if stat_mod.S_ISREG(info.st_mode) else None


def scan(
    root: Path,
    known: Mapping[str, KnownFile],
    rules: IgnoreRules,
    *,
    max_file_size: int,
    progress: ProgressCallback | None = None,
    is_cancelled: Callable[[], bool] = lambda: False,
) -> ScanResult:
    """Compare the workspace with `known` (the index's view): stat first, hash only when the
    stat changed."""
    paths, source = enumerate_files(root, rules)
    result = ScanResult(source=source)
    total = len(paths)
    seen: set[str] = set()
    for index, relative in enumerate(paths):
        if progress is not None and index % 500 == 0:
            progress(index, total)
            if is_cancelled():
                raise InterruptedError("scan cancelled")
        info = _stat_inside(root, root / relative)
        if info is None or info.st_size > max_file_size:
            result.skipped += 1
            continue
        previous = known.get(relative)
        if previous is not None and previous.size == info.st_size and previous.mtime_ns == info.st_mtime_ns:
            seen.add(relative)
            result.unchanged += 1
            continue
        scanned = read_and_classify(root, relative, info)
        if scanned is None:
            result.skipped += 1
            continue
        seen.add(relative)
        result.changed.append(scanned)
        result.added += previous is None
    if progress is not None:
        progress(total, total)
    result.removed = [path for path in known if path not in seen]
    return result


def read_and_classify(root: Path, relative: str, info: os.stat_result) -> ScannedFile | None:
    try:
        with open(root / relative, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        log.debug("cannot read %s: %s", relative, exc)
        return None
    head = data[:BINARY_SNIFF_BYTES]
    if is_binary(head):
        return None
    classification = classify(relative, head)
    return ScannedFile(
        path=relative,
        size=len(data),
        mtime_ns=info.st_mtime_ns,
        hash=content_hash(data),
        language=classification.language,
        kind=classification.kind,
        sensitive=classification.sensitive,
    )
