"""End to end, a file system that changes under the server's feet: files deleted or rewritten
while they are read, files that turn into directories, FIFOs or device nodes, files and
directories the server may not read, symlink loops, and the workspace folder itself deleted and
brought back. The server keeps answering, says what it could not do, and its index ends equal to
the disk. (An index on a read-only or full file system: test_storage_faults.py and
tests/unit/test_names_and_faults.py.)"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, client_capabilities

from filescout_protocol.types import ErrorCode
from harness.index_audit import audit, regular_files
from harness.support import (
    SAMPLE_FILES,
    SERVER_COMMAND,
    TestClient,
    as_dict,
    execute,
    file_item,
    make_client,
    make_large_workspace,
    make_workspace,
    progress_tokens,
    run_git,
    start_client,
    stop_client,
    wait_for_indexing,
    wait_until,
)
from storage import without_file_access_override

SAMPLE_IGNORED = frozenset({"debug.log", "build/bundle.js", "node_modules/leftpad/index.js"})


async def close(client: TestClient) -> None:
    """Shut the server down; one that cannot (a hang is what a test may have found) is killed."""
    try:
        await asyncio.wait_for(stop_client(client), 20)
    except Exception:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        raise


async def status_of(client: TestClient) -> dict[str, Any]:
    return as_dict(await execute(client, "filescout.status"))  # type: ignore[no-any-return]


async def indexed_paths(client: TestClient) -> set[str]:
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {"limit": 10000}))
    return {item["path"] for item in page["items"]}


def logged(client: TestClient) -> str:
    return "\n".join(message.message for message in client.log_messages)


async def reindex_to_idle(client: TestClient, *, timeout: float = 60) -> None:
    """A full pass, scan and annotation, run to its end."""
    before = len(progress_tokens(client, "filescout/reindex"))
    await execute(client, "filescout.reindex")
    await wait_for_indexing(client, "filescout/reindex", count=before + 1, timeout=timeout)


def annotating(client: TestClient) -> bool:
    return any(
        (getattr(report, "message", None) or "").startswith("annotating")
        for token in progress_tokens(client, "filescout/index")
        for report in client.progress_reports[token]
    )


def scanning(client: TestClient) -> bool:
    return any(
        (getattr(report, "message", None) or "").startswith("scanning")
        for token in progress_tokens(client, "filescout/index")
        for report in client.progress_reports[token]
    )


def assert_index_matches_disk(db: str, root: Path) -> None:
    """Every file that belongs in the index is there, as it is on disk now, annotated."""
    expected = [path for path in regular_files(root) if path not in SAMPLE_IGNORED]
    assert audit(db, root, expected=expected).unfinished() == {}


def unblock_fifo(path: Path) -> None:
    """Open a FIFO's writing end and close it: a reader stuck opening it gets end-of-file."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


# Files that change while they are read


async def test_a_fifo_put_in_place_of_a_file_waiting_for_annotation_never_blocks(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 600)
    last = root / "pkg19" / "mod4" / "unit_00599.py"  # the largest file: annotated last
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_until(lambda: annotating(client), message="annotation under way")
        last.unlink()
        os.mkfifo(last)
        try:
            await wait_for_indexing(client, timeout=60)
        finally:
            unblock_fifo(last)  # a server stuck on it would otherwise never get out
        status = await status_of(client)
        assert status["lastError"] is None and status["phase"] == "idle"
        assert await file_item(client, "pkg19/mod4/unit_00599.py") is None
        await reindex_to_idle(client)  # a full pass past the FIFO, too
        assert_index_matches_disk(status["dbPath"], root)
    finally:
        await close(client)


class Churn:
    """A thread that keeps changing files while the server indexes them: rewrites in place
    (with the same size and with another), deletions and re-creations, files turned into
    directories and into FIFOs."""

    def __init__(self, root: Path, paths: list[str], seed: int) -> None:
        self.root = root
        self.paths = paths
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.fifos: list[Path] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Churn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        for fifo in self.fifos:
            unblock_fifo(fifo)

    def _run(self) -> None:
        serial = 0
        while not self.stop.wait(0.002):
            serial += 1
            path = self.root / self.rng.choice(self.paths)
            action = self.rng.choice(["same_size", "other_size", "recreate", "directory", "fifo"])
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                elif path.exists() or path.is_fifo():
                    path.unlink()
                if action == "same_size":
                    path.write_text(f"VALUE = {serial % 10}\n" * 400)
                elif action == "other_size":
                    path.write_text(f"def changed_{serial}():\n    return {serial}\n" * (serial % 50 + 1))
                elif action == "recreate":
                    path.write_text(f'"""Recreated {serial}."""\n')
                elif action == "directory":
                    path.mkdir()
                    (path / "inside.py").write_text(f"INSIDE = {serial}\n")
                else:
                    os.mkfifo(path)
                    self.fifos.append(path)
            except OSError:
                pass


