"""The index engine end to end: crash safety, content addressing, access-driven scheduling,
watching, ignore rules, safety, and two sidecars on one workspace."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from filescout.engine.settings import default_db_path
from harness.support import (
    as_dict,
    execute,
    file_item,
    make_large_workspace,
    make_workspace,
    progress_tokens,
    query_db,
    run_git,
    start_client,
    stop_client,
    wait_for_indexing,
    wait_until,
)


async def db_path_of(client) -> str:
    return as_dict(await execute(client, "filescout.status"))["dbPath"]


def consistent(db: str) -> None:
    """No duplicate or orphaned rows: every file once, the full-text table in step."""
    assert query_db(db, "PRAGMA integrity_check") == [("ok",)]
    ((files,),) = query_db(db, "SELECT count(*) FROM files")
    ((distinct,),) = query_db(db, "SELECT count(DISTINCT path) FROM files")
    ((fts,),) = query_db(db, "SELECT count(*) FROM files_fts")
    ((orphans,),) = query_db(db, "SELECT count(*) FROM files_fts WHERE rowid NOT IN (SELECT id FROM files)")
    assert files == distinct == fts and orphans == 0


async def test_kill_during_annotation_then_restart_resumes(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 1500)
    client = await start_client(root, tmp_path / "cache")
    await wait_until(
        lambda: any(
            getattr(report, "message", "")
            and "annotating" in report.message
            and int(report.message.split()[1].split("/")[0]) >= 200
            for token in progress_tokens(client, "filescout/index")
            for report in client.progress_reports[token]
        ),
        message="annotation under way",
    )
    db = await db_path_of(client)
    client._server.kill()  # SIGKILL: no shutdown, no cleanup
    await client._server.wait()
    await client.stop()
    ((done_before,),) = query_db(db, "SELECT count(*) FROM files WHERE annotator IS NOT NULL")
    assert 0 < done_before < 1500

    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        token = progress_tokens(client, "filescout/index")[0]
        end = client.progress_reports[token][-1].message
        resumed = int(end.split(", ")[1].split()[0])
        assert resumed <= 1500 - done_before, "work finished before the kill was redone"
        status = as_dict(await execute(client, "filescout.status"))
        assert status["files"] == 1500 and status["byStatus"] == {"annotated": 1500}
        consistent(db)
    finally:
        await stop_client(client)


async def test_kill_during_scan_leaves_a_usable_index(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 20000, grow=False)  # many files, quick to annotate

    def scanned() -> int:
        counts = [
            int(report.message.split()[1].split("/")[0])
            for token in progress_tokens(client, "filescout/index")
            for report in client.progress_reports[token]
            if (getattr(report, "message", None) or "").startswith("scanning ") and "/" in report.message
        ]
        return max(counts, default=0)

    client = await start_client(root, tmp_path / "cache")
    db = await db_path_of(client)
    await wait_until(lambda: scanned() >= 4000, message="scan under way")
    client._server.kill()
    await client._server.wait()
    await client.stop()
    consistent(db)
    ((stored,),) = query_db(db, "SELECT count(*) FROM files")
    assert stored < 20000, "the scan finished before the kill: make the workspace larger"

    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client, timeout=120)
        status = as_dict(await execute(client, "filescout.status"))
        assert status["files"] == 20000 and status["byStatus"] == {"annotated": 20000}
        consistent(db)
    finally:
        await stop_client(client)


async def test_rename_costs_no_annotation_and_keeps_history(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        db = await db_path_of(client)
        client.protocol.notify("files/didAccess", {"paths": ["src/shop/cart.py"]})
        await wait_until(
            lambda: query_db(db, "SELECT count(*) FROM access") == [(1,)], message="the access to be recorded"
        )
        ((annotations_before,),) = query_db(db, "SELECT count(*) FROM annotations")

        (root / "src/shop/cart.py").rename(root / "src/shop/basket.py")
        result = as_dict(await execute(client, "filescout.reindex"))
        assert (result["added"], result["removed"], result["renamed"]) == (1, 1, 1)
        item = await file_item(client, "src/shop/basket.py")
        assert item["status"] == "annotated" and "ShoppingCart" in item["summary"]
        await wait_for_indexing(client, "filescout/reindex")
        assert query_db(db, "SELECT count(*) FROM annotations") == [(annotations_before,)]
        assert query_db(db, "SELECT path, count FROM access") == [("src/shop/basket.py", 1)]
        end = client.progress_reports[progress_tokens(client, "filescout/reindex")[0]][-1]
        assert end.message.endswith(", 0 annotated")
    finally:
        await stop_client(client)


async def test_opened_file_is_annotated_before_untouched_files(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 3000)
    # The largest file comes last in the default order (small files first).
    last = "pkg19/mod3/unit_02999.py"
    client = await start_client(root, tmp_path / "cache")
    try:
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=(root / last).as_uri(),
                    language_id="python",
                    version=1,
                    text=(root / last).read_text(),
                )
            )
        )
        await wait_until(lambda: bool(progress_tokens(client, "filescout/index")), message="indexing")
        item = None
        while item is None or item["status"] != "annotated":
            item = await file_item(client, last)
            await asyncio.sleep(0.01)
        status = as_dict(await execute(client, "filescout.status"))
        assert status["byStatus"].get("annotated", 0) < 1500, status["byStatus"]
        await wait_for_indexing(client)
    finally:
        await stop_client(client)


async def test_access_frecency_survives_restart_and_orders_annotation(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 400)
    client = await start_client(root, tmp_path / "cache")
    await wait_for_indexing(client)
    db = await db_path_of(client)
    favourite = "pkg3/mod2/unit_00303.py"
    for _ in range(3):
        client.protocol.notify("files/didAccess", {"paths": [favourite]})
    client.protocol.notify("files/didAccess", {"paths": ["pkg1/mod1/unit_00001.py"]})
    await wait_until(lambda: query_db(db, "SELECT count(*) FROM access") == [(2,)], message="access rows")
    await wait_until(
        lambda: query_db(db, f"SELECT count FROM access WHERE path = '{favourite}'") == [(3,)],
        message="three accesses",
    )
    await stop_client(client)

    ranks = dict(query_db(db, "SELECT path, rank FROM access"))
    assert ranks[favourite] > ranks["pkg1/mod1/unit_00001.py"]
    # The annotation queue's default order puts frecent files first.
    order = [
        row[0]
        for row in query_db(
            db,
            "SELECT f.path FROM files f LEFT JOIN access a ON a.path = f.path "
            "ORDER BY a.rank IS NULL, a.rank DESC, f.size LIMIT 2",
        )
    ]
    assert order == [favourite, "pkg1/mod1/unit_00001.py"]


async def test_save_reannotates_and_watched_changes_apply(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=True)
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        assert [r.method for r in client.registrations] == ["workspace/didChangeWatchedFiles"]

        target = root / "src/shop/cart.py"
        target.write_text('"""Gift card redemption."""\n\ndef redeem_gift_card(code):\n    pass\n')
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=target.as_uri()))
        )
        await wait_until_item(client, "src/shop/cart.py", lambda item: "redeem_gift_card" in item["summary"])

        created = root / "src/shop/refunds.py"
        created.write_text('"""Refund policy rules."""\n')
        (root / "README.md").unlink()
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(uri=created.as_uri(), type=types.FileChangeType.Created),
                    types.FileEvent(uri=(root / "README.md").as_uri(), type=types.FileChangeType.Deleted),
                    types.FileEvent(uri=(root / "debug.log").as_uri(), type=types.FileChangeType.Changed),
                    types.FileEvent(uri="file:///etc/hosts", type=types.FileChangeType.Changed),
                ]
            )
        )
        await wait_until_item(
            client,
            "src/shop/refunds.py",
            lambda item: item["status"] == "annotated" and "Refund" in item["summary"],
        )
        assert await file_item(client, "README.md") is None
        assert await file_item(client, "debug.log") is None  # git-ignored: stays out
    finally:
        await stop_client(client)


async def wait_until_item(client, path: str, predicate, timeout: float = 20.0) -> dict:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        item = await file_item(client, path)
        if item is not None and predicate(item):
            return item
        assert asyncio.get_running_loop().time() < deadline, f"{path}: {item}"
        await asyncio.sleep(0.02)


async def test_periodic_reconcile_catches_unreported_changes(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    client = await start_client(
        root, tmp_path / "cache", editor="neovim", init_options={"reconcileInterval": 1}
    )
    try:
        await wait_for_indexing(client)
        (root / "src/shop/cart.py").write_text('"""Loyalty points ledger."""\n')
        await wait_until_item(client, "src/shop/cart.py", lambda item: "Loyalty" in item["summary"])
    finally:
        await stop_client(client)


async def test_cancelling_progress_stops_indexing(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 4000)
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_until(
            lambda: any(
                getattr(report, "message", "") and "annotating" in report.message
                for token in progress_tokens(client, "filescout/index")
                for report in client.progress_reports[token]
            ),
            message="annotation under way",
        )
        token = progress_tokens(client, "filescout/index")[0]
        client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
        await wait_for_indexing(client)
        assert client.progress_reports[token][-1].message == "indexing cancelled"
        status = as_dict(await execute(client, "filescout.status"))
        assert status["byStatus"].get("pending", 0) > 0
        await asyncio.sleep(0.5)
        later = as_dict(await execute(client, "filescout.status"))
        assert later["byStatus"].get("pending") == status["byStatus"].get("pending")
    finally:
        await stop_client(client)


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
async def test_ignore_rules_and_reincludes(tmp_path: Path, git: bool) -> None:
    root = make_workspace(tmp_path / "ws", git=git)
    extra = {
        "build/generated/api.py": "API = 1\n",  # in an ignored directory, re-included by path
        "build/other.py": "X = 1\n",  # stays ignored
        "keep.log": "kept log\n",  # re-included by name in .filescoutignore
        "vendor/lib/big.py": "V = 1\n",  # excluded by .filescoutignore
        "docs/private/notes.md": "# Notes\n",  # excluded by config
        "docs/private/public.md": "# Public\n",  # re-included by config include
        "yarn.lock": "lock\n",  # built-in default
        "pkg/.gitignore": "*.tmp\n",  # nested .gitignore
        "pkg/a.tmp": "tmp\n",
        "pkg/a.py": "A = 1\n",
    }
    for relative, text in extra.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    (root / ".filescoutignore").write_text("vendor/\n!keep.log\n!build/generated/\n")
    client = await start_client(
        root,
        tmp_path / "cache",
        init_options={"exclude": ["docs/private/"], "include": ["docs/private/public.md"]},
    )
    try:
        await wait_for_indexing(client)
        page = as_dict(await client.protocol.send_request_async("files/getFiles", {}))
        paths = {item["path"] for item in page["items"]}
        for present in [
            "build/generated/api.py",
            "keep.log",
            "docs/private/public.md",
            "pkg/a.py",
            "pkg/.gitignore",
            ".filescoutignore",
        ]:
            assert present in paths, present
        for absent in [
            "build/other.py",
            "vendor/lib/big.py",
            "docs/private/notes.md",
            "yarn.lock",
            "pkg/a.tmp",
            "debug.log",
            "build/bundle.js",
            "node_modules/leftpad/index.js",
        ]:
            assert absent not in paths, absent
    finally:
        await stop_client(client)


@pytest.mark.parametrize("change", ["filescoutignore", "settings"])
async def test_rules_changed_while_stopped_apply_on_restart(tmp_path: Path, change: str) -> None:
    root = make_workspace(tmp_path / "ws", git=True)
    client = await start_client(root, tmp_path / "cache")
    await wait_for_indexing(client)
    assert await file_item(client, "src/shop/cart.py") is not None
    await stop_client(client)

    options = {}
    if change == "filescoutignore":
        (root / ".filescoutignore").write_text("src/shop/cart.py\n")
    else:
        options = {"exclude": ["src/shop/cart.py"]}
    client = await start_client(root, tmp_path / "cache", init_options=options)
    try:
        await wait_for_indexing(client)
        assert await file_item(client, "src/shop/cart.py") is None
        assert await file_item(client, "src/shop/payments/stripe_gateway.py") is not None
    finally:
        await stop_client(client)


async def test_symlinks_never_lead_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOKEN = 'outside'\n")
    root = make_workspace(tmp_path / "ws", git=False)
    (root / "escape.py").symlink_to(outside / "secret.py")
    (root / "escape_dir").symlink_to(outside, target_is_directory=True)
    (root / "alias.py").symlink_to(root / "src/shop/cart.py")
    (root / "loop").symlink_to(root, target_is_directory=True)
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        page = as_dict(await client.protocol.send_request_async("files/getFiles", {}))
        paths = {item["path"] for item in page["items"]}
        assert "alias.py" in paths
        assert not any(p.startswith(("escape", "loop/")) for p in paths)
        with pytest.raises(JsonRpcException) as caught:
            await client.protocol.send_request_async("files/getFiles", {"paths": [str(outside)]})
        assert caught.value.code == -32602

        # An editor reporting a save through the symlinked directory: still outside.
        (outside / "secret.py").write_text("TOKEN = 'changed outside'\n")
        escaped = root / "escape_dir" / "secret.py"
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=escaped.as_uri()))
        )
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=escaped.as_uri(), type=types.FileChangeType.Created)]
            )
        )
        marker = root / "src/shop/marker.py"
        marker.write_text('"""Marker."""\n')
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=marker.as_uri()))
        )
        await wait_until_item(client, "src/shop/marker.py", lambda item: True)
        assert await file_item(client, "escape_dir/secret.py") is None
    finally:
        await stop_client(client)


async def test_tracked_directory_replaced_by_a_symlink_leads_nowhere(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "util.py").write_text("SECRET_OUTSIDE = 1\n")
    root = make_workspace(tmp_path / "ws", git=True)
    (root / "lib").mkdir()
    (root / "lib" / "util.py").write_text("INSIDE = 1\n")
    run_git(root, "add", "lib")
    run_git(root, "commit", "-q", "-m", "lib")
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        assert await file_item(client, "lib/util.py") is not None
        (root / "lib" / "util.py").unlink()
        (root / "lib").rmdir()
        (root / "lib").symlink_to(outside, target_is_directory=True)  # git still lists lib/util.py
        await execute(client, "filescout.reindex")  # answers once the scan is stored
        assert await file_item(client, "lib/util.py") is None
    finally:
        await stop_client(client)


async def test_sensitive_files_are_recorded_but_never_read(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    (root / ".env").write_text("STRIPE_SECRET_KEY=sk_live_abcdefghijklmnop\n")
    (root / "certs").mkdir()
    (root / "certs/server.pem").write_text("-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----\n")
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        for path in [".env", "certs/server.pem"]:
            item = await file_item(client, path)
            assert item["status"] == "skipped"
            assert "content not read" in item["summary"]
            assert "sk_live" not in str(item) and "PRIVATE" not in str(item)
        db = await db_path_of(client)
        rows = query_db(
            db,
            "SELECT a.summary FROM annotations a JOIN files f ON f.hash = a.hash "
            "WHERE f.path IN ('.env', 'certs/server.pem')",
        )
        assert rows == []
        result = as_dict(
            await client.protocol.send_request_async(
                "files/findRelevant", {"query": "sk_live_abcdefghijklmnop MIIEvQ"}
            )
        )
        assert result["items"] == []
    finally:
        await stop_client(client)


@pytest.mark.parametrize(
    ("damage", "reason"), [("garbage", "damaged"), ("foreign", "foreign"), ("newer", "newer")]
)
async def test_unusable_index_is_moved_aside_and_rebuilt(tmp_path: Path, damage: str, reason: str) -> None:
    """In filescout's own folder; a path the user chose is set aside only if it is an index of
    ours (tests/unit/test_index_placement.py)."""
    root = make_workspace(tmp_path / "ws", git=False)
    db = default_db_path(root.resolve(), {"XDG_CACHE_HOME": str(tmp_path / "cache")})
    db.parent.mkdir(parents=True)
    if damage == "garbage":
        db.write_bytes(b"this is not a database" * 100)
    else:
        connection = sqlite3.connect(db)
        if damage == "foreign":
            connection.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
        else:
            connection.execute("PRAGMA application_id = 1179861844")  # ours, from the future
            connection.execute("CREATE TABLE schema_version (version INTEGER)")
            connection.execute("INSERT INTO schema_version VALUES (99)")
        connection.commit()
        connection.close()
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        status = as_dict(await execute(client, "filescout.status"))
        assert status["byStatus"]["annotated"] == 10 and status["dbPath"] == str(db)
        aside = db.with_name(f"index.sqlite3.{reason}")
        assert aside.exists()
        assert any("unusable" in m.message and str(aside) in m.message for m in client.messages)
    finally:
        await stop_client(client)


async def test_second_process_reads_then_takes_over(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    env = {"FILESCOUT_TAKEOVER_INTERVAL": "0.2"}
    first = await start_client(root, tmp_path / "cache", env=env)
    await wait_for_indexing(first)
    second = await start_client(root, tmp_path / "cache", env=env)
    try:
        status = as_dict(await execute(second, "filescout.status"))
        assert status["role"] == "reader"
        assert status["writerPid"] == first._server.pid
        page = as_dict(await second.protocol.send_request_async("files/getFiles", {}))
        assert len(page["items"]) == 10
        with pytest.raises(JsonRpcException) as caught:
            await execute(second, "filescout.reindex")
        assert caught.value.code == -32011
        assert "serves reads" in caught.value.message

        first._server.kill()
        await first._server.wait()
        await first.stop()
        (root / "src/shop/loyalty.py").write_text('"""Loyalty points."""\n')
        await wait_until_item(second, "src/shop/loyalty.py", lambda item: item["status"] == "annotated")
        status = as_dict(await execute(second, "filescout.status"))
        assert status["role"] == "writer" and status["writerPid"] == second._server.pid
    finally:
        await stop_client(second)
