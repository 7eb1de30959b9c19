"""Reads of workspace content never leave the workspace root: a symlink retargeted between the
scan's stat and its read, a directory swapped for a symlink, links in the settings and ignore
files, kernel views that block or lie about their size, and UTF-16 source files. In process,
against real files in tmp_path. (The same, with the server as a subprocess under strace:
tests/e2e/test_outside_opens.py.)"""

from __future__ import annotations

import asyncio
import codecs
import errno
import glob
import logging
import os
import select
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from filescout.annotate.jobs import AnnotationJob, annotate_batch, read_text
from filescout.core.beneath import (
    MAX_LINKS,
    MAX_RULES_FILE_BYTES,
    LinkRefused,
    OutsideRoot,
    RootDir,
    read_rules_file,
)
from filescout.core.records import PendingFile
from filescout.core.words import content_text
from filescout.engine.settings import from_file
from filescout.scan.classify import classify
from filescout.scan.ignore import IgnoreRules
from filescout.scan.tree import content_hash, read_outcome, read_outcomes, read_record, stat_inside, walk
from filescout.vcs.commits import head_signature

SECRET = "zqxOutsideSecret"
SECRET_SOURCE = f"def {SECRET}():\n    return 'kept outside the workspace'\n"
HANG_GUARD = 20.0  # seconds; only so that a read stuck on a FIFO fails instead of hanging


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(root, outside): a workspace with `inside.py` and `link.py -> inside.py`, and a folder
    beside it holding a secret."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "inside.py").write_text("def inside_function():\n    return 1\n")
    (root / "link.py").symlink_to("inside.py")
    (outside / "secret.py").write_text(SECRET_SOURCE)
    return root, outside


def retarget(link: Path, target: Path | str) -> None:
    """Point `link` elsewhere in one step (rename over it), as `git checkout` or a tool might."""
    spare = link.with_name(link.name + ".new")
    spare.symlink_to(target)
    os.replace(spare, link)


def pending_of(path: str, data: bytes) -> PendingFile:
    return PendingFile(path, content_hash(data), "python", "source", len(data), None)


# -- the scan's stat, then its read -------------------------------------------------------


