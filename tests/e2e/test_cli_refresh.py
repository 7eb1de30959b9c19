"""A query from the terminal brings the index up to date only as far as it must: an unchanged
workspace is answered from the index as it is, a changed file is read again before the answer,
and an index another filescout process keeps is asked through its door (test_door.py)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from harness import launch
from harness.support import make_workspace

WRITER_READY_TIMEOUT = 60.0


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "FILESCOUT_CACHE_DIR": ""}


@pytest.fixture
def run(env: dict[str, str]):
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(launch.command(*args), env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return result

    return run


def found(result: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    return json.loads(result.stdout)["items"]


def last_scan(run, workspace: Path) -> str:
    return json.loads(run("status", str(workspace), "--json").stdout)["lastScan"]


def settle() -> None:
    """Past the timestamp tick of what was just written, and into the next second of `lastScan`."""
    time.sleep(2.1)


@pytest.mark.parametrize("git", [True, False], ids=["git", "walk"])
def test_an_unchanged_workspace_is_answered_without_a_rescan(run, tmp_path: Path, git: bool) -> None:
    workspace = make_workspace(tmp_path / "ws", git=git)
    settle()  # a walk remembers directories written within their tick as unsettled
    run("index", str(workspace))
    # The engine answers after reading a file again whose time changed and whose content did not.
    os.utime(workspace / "src/shop/cart.py")
    settle()
    by_engine = run("--log-level", "info", "find", str(workspace), "shopping cart totals", "--json")
    assert "the index is not current" in by_engine.stderr, by_engine.stderr
    scanned = last_scan(run, workspace)
    settle()

    answered = run("--log-level", "info", "find", str(workspace), "shopping cart totals", "--json")

    assert "the index is current" in answered.stderr, answered.stderr
    assert "scan:" not in answered.stderr  # no pass
    assert found(answered) == found(by_engine)
    assert found(answered)[0]["path"] == "src/shop/cart.py"
    assert last_scan(run, workspace) == scanned


def test_a_changed_file_is_seen_by_the_next_find(run, tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path / "ws", git=True)
    run("index", str(workspace))
    scanned = last_scan(run, workspace)
    settle()

    with (workspace / "src/shop/cart.py").open("a") as cart:
        cart.write("\n# quokka reconciliation\n")
    edited = found(run("find", str(workspace), "quokka reconciliation", "--json"))
    assert edited[0]["path"] == "src/shop/cart.py"
    assert last_scan(run, workspace) == scanned  # the file alone was read again

    (workspace / "src/shop/wombat.py").write_text("def wombat_ledger():\n    return 'wombat ledger'\n")
    added = found(run("find", str(workspace), "wombat ledger", "--json"))
    assert added[0]["path"] == "src/shop/wombat.py"
    assert last_scan(run, workspace) != scanned  # a new file: a pass

    (workspace / "src/shop/wombat.py").unlink()
    gone = found(run("find", str(workspace), "wombat ledger", "--json"))
    assert "src/shop/wombat.py" not in [item["path"] for item in gone]
