"""Shared test helpers: sample workspaces and a pytest-lsp client that understands
partial results."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES
from pytest_lsp.client import progress as default_progress_handler

from harness import launch

SERVER_COMMAND = launch.command("serve")

# Text files of the sample workspace, which every listing must return exactly.
SAMPLE_FILES: dict[str, str] = {
    "README.md": "# Sample shop\n\nA tiny web shop used to exercise filescout.\n",
    "src/shop/__init__.py": '"""The shop package: carts, checkout and payments."""\n',
    "src/shop/cart.py": (
        '"""Shopping cart: add and remove items, compute totals with discounts."""\n\n'
        "class ShoppingCart:\n    def add_item(self, sku, quantity):\n        pass\n\n"
        "def apply_discount(total, code):\n    return total\n"
    ),
    "src/shop/payments/stripe_gateway.py": (
        "# Payment gateway adapter for Stripe: charges, refunds and webhooks.\n"
        "import json\n\n"
        "def charge_card(amount, token):\n    return json.dumps({'amount': amount})\n\n"
        "def refund_charge(charge_id):\n    pass\n"
    ),
    "src/shop/payments/__init__.py": "",
    "web/checkoutForm.ts": (
        "// Checkout form component: validates the address and submits the order.\n"
        "export function validateAddress(address: string): boolean { return address.length > 0 }\n"
        "export class CheckoutForm {}\n"
    ),
    "docs/guide/setup.md": "# Setting up\n\nInstall the dependencies, then run the dev server.\n",
    "tests/test_cart.py": "from shop.cart import ShoppingCart\n\ndef test_add():\n    ShoppingCart()\n",
    "scripts/deploy.sh": "#!/bin/sh\n# Deploy the shop to production.\nrsync -a build/ server:/srv/shop\n",
    ".gitignore": "*.log\nbuild/\n",
}
# Recorded in the index (kind "binary", status "skipped") but left out of getFiles by default.
SAMPLE_BINARY: dict[str, bytes] = {
    "assets/font.woff2": b"wOF2\x00\x01\x00\x00" + bytes(range(256)),
}
# Files that exist but must never be indexed: ignored or excluded by default.
SAMPLE_HIDDEN: dict[str, bytes] = {
    "debug.log": b"2026-01-01 something happened\n",
    "build/bundle.js": b"console.log('built')\n",
    "node_modules/leftpad/index.js": b"module.exports = () => {}\n",
    **SAMPLE_BINARY,
}


def make_workspace(root: Path, *, git: bool) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for relative, text in SAMPLE_FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for relative, data in SAMPLE_HIDDEN.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if git:
        run_git(root, "init", "-q")
        run_git(root, "add", "src", "README.md", ".gitignore", "assets")
        run_git(root, "commit", "-q", "-m", "sample")
        # docs/, web/, tests/ and scripts/ stay untracked: they must be listed all the same.
    return root


def make_large_workspace(root: Path, files: int, *, grow: bool = True) -> Path:
    """Many small source files in nested directories, for tests that need indexing to take a
    while. Sizes grow with the index, so the default order is predictable: small first. The
    growth (trailing comment lines) is most of the annotation time: with `grow=False` every file
    stays a few lines long, for tests that need many files but not slow annotation."""
    root.mkdir(parents=True, exist_ok=True)
    for index in range(files):
        path = root / f"pkg{index % 20}" / f"mod{index % 7}" / f"unit_{index:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(
            f"def helper_{index}_{n}(value):\n    return value + {n}\n\n" for n in range(1 + index % 5)
        )
        padding = "# pad\n" * (index // 50) if grow else ""
        path.write_text(f'"""Unit {index} of the sample."""\n\n{body}{padding}')
    return root


def run_git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", "-C", str(root), *args], check=True, env=env, capture_output=True)


class TestClient(LanguageClient):
    """A pytest-lsp client that also collects partial results (list-valued `$/progress`)."""

    __test__ = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.partial_results: dict[str | int, list[list[Any]]] = {}
        self.notifications: dict[str, list[Any]] = {}
        self.initialize_result: types.InitializeResult | None = None
        self.registrations: list[types.Registration] = []


def make_client() -> TestClient:
    client = TestClient(converter_factory=default_converter)
    for method, handler in DEFAULT_CLIENT_FEATURES.items():
        if method != types.PROGRESS:
            client.feature(method)(handler)

    @client.feature(types.PROGRESS)
    def on_progress(ls: TestClient, params: types.ProgressParams) -> None:
        if isinstance(params.value, list):
            ls.partial_results.setdefault(params.token, []).append(params.value)
        else:
            default_progress_handler(ls, params)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def on_register(ls: TestClient, params: types.RegistrationParams) -> None:
        ls.registrations.extend(params.registrations)

    @client.feature("filescout/status")
    def on_status(ls: TestClient, params: Any) -> None:
        ls.notifications.setdefault("filescout/status", []).append(params)

    return client


async def start_client(
    root: Path,
    cache: Path,
    *,
    init_options: dict[str, Any] | None = None,
    editor: str = "visual_studio_code",
    env: dict[str, str] | None = None,
    command: list[str] = SERVER_COMMAND,
) -> TestClient:
    config = ClientServerConfig(
        server_command=command,
        client_factory=make_client,
        server_env={**os.environ, "XDG_CACHE_HOME": str(cache), "FILESCOUT_CACHE_DIR": "", **(env or {})},
    )
    client = await config.start()
    params = types.InitializeParams(
        capabilities=client_capabilities(editor),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=init_options,
    )
    client.initialize_result = await client.initialize_session(params)
    return client


async def stop_client(client: TestClient) -> None:
    await client.shutdown_session()
    await client.stop()


def progress_tokens(client: LanguageClient, prefix: str) -> list[str | int]:
    return [token for token in client.progress_reports if str(token).startswith(prefix)]


def ended(client: LanguageClient, token: str | int) -> bool:
    reports = client.progress_reports.get(token, [])
    return bool(reports) and isinstance(reports[-1], types.WorkDoneProgressEnd)


async def wait_until(
    predicate: Callable[[], bool], *, timeout: float = 30.0, message: str = "condition"
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        await asyncio.sleep(0.02)


async def wait_for_indexing(
    client: LanguageClient, prefix: str = "filescout/index", count: int = 1, timeout: float = 60.0
) -> None:
    """Wait until `count` work-done progresses whose token starts with `prefix` have ended."""
    await wait_until(
        lambda: sum(ended(client, token) for token in progress_tokens(client, prefix)) >= count,
        message=f"{count} progress '{prefix}' to end",
        timeout=timeout,
    )


async def get_files_streamed(
    client: LanguageClient, token: str, **params: Any
) -> tuple[list[list[dict]], Any]:
    result = await client.protocol.send_request_async(
        "files/getFiles", {"partialResultToken": token, **params}
    )
    return client.partial_results.get(token, []), result


async def execute(client: LanguageClient, command: str, *arguments: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=list(arguments) or None)
    )


async def file_item(client: LanguageClient, path: str) -> dict[str, Any] | None:
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {"paths": [path]}))
    return page["items"][0] if page["items"] else None


def query_db(db_path: str | Path, sql: str, *args: Any) -> list[tuple]:
    """Read the index directly: it is a real SQLite file, and some properties (no duplicate
    rows, the FTS table in step with the files) are only visible there."""
    import sqlite3

    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return connection.execute(sql, args).fetchall()
    finally:
        connection.close()


def as_dict(value: Any) -> Any:
    """pygls hands unknown-method results over as namedtuples; tests compare plain data."""
    if hasattr(value, "_asdict"):
        return {key: as_dict(item) for key, item in value._asdict().items()}
    if isinstance(value, list):
        return [as_dict(item) for item in value]
    if isinstance(value, dict):
        return {key: as_dict(item) for key, item in value.items()}
    return value
