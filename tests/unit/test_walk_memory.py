"""A walk of a workspace that is not a git work tree lists again only the directories whose stamp
(mtime, ctime, inode, device) changed since the last complete walk; the others' entries come from
the index. These tests check that nothing is missed that way: a file changed inside an unchanged
directory, a rename, a touch, a file added behind a restored mtime, a deletion, an edited
.gitignore. The trees are made older than a timestamp tick first: a directory modified more
recently than that is listed again every time (see `walk`)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from filescout.core.records import DirectoryListing
from filescout.engine import Hooks, Workspace
from filescout.scan.ignore import IgnoreRules
from filescout.scan.tree import RACY_NS, WalkMemory, walk
from filescout_protocol.types import GetFilesParams
from harness.support import make_workspace

TREES = 9


@pytest.fixture(scope="module")
def settled_trees(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Sample workspaces whose directories were last modified over a timestamp tick ago (one
    wait for all of them)."""
    base = tmp_path_factory.mktemp("settled")
    trees = [make_workspace(base / f"ws{index}", git=False) for index in range(TREES)]
    time.sleep(RACY_NS / 1e9 + 0.2)
    return trees


def walked(root: Path, before: dict[str, DirectoryListing] | None = None) -> tuple[list[str], WalkMemory]:
    memory = WalkMemory(before or {})
    return walk(root, IgnoreRules.for_workspace(root), [], memory), memory


def remembered(memory: WalkMemory) -> dict[str, DirectoryListing]:
    """What the next walk would start from, as the index stores it."""
    kept = {path: listing for path, listing in memory.before.items() if path in memory.kept}
    return {**kept, **{listing.path: listing for listing in memory.listed}}


@pytest_asyncio.fixture
async def engines() -> AsyncIterator[list[Workspace]]:
    """The engines a test opens, closed after it."""
    opened: list[Workspace] = []
    yield opened
    for engine in opened:
        await engine.close()


