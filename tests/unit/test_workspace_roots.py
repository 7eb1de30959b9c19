"""What a workspace root can be: kernel views and system or home folders are refused with a
reason, a walk of a huge tree stops when asked, and checked-out git submodules are listed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from filescout.core.errors import WorkspaceUnavailable
from filescout.core.paths import ALLOW_ANY_ROOT, file_system_type, unsafe_root_reason
from filescout.engine import Workspace
from filescout.scan.ignore import IgnoreRules
from filescout.scan.tree import WalkMemory, enumerate_files, walk
from harness.support import make_workspace, run_git


@pytest.mark.skipif(not os.path.exists("/proc/self/mountinfo"), reason="needs Linux's mount table")
@pytest.mark.parametrize("root", ["/proc", "/proc/self", "/sys/kernel", "/dev"])
def test_a_kernel_view_is_refused_even_when_the_user_insists(root: str) -> None:
    reason = unsafe_root_reason(Path(root), {ALLOW_ANY_ROOT: "1"})
    assert reason is not None
    assert "view of the running system" in reason


@pytest.mark.parametrize("root", ["/", "/usr", "/etc", "/home", "/tmp", "/var"])
def test_a_system_folder_is_refused_unless_the_user_insists(root: str) -> None:
    reason = unsafe_root_reason(Path(root), {})
    assert reason is not None
    assert ALLOW_ANY_ROOT in reason
    assert unsafe_root_reason(Path(root), {ALLOW_ANY_ROOT: "1"}) is None


def test_the_home_folder_is_refused_but_a_project_in_it_is_not(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    reason = unsafe_root_reason(tmp_path, env)
    assert reason is not None and "home folder" in reason
    assert unsafe_root_reason(tmp_path / "project", env) is None


def test_the_mount_table_names_the_deepest_mount(tmp_path: Path) -> None:
    table = tmp_path / "mountinfo"
    table.write_text(
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "23 22 0:5 / /proc rw,nosuid shared:2 - proc proc rw\n"
        "24 22 0:6 / /mnt/my\\040disk rw - vfat /dev/sdb1 rw\n"
    )
    assert file_system_type("/proc/1/fd", str(table)) == "proc"
    assert file_system_type("/processes", str(table)) == "ext4"
    assert file_system_type("/mnt/my disk/notes", str(table)) == "vfat"
    assert file_system_type("/x", str(tmp_path / "none")) is None


async def test_the_engine_refuses_a_kernel_view_before_touching_it(tmp_path: Path) -> None:
    if file_system_type("/proc") != "proc":
        pytest.skip("no /proc here")
    with pytest.raises(WorkspaceUnavailable, match="view of the running system"):
        await Workspace.open(Path("/proc"), env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")})
    assert not (tmp_path / "cache").exists()  # no index was made for it


def test_a_walk_stops_between_directories_when_cancelled(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    asked: list[int] = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 2

    with pytest.raises(InterruptedError):
        walk(root, IgnoreRules.for_workspace(root), [], is_cancelled=cancelled)
    with pytest.raises(InterruptedError):
        enumerate_files(root, IgnoreRules.for_workspace(root), is_cancelled=lambda: True)
    asked.clear()
    memory = WalkMemory()
    walk(root, IgnoreRules.for_workspace(root), [], memory, is_cancelled=lambda: bool(asked.append(1)))
    assert len(asked) == len(memory.listed) > 5  # asked once per directory it lists


def git_repository(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    run_git(root, "init", "-q")
    run_git(root, "add", ".")
    run_git(root, "commit", "-q", "-m", "first")
    return root


def add_submodule(outer: Path, inner: Path, where: str) -> None:
    run_git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), where)
    run_git(outer, "commit", "-q", "-m", f"add {where}")


def test_checked_out_submodules_are_listed_with_their_untracked_files(tmp_path: Path) -> None:
    leaf = git_repository(tmp_path / "leaf", {"leaf.py": "LEAF = 1\n"})
    lib = git_repository(
        tmp_path / "lib", {"lib/core.py": "def core():\n    pass\n", ".gitignore": "*.tmp\n"}
    )
    add_submodule(lib, leaf, "vendor/leaf")
    app = git_repository(tmp_path / "app", {"app.py": "import lib\n"})
    add_submodule(app, lib, "third_party/lib")
    run_git(app, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive")
    (app / "third_party/lib/lib/draft.py").write_text("DRAFT = 1\n")  # untracked inside the submodule
    (app / "third_party/lib/lib/scratch.tmp").write_text("ignored by the submodule's rules\n")

    listed = enumerate_files(app, IgnoreRules.for_workspace(app))
    assert listed.source == "git"
    paths = set(listed.paths)
    assert {
        "app.py",
        "third_party/lib/lib/core.py",
        "third_party/lib/lib/draft.py",
        "third_party/lib/vendor/leaf/leaf.py",
    } <= paths
    assert "third_party/lib/lib/scratch.tmp" not in paths
    assert not any(path.endswith("/.git") for path in paths)


def test_a_submodule_not_checked_out_or_replaced_by_a_link_is_left_out(tmp_path: Path) -> None:
    lib = git_repository(tmp_path / "lib", {"core.py": "X = 1\n"})
    app = git_repository(tmp_path / "app", {"app.py": "A = 1\n"})
    add_submodule(app, lib, "lib")
    add_submodule(app, lib, "other")
    subprocess.run(["git", "-C", str(app), "submodule", "deinit", "-q", "-f", "other"], check=True)
    outside = git_repository(tmp_path / "outside", {"secret.py": "S = 1\n"})
    moved = tmp_path / "moved-lib"
    (app / "lib").rename(moved)
    (app / "lib").symlink_to(outside)

    paths = set(enumerate_files(app, IgnoreRules.for_workspace(app)).paths)
    assert "app.py" in paths
    assert not any(path.startswith(("lib/", "other/")) for path in paths)
