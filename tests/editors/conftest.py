"""Fixtures of the real-editor tests: code-server and the extension's VSIX installed once per run,
then a fresh code-server and a Chromium page per scenario.

Without what they need (Node.js 20, Chromium, ripgrep, a C++ toolchain and libkrb5-dev for the
first install, Playwright) the tests are skipped on a developer's machine and fail on CI. When a
scenario fails, a screenshot of each of its windows, code-server's log and the extension host's
logs are kept under tests/editors/artifacts/ (or $FILESCOUT_TEST_ARTIFACTS); with
FILESCOUT_KEEP_ARTIFACTS set, those of every scenario."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from editors.code_server import (
    CHROMIUM,
    INSTALL_HINT,
    CodeServer,
    build_probe_vsix,
    build_vsix,
    install_code_server,
    install_extension,
    missing_prerequisites,
)

ARTIFACTS = Path(os.environ.get("FILESCOUT_TEST_ARTIFACTS") or Path(__file__).resolve().parent / "artifacts")
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
    "--no-default-browser-check",
]
# The project's own server: the `filescout` next to the Python running the tests.
SERVER = Path(sys.executable).parent / "filescout"

SHOP = {
    "README.md": "# Shop\n\nA small web shop.\n",
    "src/shop/cart.py": '"""Shopping cart: items and totals with discounts."""\n\nclass ShoppingCart:\n    pass\n\n'
    "def apply_discount(total, code):\n    return total\n",
    "src/shop/payments/stripe_gateway.py": '"""Stripe gateway: charges and refunds."""\n\n'
    "def refund_charge(charge_id):\n    pass\n",
    "web/checkoutForm.ts": "// Checkout form: validates the address.\n"
    "export function validateAddress(a: string) { return a.length > 0 }\n",
    "tests/test_cart.py": "from shop.cart import ShoppingCart\n\ndef test_cart():\n    ShoppingCart()\n",
}


def make_folder(root: Path, files: Mapping[str, str] = SHOP) -> Path:
    """A small git work tree of `files`."""
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@dataclass
class EditorTools:
    binary: Path
    vsix: Path
    extensions_dir: Path


@pytest.fixture(scope="session")
def editor_tools(tmp_path_factory: pytest.TempPathFactory) -> EditorTools:
    missing = missing_prerequisites()
    if missing:
        message = "the real-editor tests need " + "; ".join(missing) + f". {INSTALL_HINT}"
        if _on_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    root = tmp_path_factory.mktemp("editors")
    binary = install_code_server()
    vsix = build_vsix(root / "filescout.vsix")
    extensions = root / "extensions"
    install_extension(binary, vsix, extensions, root / "install-user-data")
    install_extension(binary, build_probe_vsix(root / "probe.vsix"), extensions, root / "install-user-data")
    return EditorTools(binary=binary, vsix=vsix, extensions_dir=extensions)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Keeps each phase's report on the test, so fixtures know at teardown whether it failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@dataclass
class VSCode:
    """Opens windows of a fresh code-server; what each scenario uses."""

    tools: EditorTools
    root: Path
    playwright: object = None
    browser: object = None
    servers: list[CodeServer] = field(default_factory=list)
    pages: list[object] = field(default_factory=list)

    def settings(self, **extra: object) -> dict[str, object]:
        return {"filescout.serverCommand": [str(SERVER), "serve"], **extra}

    def server(
        self, settings: Mapping[str, object] | None = None, env: Mapping[str, str] | None = None
    ) -> CodeServer:
        """A started code-server of this scenario's own (user settings: the project's server)."""
        server = CodeServer(
            self.tools.binary,
            self.root / f"code-server-{len(self.servers)}",
            self.tools.extensions_dir,
            self.settings() if settings is None else settings,
            env,
        )
        self.servers.append(server)
        server.start()
        return server

    def open(
        self,
        folder: Path | None = None,
        workspace: Path | None = None,
        server: CodeServer | None = None,
    ):  # -> Workbench
        from playwright.sync_api import sync_playwright

        from editors.workbench import Workbench

        server = server or (self.servers[-1] if self.servers else self.server())
        if self.browser is None:
            self.playwright = sync_playwright().start()
            self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = self.browser.new_page(viewport={"width": 1400, "height": 900})
        self.pages.append(page)
        page.goto(server.url(folder=folder, workspace=workspace))
        bench = Workbench(page)
        bench.wait_ready()
        return bench

    def keep_artifacts(self, name: str) -> Path:
        target = ARTIFACTS / re.sub(r"[^\w.-]+", "_", name)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for index, page in enumerate(self.pages):
            try:
                page.screenshot(path=str(target / f"window-{index}.png"))
            except Exception as error:
                (target / f"window-{index}.txt").write_text(f"no screenshot: {error}\n")
        for index, server in enumerate(self.servers):
            if server.log.exists():
                shutil.copy(server.log, target / f"code-server-{index}.log")
            logs = server.user_data / "logs"
            for log in logs.rglob("*.log") if logs.exists() else []:
                if "exthost" in str(log) or "filescout" in log.name:
                    relative = log.relative_to(logs)
                    (target / f"logs-{index}" / relative).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(log, target / f"logs-{index}" / relative)
        return target

    def close(self) -> None:
        for page in self.pages:
            try:
                page.close()
            except Exception:
                pass
        if self.browser is not None:
            self.browser.close()
            self.playwright.stop()
        for server in self.servers:
            server.stop()


@contextmanager
def scenario(tools: EditorTools, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[VSCode]:
    """A scenario's editor, closed afterwards; what it showed is kept when it failed."""
    editor = VSCode(tools, tmp_path)
    try:
        yield editor
    finally:
        report = getattr(request.node, "report_call", None)
        if report is None or report.failed or os.environ.get("FILESCOUT_KEEP_ARTIFACTS"):
            kept = editor.keep_artifacts(request.node.nodeid)
            print(f"\nscreenshots and logs of the scenario: {kept}", file=sys.stderr)
        editor.close()


@pytest.fixture
def vscode(editor_tools: EditorTools, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[VSCode]:
    with scenario(editor_tools, tmp_path, request) as editor:
        yield editor
