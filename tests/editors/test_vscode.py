"""The VS Code extension inside a real VS Code (code-server, driven through Chromium), each scenario
asserting what the user sees: the status bar, notifications, the command palette and quick picks,
the editor that opens."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from editors.conftest import SERVER, VSCode, make_folder
from editors.workbench import STATUS_BAR, wait_until

# The first scenario also installs code-server and builds the VSIX when the cache has none.
pytestmark = pytest.mark.timeout(900)

NOTES = {
    "docs/deploy.md": "# Deploying\n\nHow the shop goes to production with docker compose.\n",
    "scripts/backup.sh": "#!/bin/sh\n# Nightly database backup, copied to object storage.\npg_dump shop > backup.sql\n",
}


def two_folders(tmp_path: Path) -> Path:
    shop = make_folder(tmp_path / "shop")
    notes = make_folder(tmp_path / "notes", NOTES)
    workspace = tmp_path / "two.code-workspace"
    workspace.write_text(json.dumps({"folders": [{"path": str(shop)}, {"path": str(notes)}]}))
    return workspace


def test_single_folder(vscode: VSCode, tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "shop")
    bench = vscode.open(folder=folder)

    bench.wait_status(r"filescout", timeout=90)
    bench.wait_status(r"^filescout: 5 files$", timeout=60)
    # One entry, whose tooltip says what the folder's index holds.
    assert len(bench.filescout_items()) == 1, bench.filescout_items()
    assert "shop: 5 files indexed" in bench.hover_text(r"filescout: 5 files")

    bench.run_command("filescout: Find Relevant Files")
    bench.answer("refund a stripe charge")
    rows = bench.wait_rows(
        lambda rows: any("stripe_gateway.py" in row for row in rows), "stripe_gateway.py listed"
    )
    assert "stripe_gateway.py" in rows[0]
    # A row: the file's name, its folder, then the summary; no stage names, no raw scores.
    assert not any(re.search(r"prefilter|judge|final|\d+\.\d\d", row) for row in rows), rows
    assert "src/shop/payments" in rows[0], rows
    bench.choose("stripe_gateway.py")
    bench.wait_active_tab(r"stripe_gateway\.py")

    # A terminal beside the editor: the command asks the extension's server, through its door.
    asked = subprocess.run(
        [str(SERVER), "--log-level", "info", "find", str(folder), "refund a stripe charge", "--json"],
        env=vscode.servers[-1].environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert asked.returncode == 0 and "answered by the process that keeps this index" in asked.stderr, asked
    assert json.loads(asked.stdout)["items"][0]["path"] == "src/shop/payments/stripe_gateway.py", asked.stdout

    bench.run_command("filescout: Reindex Workspace")
    toast = bench.wait_toast(r"reindexed")
    assert toast.message == "filescout: shop reindexed, 5 files (no changes).", toast
    bench.run_command("filescout: Show Index Status")
    toast = bench.wait_toast(r"has 5 files")
    assert toast.message.startswith("filescout: shop has 5 files"), toast
    assert "writer" not in toast.message and len(toast.message) < 120, toast


def test_two_folders_get_a_server_each_and_commands_ask_which(vscode: VSCode, tmp_path: Path) -> None:
    server = vscode.server()
    bench = vscode.open(workspace=two_folders(tmp_path), server=server)

    wait_until(
        lambda: server.processes(" serve"),
        lambda found: len(found) == 2,
        90,
        "a filescout server per folder",
    )
    bench.wait_status(r"^filescout: 7 files$", timeout=60)
    tooltip = bench.hover_text(r"filescout")
    assert "shop: 5 files indexed" in tooltip and "notes: 2 files indexed" in tooltip, tooltip
    assert not bench.toasts()

    bench.run_command("filescout: Find Relevant Files")
    rows = bench.wait_rows(lambda rows: len(rows) == 2, "a choice of the two folders")
    assert any("shop" in row for row in rows) and any("notes" in row for row in rows), rows
    bench.choose("notes")
    bench.answer("nightly database backup")
    bench.wait_rows(lambda rows: any("backup.sh" in row for row in rows), "backup.sh listed")
    bench.choose("backup.sh")
    bench.wait_active_tab(r"backup\.sh")


def test_activation_never_waits_on_a_notification(vscode: VSCode, tmp_path: Path) -> None:
    """A server that cannot start is reported, and the report stays up, while an extension that
    depends on filescout activates (VS Code activates it once filescout's `activate` returned)."""
    server = vscode.server(
        vscode.settings(**{"filescout.serverCommand": ["/nonexistent/filescout", "serve"]})
    )
    bench = vscode.open(workspace=two_folders(tmp_path), server=server)

    bench.wait_toast(r"filescout", timeout=90)
    wait_until(
        bench.status_items, lambda items: "probe: activated" in items, 30, "the dependent extension active"
    )
    assert bench.toasts(), "the notification is still up, nobody closed it"
    # Both folders tried: one notification names them both and says what to do.
    toasts = bench.toasts()
    assert len(toasts) == 1, toasts
    assert re.search(
        r"not running for (shop, notes|notes, shop): `/nonexistent/filescout serve` was not found",
        toasts[0].message,
    ), toasts
    assert "pipx" not in toasts[0].message and "Open Settings" in toasts[0].buttons, toasts
    bench.wait_status(r"not running")


def test_a_missing_server_is_reported_once_and_a_fixed_setting_applies_without_reload(
    vscode: VSCode, tmp_path: Path
) -> None:
    folder = make_folder(tmp_path / "shop")
    server = vscode.server({"filescout.pythonPath": "/nonexistent/python"})
    bench = vscode.open(folder=folder, server=server)

    toast = bench.wait_toast(r"not running", timeout=90)
    assert toast.message.startswith(
        "filescout is not running for shop: `/nonexistent/python -m filescout serve`"
    )
    assert len(bench.toasts()) == 1, bench.toasts()
    bench.wait_status(r"filescout: not running")
    assert "shop: not running" in bench.hover_text(r"not running")
    bench.dismiss_toasts()

    # The status entry leads to what to do.
    bench.page.locator(STATUS_BAR).filter(has_text="not running").first.click()
    bench.wait_toast(r"not running for shop")
    bench.dismiss_toasts()

    # The setting fixed in the Settings editor: the server starts, with no reload.
    bench.run_command("Preferences: Open User Settings")
    bench.page.keyboard.type("filescout.pythonPath")
    field = (
        bench.page.locator(".settings-editor .setting-item")
        .filter(has_text="Python Path")
        .locator("input")
        .first
    )
    field.wait_for(state="visible", timeout=15_000)
    field.fill(sys.executable)
    bench.wait_status(r"^filescout: 5 files$", timeout=60)