async def test_files_deleted_rewritten_and_replaced_while_indexed_end_as_on_disk(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 800)
    paths = [f"pkg{index % 20}/mod{index % 7}/unit_{index:05d}.py" for index in range(0, 800, 7)]
    client = await start_client(root, tmp_path / "cache")
    try:
        with Churn(root, paths, seed=11):
            await wait_until(lambda: scanning(client), message="scan under way")
            await wait_for_indexing(client, timeout=90)
            await reindex_to_idle(client, timeout=90)  # another pass, with the churn still on
        status = await status_of(client)
        assert status["lastError"] is None
        await reindex_to_idle(client)  # the disk at rest: the index must end equal to it
        assert_index_matches_disk(status["dbPath"], root)
        assert "Traceback" not in logged(client)
    finally:
        await close(client)


@pytest.mark.parametrize("git", [True, False], ids=["git", "walk"])
async def test_a_file_turned_into_a_directory_a_fifo_or_a_device(tmp_path: Path, git: bool) -> None:
    root = make_workspace(tmp_path / "ws", git=git)
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        db = (await status_of(client))["dbPath"]
        cart, gateway, checkout = (
            root / "src/shop/cart.py",
            root / "src/shop/payments/stripe_gateway.py",
            root / "web/checkoutForm.ts",
        )
        cart.unlink()
        cart.mkdir()
        (cart / "inside.py").write_text('"""Now a package."""\n')
        gateway.unlink()
        os.mkfifo(gateway)
        checkout.unlink()
        try:
            os.mknod(checkout, stat.S_IFCHR | 0o644, os.makedev(1, 3))  # what /dev/null is
        except PermissionError:
            os.symlink("/dev/null", checkout)  # no CAP_MKNOD: a link to a device, outside
        if git:
            run_git(root, "add", "src/shop/cart.py/inside.py")
        # What an editor's watcher reports, then a full pass.
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Changed)
                    for path in (cart, gateway, checkout, cart / "inside.py")
                ]
            )
        )
        await wait_until_absent(client, "src/shop/payments/stripe_gateway.py")
        try:
            await reindex_to_idle(client)
        finally:
            unblock_fifo(gateway)
        paths = await indexed_paths(client)
        assert "src/shop/cart.py/inside.py" in paths
        assert not {"src/shop/cart.py", "src/shop/payments/stripe_gateway.py", "web/checkoutForm.ts"} & paths
        status = await status_of(client)
        assert status["lastError"] is None and status["phase"] == "idle"
        assert_index_matches_disk(db, root)
    finally:
        await close(client)


async def wait_until_absent(client: TestClient, path: str) -> None:
    for _ in range(500):
        if await file_item(client, path) is None:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} stayed in the index")


# Permissions


@pytest.fixture
def unprivileged(tmp_path: Path) -> Iterator[list[str]]:
    """The server's command, run so that file permissions apply to it (we run as root)."""
    yield without_file_access_override(SERVER_COMMAND, tmp_path)


async def start_with(command: list[str], root: Path, cache: Path) -> TestClient:
    config = ClientServerConfig(
        server_command=command,
        client_factory=make_client,
        server_env={**os.environ, "XDG_CACHE_HOME": str(cache), "FILESCOUT_CACHE_DIR": ""},
    )
    client = await config.start()
    params = types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
    )
    client.initialize_result = await client.initialize_session(params)
    return client