async def indexed(root: Path, tmp_path: Path, engines: list[Workspace]) -> Workspace:
    env = {"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}
    engine = await Workspace.open(root, env=env, hooks=Hooks())
    engines.append(engine)
    engine.start_indexing("index")
    await engine.wait_idle()
    return engine


async def items(engine: Workspace) -> dict[str, tuple[int, str, str]]:
    """path -> (size, status, summary) of every indexed file."""
    found = {}
    async for batch in engine.stream_files(GetFilesParams(kinds=[])):
        for item in batch:
            found[item.path] = (item.size, item.status, item.summary)
    return found


def stamp(path: Path) -> tuple[int, int, int]:
    info = os.stat(path)
    return info.st_mtime_ns, info.st_ctime_ns, info.st_ino


# The walk itself


def test_an_unchanged_settled_tree_is_taken_from_memory_and_lists_the_same(settled_trees: list[Path]) -> None:
    root = settled_trees[0]
    first, memory = walked(root)
    assert memory.listed and all(listing.settled for listing in memory.listed)
    again, reused = walked(root, remembered(memory))
    assert again == first
    assert reused.reused == len(memory.listed) and reused.listed == [] and reused.gone == []


def test_only_the_directory_that_changed_is_listed_again(settled_trees: list[Path]) -> None:
    root = settled_trees[1]
    first, memory = walked(root)
    (root / "src/shop/payments/paypal.py").write_text("def pay(): pass\n")
    shutil.rmtree(root / "docs/guide")
    again, changed = walked(root, remembered(memory))
    assert set(again) == (set(first) | {"src/shop/payments/paypal.py"}) - {"docs/guide/setup.md"}
    assert sorted(listing.path for listing in changed.listed) == ["docs", "src/shop/payments"]
    assert changed.gone == ["docs/guide"]
    # Just modified: listed again next time too, until it has settled.
    assert not any(listing.settled for listing in changed.listed)


def test_a_directory_modified_within_a_tick_of_its_listing_is_listed_again(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "fresh", git=False)
    _, memory = walked(root)
    assert not any(listing.settled for listing in memory.listed)
    _, again = walked(root, remembered(memory))
    assert again.reused == 0


def test_an_edited_gitignore_is_applied_to_the_unchanged_directories_below_it(
    settled_trees: list[Path],
) -> None:
    root = settled_trees[2]
    first, memory = walked(root)
    assert "src/shop/payments/stripe_gateway.py" in first
    before = stamp(root)
    with open(root / ".gitignore", "a", encoding="utf-8") as handle:  # edited in place
        handle.write("payments/\n")
    assert stamp(root) == before  # the root looks unchanged
    again, changed = walked(root, remembered(memory))
    assert "src/shop/payments/stripe_gateway.py" not in again
    assert "src/shop/cart.py" in again
    assert changed.reused == 0  # every directory is below the edited rules


# The engine: each change is found through a walk that uses the index's memory


async def test_a_file_changed_in_an_unchanged_looking_directory_is_found(
    settled_trees: list[Path], tmp_path: Path, engines: list[Workspace]
) -> None:
    root = settled_trees[3]
    engine = await indexed(root, tmp_path, engines)
    assert await engine._index.directories.load()  # the walk's memory is kept
    directory = root / "src/shop"
    before = stamp(directory)
    (directory / "cart.py").write_text('"""Loyalty points: earn and redeem them at checkout."""\n')
    assert stamp(directory) == before
    result = await engine.reindex()
    assert result.changed == 1
    await engine.wait_idle()
    size, status, summary = (await items(engine))["src/shop/cart.py"]
    assert size == (directory / "cart.py").stat().st_size and status == "annotated"
    assert "Loyalty points" in summary


async def test_a_rename_is_found(settled_trees: list[Path], tmp_path: Path, engines: list[Workspace]) -> None:
    root = settled_trees[4]
    engine = await indexed(root, tmp_path, engines)
    (root / "web").mkdir(exist_ok=True)
    os.rename(root / "src/shop/cart.py", root / "web/cart.py")
    result = await engine.reindex()
    assert (result.added, result.removed, result.renamed) == (1, 1, 1)
    paths = await items(engine)
    assert "web/cart.py" in paths and "src/shop/cart.py" not in paths


async def test_a_touched_file_is_read_again_but_keeps_its_annotation(
    settled_trees: list[Path], tmp_path: Path, engines: list[Workspace]
) -> None:
    root = settled_trees[5]
    engine = await indexed(root, tmp_path, engines)
    annotated = (await items(engine))["src/shop/cart.py"]
    path = root / "src/shop/cart.py"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    result = await engine.reindex()
    assert result.changed == 1
    # Read again (its stat changed) and found to be the same content: its annotation shows at
    # once, nothing waits to be annotated.
    assert (await items(engine))["src/shop/cart.py"] == annotated
    assert (await engine.status()).by_status.get("pending", 0) == 0


async def test_a_file_added_behind_a_restored_directory_mtime_is_found(
    settled_trees: list[Path], tmp_path: Path, engines: list[Workspace]
) -> None:
    """Restoring the mtime (`touch -d`) sets the ctime, which is part of the stamp."""
    root = settled_trees[6]
    engine = await indexed(root, tmp_path, engines)
    directory = root / "src/shop/payments"
    info = directory.stat()
    (directory / "refunds.py").write_text("def refund(): pass\n")
    os.utime(directory, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert directory.stat().st_mtime_ns == info.st_mtime_ns
    result = await engine.reindex()
    assert result.added == 1
    assert "src/shop/payments/refunds.py" in await items(engine)


async def test_a_deleted_file_and_directory_are_found(
    settled_trees: list[Path], tmp_path: Path, engines: list[Workspace]
) -> None:
    root = settled_trees[7]
    engine = await indexed(root, tmp_path, engines)
    (root / "scripts/deploy.sh").unlink()
    shutil.rmtree(root / "docs")
    result = await engine.reindex()
    assert result.removed == 2
    paths = await items(engine)
    assert "scripts/deploy.sh" not in paths and "docs/guide/setup.md" not in paths
    assert "docs/guide" not in await engine._index.directories.load()


async def test_a_walk_under_new_rules_does_not_use_the_memory_of_the_old(
    settled_trees: list[Path], tmp_path: Path, engines: list[Workspace]
) -> None:
    root = settled_trees[8]
    engine = await indexed(root, tmp_path, engines)
    await engine.close()
    engines.remove(engine)
    # Rules that exclude a directory inside an unchanged one: the listing kept from the old
    # rules must not bring it back.
    (root / ".filescoutignore").write_text("payments/\n")
    engine = await indexed(root, tmp_path, engines)
    paths = await items(engine)
    assert "src/shop/payments/stripe_gateway.py" not in paths and "src/shop/cart.py" in paths