def test_a_link_retargeted_outside_after_its_stat_is_never_read(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    info = stat_inside(str(root), "link.py")
    assert info is not None  # the scan saw a link to a file inside
    retarget(root / "link.py", outside / "secret.py")  # ... and then it moved
    outcome = read_outcome(str(root), "link.py", info.st_size, 1 << 20)
    assert outcome.record is None and outcome.words is None


def test_a_folder_swapped_for_a_link_outside_after_its_stat_is_never_read(
    layout: tuple[Path, Path],
) -> None:
    root, outside = layout
    (root / "pkg").mkdir()
    (root / "pkg/secret.py").write_text("def package_function():\n    return 2\n")
    info = stat_inside(str(root), "pkg/secret.py", check_parents=True)
    assert info is not None
    (root / "pkg/secret.py").unlink()
    (root / "pkg").rmdir()
    (root / "pkg").symlink_to(outside, target_is_directory=True)
    assert read_outcome(str(root), "pkg/secret.py", info.st_size, 1 << 20).record is None


def test_a_folder_swapped_for_a_link_outside_within_a_batch_is_not_followed(
    layout: tuple[Path, Path],
) -> None:
    """A batch keeps the last file's directory open: a later file of the same directory, after
    the directory became a link to elsewhere, is not read through the link."""
    root, outside = layout
    (root / "pkg").mkdir()
    (root / "pkg/first.py").write_text("FIRST = 1\n")
    (outside / "second.py").write_text(SECRET_SOURCE)
    with RootDir(root) as opened:
        assert read_outcome(opened, "pkg/first.py", 0, 1 << 20).record is not None
        (root / "pkg/first.py").unlink()
        (root / "pkg").rmdir()
        (root / "pkg").symlink_to(outside, target_is_directory=True)
        assert read_outcome(opened, "pkg/second.py", 0, 1 << 20).record is None
        assert read_outcome(opened, "pkg/first.py", 0, 1 << 20).record is None


def test_links_that_stay_inside_are_read_as_before(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "src/deep").mkdir(parents=True)
    (root / "src/deep/mod.py").write_text("def deep_function():\n    return 3\n")
    (root / "absolute.py").symlink_to(root / "inside.py")  # absolute, below the root
    (root / "lib").symlink_to("src", target_is_directory=True)
    (root / "src/deep/up").symlink_to("../..", target_is_directory=True)  # the root again
    (root / "chain.py").symlink_to("link.py")
    for relative, word in [
        ("link.py", "inside_function"),
        ("absolute.py", "inside_function"),
        ("chain.py", "inside_function"),
        ("lib/deep/mod.py", "deep_function"),
        ("src/deep/up/lib/deep/up/inside.py", "inside_function"),
    ]:
        outcome = read_outcome(str(root), relative, 0, 1 << 20)
        assert outcome.words is not None and word in outcome.words[1], relative


# -- annotation's reads (structural jobs, the model's queue, opened files) ----------------


def test_annotation_never_reads_a_link_retargeted_outside(layout: tuple[Path, Path]) -> None:
    """A file the index knows with the outside file's content (a scan that lost the race) must
    not get the outside file's outline as its annotation."""
    root, outside = layout
    retarget(root / "link.py", outside / "secret.py")
    pending = pending_of("link.py", SECRET_SOURCE.encode())
    assert read_text(root, pending) is None  # the model's queue and opened files read so
    done = annotate_batch(AnnotationJob(str(root), [pending]))
    assert done.annotations == [] and done.changed == ["link.py"]


def test_annotation_still_follows_links_inside(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    data = (root / "inside.py").read_bytes()
    done = annotate_batch(AnnotationJob(str(root), [pending_of("link.py", data)]))
    assert [annotation.symbols for _, annotation in done.annotations] == [["inside_function"]]


# -- the opener itself -----------------------------------------------------------------------


def test_every_way_out_is_refused_without_opening_it(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "sub").mkdir()
    (root / "relative_out.py").symlink_to("../outside/secret.py")
    (root / "absolute_out.py").symlink_to(outside / "secret.py")
    (root / "slash").symlink_to("/", target_is_directory=True)
    (root / "sub/climb").symlink_to("../../outside", target_is_directory=True)
    (root / "sub/dotted.py").symlink_to(f"{root}/sub/../../outside/secret.py")
    with RootDir(root) as opened:
        for relative in [
            "relative_out.py",
            "absolute_out.py",
            "slash/etc/passwd",
            "sub/climb/secret.py",
            "sub/dotted.py",
            "../outside/secret.py",
            "sub/../../outside/secret.py",
        ]:
            with pytest.raises(OutsideRoot):
                opened.open(relative)


def test_a_root_reached_through_a_link_keeps_its_absolute_links(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.py").write_text("A = 1\n")
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    (real / "via_alias.py").symlink_to(tmp_path / "alias/a.py")
    (real / "via_real.py").symlink_to(real / "a.py")
    with RootDir(tmp_path / "alias") as opened:
        for relative in ("via_alias.py", "via_real.py"):
            fd = opened.open(relative)
            try:
                assert os.read(fd, 10) == b"A = 1\n"
            finally:
                os.close(fd)


def test_link_loops_end_in_an_error(tmp_path: Path) -> None:
    (tmp_path / "self.py").symlink_to("self.py")
    ring = MAX_LINKS + 5
    for index in range(ring):
        (tmp_path / f"chain{index}").symlink_to(f"chain{(index + 1) % ring}")
    (tmp_path / "up").symlink_to(".", target_is_directory=True)
    with RootDir(tmp_path) as opened:
        for relative in ("self.py", "chain0", "up/" * (MAX_LINKS + 1) + "x"):
            with pytest.raises(OSError) as caught:
                opened.open(relative)
            assert caught.value.errno == errno.ELOOP, relative


def test_without_links_any_link_on_the_way_is_refused(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "src").mkdir()
    (root / "src/real.txt").write_text("x")
    (root / "alias").symlink_to("src", target_is_directory=True)
    with RootDir(root) as opened:
        for relative in ("link.py", "alias/real.txt"):
            with pytest.raises(LinkRefused):
                opened.open(relative, follow_links=False)
        os.close(opened.open("src/real.txt", follow_links=False))


# -- settings and ignore files --------------------------------------------------------------


def test_a_linked_filescoutignore_is_not_read(
    layout: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    root, outside = layout
    (outside / "rules").write_text("inside.py\n")
    (root / ".filescoutignore").symlink_to(outside / "rules")
    with caplog.at_level(logging.INFO, logger="filescout"):
        assert not IgnoreRules.for_workspace(root).is_ignored("inside.py")
        assert not IgnoreRules.for_workspace(root).is_ignored("inside.py")
    said = [record for record in caplog.records if ".filescoutignore" in record.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO  # once, not on every scan


def test_a_filescoutignore_linked_inside_is_not_read_either(layout: tuple[Path, Path]) -> None:
    """git's rule for .gitignore: a symlink is never followed, wherever it leads."""
    root, _ = layout
    (root / "rules.txt").write_text("inside.py\n")
    (root / ".filescoutignore").symlink_to("rules.txt")
    assert not IgnoreRules.for_workspace(root).is_ignored("inside.py")


def test_a_linked_gitignore_is_not_read_by_the_walk(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (outside / "rules").write_text("*.py\n")
    (root / "sub").mkdir()
    (root / "sub/kept.py").write_text("KEPT = 1\n")
    (root / "sub/.gitignore").symlink_to(outside / "rules")
    (root / ".git/info").mkdir(parents=True)
    (root / ".git/info/exclude").symlink_to(outside / "rules")
    listed = walk(root, IgnoreRules.for_workspace(root))
    assert {"inside.py", "sub/kept.py"} <= set(listed)


def test_a_linked_settings_file_is_not_read(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (outside / "settings.toml").write_text('exclude = ["src/**"]\nmaxFileSize = 7\n')
    (root / "filescout.toml").symlink_to(outside / "settings.toml")
    assert from_file(root) == ({}, None)


def test_plain_settings_and_ignore_files_are_read(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "filescout.toml").write_text("maxFileSize = 7\n")
    (root / ".filescoutignore").write_text("inside.py\n")
    assert from_file(root) == ({"maxFileSize": 7}, None)
    assert IgnoreRules.for_workspace(root).is_ignored("inside.py")


async def without_hanging_on(fifo: Path, call: Callable[[], object]) -> object:
    """`call`'s result; if it waits on `fifo` for long, the FIFO is unblocked and the test fails."""
    task = asyncio.ensure_future(asyncio.to_thread(call))
    try:
        return await asyncio.wait_for(asyncio.shield(task), HANG_GUARD)
    except asyncio.TimeoutError:
        writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(writer)
        await task
        raise AssertionError(f"reading {fifo.name} waited for a writer") from None


async def test_a_fifo_as_settings_or_ignore_file_is_never_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "filescout.toml")
    os.mkfifo(tmp_path / ".filescoutignore")
    assert await without_hanging_on(tmp_path / "filescout.toml", lambda: from_file(tmp_path)) == ({}, None)
    rules = await without_hanging_on(
        tmp_path / ".filescoutignore", lambda: IgnoreRules.for_workspace(tmp_path)
    )
    assert isinstance(rules, IgnoreRules)
    assert read_rules_file(tmp_path, ".filescoutignore") is None


async def test_git_head_is_read_beneath_the_root_and_never_waited_on(tmp_path: Path) -> None:
    """What HEAD is, read from `.git` every pass: a FIFO there must not hang the history, and a
    link out of the workspace must not be read."""
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / ".git/HEAD")
    signature = await without_hanging_on(tmp_path / ".git/HEAD", lambda: head_signature(tmp_path))
    assert signature in (None, "")
    (tmp_path / ".git/HEAD").unlink()
    (tmp_path / "outside").write_text("ref: refs/heads/zqxoutsidebranch\n")
    (tmp_path / "ws/.git/refs/heads").mkdir(parents=True)
    (tmp_path / "ws/.git/refs/heads/main").write_text("0" * 40 + "\n")
    (tmp_path / "ws/.git/HEAD").symlink_to(tmp_path / "outside")
    assert "zqxoutsidebranch" not in (head_signature(tmp_path / "ws") or "")
    (tmp_path / "ws/.git/HEAD").unlink()
    (tmp_path / "ws/.git/HEAD").symlink_to("refs/heads/main")  # git's old symbolic HEAD: inside
    assert head_signature(tmp_path / "ws") == "0" * 40


# -- kernel views ---------------------------------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_kernel_views_are_left_out_file_by_file() -> None:
    """/proc's files say they are empty and are not: each is left out at once, never looked
    at again and again as a file that keeps changing."""
    outcomes = read_outcomes(("/proc", [("self/status", 0), ("cpuinfo", 0), ("version", 0)], 1 << 20))
    assert [(o.record, o.changing, o.denied) for o in outcomes] == [(None, False, False)] * 3


def sysfs_views() -> list[str]:
    """A few readable sysfs attributes: they say 4096 bytes, hold fewer, and are stored nowhere."""
    found = []
    for path in sorted(glob.glob("/sys/kernel/*")):
        info = os.lstat(path)
        if (
            stat.S_ISREG(info.st_mode)
            and info.st_mode & 0o444
            and (info.st_size, info.st_blocks) == (4096, 0)
        ):
            found.append(path.removeprefix("/sys/"))
    return found[:3]


def test_sysfs_views_are_left_out_file_by_file() -> None:
    views = sysfs_views()
    if not views:
        pytest.skip("no sysfs attributes to read here")
    outcomes = read_outcomes(("/sys", [(view, 0) for view in views], 1 << 20))
    assert [(o.record, o.changing) for o in outcomes] == [(None, False)] * len(views)


def kmsg_would_block() -> bool:
    """Whether /proc/kmsg may be opened and has nothing to read now (a read would block).
    Reading it takes messages from the kernel's log for good, so it is only read when empty."""
    try:
        fd = os.open("/proc/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return not poller.poll(0)
    finally:
        os.close(fd)


def test_a_read_that_would_block_leaves_that_file_out() -> None:
    if not kmsg_would_block():
        pytest.skip("/proc/kmsg cannot be opened here, or holds messages a read would consume")
    listed = os.stat("/proc/kmsg")
    assert read_record("/proc", "kmsg", listed, 1 << 20) is None
    outcomes = read_outcomes(("/proc", [("kmsg", 0), ("version", 0)], 1 << 20))
    assert [o.record for o in outcomes] == [None, None]


# -- UTF-16 ---------------------------------------------------------------------------------

UTF16_SOURCE = "class Résumé:\n    def render_utf16_page(self):\n        return 'ok'\n"


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_source_with_a_byte_order_mark_is_text(tmp_path: Path, codec: str) -> None:
    bom = codecs.BOM_UTF16_LE if codec.endswith("le") else codecs.BOM_UTF16_BE
    data = bom + UTF16_SOURCE.encode(codec)
    found = classify("page.py", data)
    assert (found.kind, found.language) == ("source", "python")
    assert content_text(data) == UTF16_SOURCE
    (tmp_path / "page.py").write_bytes(data)
    outcome = read_outcome(str(tmp_path), "page.py", len(data), 1 << 20)
    assert outcome.record is not None and outcome.record.skip_reason is None
    assert outcome.words is not None and "render_utf16_page" in outcome.words[1]
    done = annotate_batch(AnnotationJob(str(tmp_path), [pending_of("page.py", data)]))
    assert [annotation.symbols for _, annotation in done.annotations] == [["Résumé", "render_utf16_page"]]


def test_nul_bytes_without_a_byte_order_mark_are_still_binary() -> None:
    assert classify("blob.py", b"ab\x00cd").kind == "binary"
    assert classify("blob.py", codecs.BOM_UTF16_LE + b"\x00\x00\x00\x00").kind == "binary"  # UTF-32


def test_reads_share_one_root_across_threads(layout: tuple[Path, Path]) -> None:
    """A root opened once serves reads from several threads (a batch read in parallel)."""
    root, _ = layout
    failures: list[BaseException] = []
    with RootDir(root) as opened:

        def read_many() -> None:
            try:
                for _ in range(200):
                    fd = opened.open("link.py")
                    os.close(fd)
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=read_many) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []


def test_a_huge_ignore_file_is_read_only_as_far_as_its_bound(tmp_path: Path) -> None:
    """A `.gitignore` of a gigabyte of blank lines packs to a few KB in git; the server reads a
    bounded head of it, cut where a line ends."""
    root = tmp_path / "ws"
    root.mkdir()
    line = b"build-output-directory-name/\n"
    count = MAX_RULES_FILE_BYTES // len(line) + 1000
    (root / ".gitignore").write_bytes(b"kept.log\n" + line * count)
    data = read_rules_file(root, ".gitignore")
    assert data is not None
    assert len(data) <= MAX_RULES_FILE_BYTES and data.endswith(b"\n")
    assert data.startswith(b"kept.log\n")