@pytest.mark.parametrize("git", [True, False], ids=["git", "walk"])
async def test_files_and_directories_it_may_not_read_are_named_and_left_out(
    tmp_path: Path, git: bool, unprivileged: list[str]
) -> None:
    root = make_workspace(tmp_path / "ws", git=git)
    secret, locked = root / "src/shop/secret_notes.py", root / "locked"
    secret.write_text('"""Notes nobody may read."""\n')
    locked.mkdir()
    (locked / "vault.py").write_text('"""Behind a locked door."""\n')
    cart = root / "src/shop/cart.py"
    if git:
        run_git(root, "add", "-A")
        run_git(root, "commit", "-q", "-m", "everything")  # git lists what is locked away, too
    secret.chmod(0)
    locked.chmod(0)
    client = await start_with(unprivileged, root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        paths = await indexed_paths(client)
        assert "src/shop/secret_notes.py" not in paths and "locked/vault.py" not in paths
        assert "src/shop/cart.py" in paths
        status = await status_of(client)
        assert status["phase"] == "idle" and status["byStatus"].get("pending", 0) == 0
        said = logged(client)
        assert "permission denied" in said.lower()
        assert "src/shop/secret_notes.py" in said and "locked" in said

        # An indexed file changed and then locked: its old row must not stay, as if current.
        cart.write_text('"""Cart, rewritten."""\n')
        cart.chmod(0)
        await reindex_to_idle(client)
        assert "src/shop/cart.py" not in await indexed_paths(client)

        for path in (secret, locked, cart):
            path.chmod(0o755 if path.is_dir() else 0o644)
        await reindex_to_idle(client)
        assert {"src/shop/secret_notes.py", "locked/vault.py", "src/shop/cart.py"} <= await indexed_paths(
            client
        )
        assert_index_matches_disk(status["dbPath"], root)
    finally:
        for path in (secret, locked, cart):
            path.chmod(0o755 if path.is_dir() else 0o644)
        await close(client)


# Symlink loops


@pytest.mark.parametrize("git", [True, False], ids=["git", "walk"])
async def test_symlink_loops_never_hang_or_recurse(tmp_path: Path, git: bool) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    (root / "a.py").symlink_to("b.py")
    (root / "b.py").symlink_to("a.py")
    (root / "self.py").symlink_to("self.py")
    (root / "sub").mkdir()
    (root / "sub/real.py").write_text('"""The one real file down here."""\n')
    (root / "sub/up").symlink_to("..", target_is_directory=True)
    (root / "sub/here").symlink_to(".", target_is_directory=True)
    for index in range(45):  # longer than the kernel follows (ELOOP after 40)
        (root / f"chain{index}").symlink_to(f"chain{(index + 1) % 45}")
    if git:
        run_git(root, "init", "-q")
        run_git(root, "add", "-A")
        run_git(root, "commit", "-q", "-m", "loops")
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        files = (await status_of(client))["files"]
        paths = await indexed_paths(client)
        assert "sub/real.py" in paths
        assert not [
            path
            for path in paths
            if path.startswith(("a.py", "b.py", "self.py", "chain", "sub/up", "sub/here"))
        ]
        # Paths through the loops, as an editor might report them.
        through = [root / "a.py", root / "self.py", root / "sub/up/sub/up/sub/here/real.py", root / "chain7"]
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=through[2].as_uri())
            )
        )
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Changed) for path in through
                ]
            )
        )
        page = as_dict(
            await client.protocol.send_request_async(
                "files/getFiles", {"paths": [str(path) for path in through]}
            )
        )
        assert [item["path"] for item in page["items"]] == ["sub/real.py"]
        await reindex_to_idle(client)
        status = await status_of(client)
        assert status["lastError"] is None and status["files"] == files
        assert await indexed_paths(client) == paths
    finally:
        await close(client)


# The workspace folder itself


@pytest.mark.parametrize("git", [True, False], ids=["git", "walk"])
async def test_workspace_folder_deleted_and_brought_back(tmp_path: Path, git: bool) -> None:
    root = make_workspace(tmp_path / "ws", git=git)
    away = tmp_path / "away"
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        status = await status_of(client)
        db, files = status["dbPath"], status["files"]
        before = await indexed_paths(client)

        shutil.move(root, away)
        # The editor's watcher reports every file deleted; then a full pass is asked for.
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(uri=(root / path).as_uri(), type=types.FileChangeType.Deleted)
                    for path in SAMPLE_FILES
                ]
            )
        )
        with pytest.raises(JsonRpcException) as caught:
            await execute(client, "filescout.reindex")
        assert caught.value.code == ErrorCode.WORKSPACE_UNAVAILABLE
        assert str(root) in caught.value.message and "gone" in caught.value.message
        status = await status_of(client)
        assert status["phase"] == "failed" and "gone" in (status["lastError"] or "")
        assert status["files"] == files and await indexed_paths(client) == before  # kept, and served
        assert "gone" in logged(client)

        # Back, as a copy (new inodes, new mtimes): same contents, same annotations.
        shutil.copytree(away, root, symlinks=True)
        await reindex_to_idle(client)
        status = await status_of(client)
        assert status["lastError"] is None and status["phase"] == "idle"
        assert await indexed_paths(client) == before
        assert_index_matches_disk(db, root)
        answer = as_dict(
            await client.protocol.send_request_async(
                "files/findRelevant", {"query": "rsync production deploy"}
            )
        )
        assert "scripts/deploy.sh" in [item["path"] for item in answer["items"]]
    finally:
        if not root.exists():
            shutil.copytree(away, root, symlinks=True)
        await close(client)
