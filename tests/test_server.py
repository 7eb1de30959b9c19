"""End to end: the real server as a subprocess over stdio, driven by a pytest-lsp client."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from support import (
    SAMPLE_BINARY,
    SAMPLE_FILES,
    as_dict,
    execute,
    get_files_streamed,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
    wait_until,
)

TEXT_FILES = set(SAMPLE_FILES)


@pytest.fixture(params=["git", "plain"])
def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws", git=request.param == "git")


@pytest_asyncio.fixture
async def client(workspace: Path, tmp_path: Path):
    client = await start_client(workspace, tmp_path / "cache")
    await wait_for_indexing(client)
    yield client
    await stop_client(client)


async def test_streamed_files_are_exactly_the_indexable_text_files(client) -> None:
    batches, final = await get_files_streamed(client, "stream-1", batchSize=3)
    items = [item for batch in batches for item in batch]
    assert final == []
    assert len(batches) == -(-len(TEXT_FILES) // 3)
    assert all(len(batch) <= 3 for batch in batches)
    assert sorted(item["path"] for item in items) == sorted(TEXT_FILES)
    for item in items:
        assert item["summary"].strip(), item
        assert item["status"] == "annotated", item
        assert set(item) >= {"path", "summary", "tags", "language", "kind", "size", "mtime"}
    by_path = {item["path"]: item for item in items}
    assert by_path["src/shop/cart.py"]["language"] == "python"
    assert "ShoppingCart" in by_path["src/shop/cart.py"]["summary"]
    assert by_path["tests/test_cart.py"]["kind"] == "test"
    assert by_path["web/checkoutForm.ts"]["language"] == "typescript"


async def test_indexing_reports_work_done_progress(client) -> None:
    tokens = [token for token in client.progress_reports if str(token).startswith("filescout/index")]
    assert len(tokens) == 1
    reports = client.progress_reports[tokens[0]]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    percentages = [report.percentage for report in reports[1:-1] if report.percentage is not None]
    assert percentages == sorted(percentages)
    assert "indexed" in (reports[-1].message or "")


async def test_paging_with_cursor_walks_every_file_once(client) -> None:
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 4} if cursor is None else {"limit": 4, "cursor": cursor}
        page = as_dict(await client.protocol.send_request_async("files/getFiles", params))
        seen.extend(item["path"] for item in page["items"])
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == sorted(TEXT_FILES)
    assert pages == -(-len(TEXT_FILES) // 4)


async def test_glob_and_prefix_filters(client) -> None:
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {"globs": ["*.py"]}))
    assert {item["path"] for item in page["items"]} == {p for p in TEXT_FILES if p.endswith(".py")}
    page = as_dict(await client.protocol.send_request_async(
        "files/getFiles", {"paths": ["src/shop/payments"], "globs": ["!__init__.py"]}))
    assert [item["path"] for item in page["items"]] == ["src/shop/payments/stripe_gateway.py"]
    page = as_dict(await client.protocol.send_request_async(
        "files/getFiles", {"paths": ["src/shop/cart.py", "web"]}))
    assert [item["path"] for item in page["items"]] == ["src/shop/cart.py", "web/checkoutForm.ts"]


async def test_edit_then_reindex_updates_the_entry(client, workspace: Path) -> None:
    target = workspace / "src/shop/cart.py"
    target.write_text('"""Wishlist storage for saved products."""\n\nclass Wishlist:\n    pass\n')
    result = as_dict(await execute(client, "filescout.reindex"))
    assert result["changed"] == 1 and result["added"] == 0 and result["removed"] == 0
    assert result["files"] == len(TEXT_FILES) + len(SAMPLE_BINARY)
    await wait_for_indexing(client, "filescout/reindex")
    page = as_dict(await client.protocol.send_request_async(
        "files/getFiles", {"paths": ["src/shop/cart.py"]}))
    (item,) = page["items"]
    assert "Wishlist" in item["summary"] and "ShoppingCart" not in item["summary"]
    assert item["status"] == "annotated"
    assert item["size"] == target.stat().st_size


async def test_reindex_sees_new_and_deleted_files(client, workspace: Path) -> None:
    (workspace / "src/shop/inventory.py").write_text('"""Stock levels per warehouse."""\n')
    (workspace / "web/checkoutForm.ts").unlink()
    result = as_dict(await execute(client, "filescout.reindex"))
    assert (result["added"], result["removed"]) == (1, 1)
    await wait_for_indexing(client, "filescout/reindex")
    _, final = await get_files_streamed(client, "after-reindex")
    paths = {item["path"] for batch in client.partial_results["after-reindex"] for item in batch}
    assert paths == (TEXT_FILES - {"web/checkoutForm.ts"}) | {"src/shop/inventory.py"}


@pytest.mark.parametrize(
    ("method", "params", "expected"),
    [
        ("files/getFiles", {"limit": "ten"}, "limit"),
        ("files/getFiles", {"limit": 0}, "limit"),
        ("files/getFiles", {"glob": ["*.py"]}, "glob"),
        ("files/getFiles", {"globs": ["../*.py"]}, "globs[0]"),
        ("files/getFiles", {"paths": ["/etc"]}, "paths[0]"),
        ("files/getFiles", {"paths": ["src/../../etc"]}, "paths[0]"),
        ("files/getFiles", {"cursor": "not-a-cursor"}, "cursor"),
        ("files/getFiles", [1, 2], "object"),
        ("files/findRelevant", {}, "query"),
        ("files/findRelevant", {"query": "   "}, "query"),
        ("files/findRelevant", {"query": "cart", "limit": 100000}, "limit"),
        ("files/findRelevant", {"query": "cart", "scope": {"paths": ["../x"]}}, "scope.paths[0]"),
    ],
)
async def test_bad_params_get_invalid_params_and_server_keeps_serving(
        client, method: str, params: object, expected: str) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await client.protocol.send_request_async(method, params)
    assert caught.value.code == -32602
    assert expected in caught.value.message
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {"limit": 1}))
    assert len(page["items"]) == 1


async def test_bad_command_arguments_get_invalid_params(client) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await execute(client, "filescout.status", {"verbose": True})
    assert caught.value.code == -32602
    assert "no arguments" in caught.value.message


async def test_find_relevant_lexical_stage(client) -> None:
    result = as_dict(await client.protocol.send_request_async(
        "files/findRelevant", {"query": "refund a Stripe charge", "limit": 3}))
    assert result["stages"] == ["prefilter"]
    assert result["items"][0]["path"] == "src/shop/payments/stripe_gateway.py"
    assert result["items"][0]["stage"] == "prefilter"
    assert "stripe" in result["items"][0]["reason"]
    assert len(result["items"]) <= 3

    scoped = as_dict(await client.protocol.send_request_async(
        "files/findRelevant", {"query": "checkout address", "scope": {"globs": ["*.py"]}}))
    assert all(item["path"].endswith(".py") for item in scoped["items"])


async def test_find_relevant_streams_with_partial_result_token(client) -> None:
    result = as_dict(await client.protocol.send_request_async(
        "files/findRelevant", {"query": "shopping cart discount", "partialResultToken": "fr-1"}))
    assert result["items"] == []
    streamed = [item for batch in client.partial_results["fr-1"] for item in batch]
    assert streamed[0]["path"] == "src/shop/cart.py"


async def test_status_command(client, workspace: Path) -> None:
    status = as_dict(await execute(client, "filescout.status"))
    assert status["root"] == str(workspace.resolve())
    assert status["files"] == len(TEXT_FILES) + len(SAMPLE_BINARY)
    assert status["byStatus"] == {"annotated": len(TEXT_FILES), "skipped": len(SAMPLE_BINARY)}
    assert status["byKind"]["binary"] == len(SAMPLE_BINARY)
    assert status["role"] == "writer"
    assert status["phase"] == "idle"
    assert status["lastScan"].endswith("Z")
    assert Path(status["dbPath"]).exists()
    assert oct(Path(status["dbPath"]).stat().st_mode & 0o777) == oct(0o600)


async def test_capabilities_advertise_commands_and_methods(workspace: Path, tmp_path: Path) -> None:
    client = await start_client(workspace, tmp_path / "cache")
    try:
        result = client.initialize_result.capabilities
        assert set(result.execute_command_provider.commands) >= {"filescout.reindex", "filescout.status"}
        experimental = result.experimental["filescout"]
        assert "files/getFiles" in experimental["methods"]
        assert experimental["protocolVersion"] == 1
        await wait_for_indexing(client)
    finally:
        await stop_client(client)


async def test_restart_is_incremental(workspace: Path, tmp_path: Path) -> None:
    client = await start_client(workspace, tmp_path / "cache")
    await wait_for_indexing(client)
    await stop_client(client)
    (workspace / "README.md").write_text("# Sample shop\n\nNow with gift cards.\n")
    client = await start_client(workspace, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        result = as_dict(await execute(client, "filescout.reindex"))
        assert result["changed"] == 0 and result["unchanged"] == len(TEXT_FILES) + len(SAMPLE_BINARY)
        page = as_dict(await client.protocol.send_request_async(
            "files/getFiles", {"paths": ["README.md"]}))
        assert "gift cards" in page["items"][0]["summary"]
        end = client.progress_reports[[t for t in client.progress_reports
                                        if str(t).startswith("filescout/index")][0]][-1]
        assert "1 annotated" in end.message
    finally:
        await stop_client(client)


async def test_configuration_change_rescans_and_warns(client) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"filescout": {"exclude": ["web/"]}}))
    await wait_for_indexing(client, "filescout/index", count=2)
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {}))
    assert {item["path"] for item in page["items"]} == TEXT_FILES - {"web/checkoutForm.ts"}

    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"filescout": {"maxFileSize": "huge"}}))
    await wait_until(lambda: any("maxFileSize" in m.message for m in client.messages),
                     message="a warning naming maxFileSize")
    warning = next(m for m in client.messages if "maxFileSize" in m.message)
    assert warning.type == types.MessageType.Warning


async def test_configuration_pulled_when_settings_are_null(client) -> None:
    client.set_configuration({"exclude": ["docs/"]}, section="filescout")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_for_indexing(client, "filescout/index", count=2)
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {}))
    assert not any(item["path"].startswith("docs/") for item in page["items"])
