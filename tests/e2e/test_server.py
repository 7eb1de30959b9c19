"""End to end: the real server as a subprocess over stdio, driven by a pytest-lsp client. Each
test here changes what its server knows (files, settings, a restart, the use a question records),
so each starts its own; requests that change nothing share one in test_server_reads.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types

from harness.support import (
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


async def test_edit_then_reindex_updates_the_entry(client, workspace: Path) -> None:
    target = workspace / "src/shop/cart.py"
    target.write_text('"""Wishlist storage for saved products."""\n\nclass Wishlist:\n    pass\n')
    result = as_dict(await execute(client, "filescout.reindex"))
    assert result["changed"] == 1 and result["added"] == 0 and result["removed"] == 0
    assert result["files"] == len(TEXT_FILES) + len(SAMPLE_BINARY)
    await wait_for_indexing(client, "filescout/reindex")
    page = as_dict(
        await client.protocol.send_request_async("files/getFiles", {"paths": ["src/shop/cart.py"]})
    )
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


async def test_find_relevant_lexical_stage(client) -> None:
    result = as_dict(
        await client.protocol.send_request_async(
            "files/findRelevant", {"query": "refund a Stripe charge", "limit": 3}
        )
    )
    assert result["stages"] == ["prefilter"]
    assert result["items"][0]["path"] == "src/shop/payments/stripe_gateway.py"
    assert result["items"][0]["stage"] == "prefilter"
    assert "stripe" in result["items"][0]["reason"]
    assert len(result["items"]) <= 3

    scoped = as_dict(
        await client.protocol.send_request_async(
            "files/findRelevant", {"query": "checkout address", "scope": {"globs": ["*.py"]}}
        )
    )
    assert all(item["path"].endswith(".py") for item in scoped["items"])


async def test_find_relevant_streams_with_partial_result_token(client) -> None:
    result = as_dict(
        await client.protocol.send_request_async(
            "files/findRelevant", {"query": "shopping cart discount", "partialResultToken": "fr-1"}
        )
    )
    assert result["items"] == []
    streamed = [item for batch in client.partial_results["fr-1"] for item in batch]
    assert streamed[0]["path"] == "src/shop/cart.py"


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
        page = as_dict(await client.protocol.send_request_async("files/getFiles", {"paths": ["README.md"]}))
        assert "gift cards" in page["items"][0]["summary"]
        end = client.progress_reports[
            [t for t in client.progress_reports if str(t).startswith("filescout/index")][0]
        ][-1]
        assert "1 annotated" in end.message
    finally:
        await stop_client(client)


async def test_configuration_change_rescans_and_warns(client) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"filescout": {"exclude": ["web/"]}})
    )
    await wait_for_indexing(client, "filescout/index", count=2)
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {}))
    assert {item["path"] for item in page["items"]} == TEXT_FILES - {"web/checkoutForm.ts"}

    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"filescout": {"maxFileSize": "huge"}})
    )
    await wait_until(
        lambda: any("maxFileSize" in m.message for m in client.messages),
        message="a warning naming maxFileSize",
    )
    warning = next(m for m in client.messages if "maxFileSize" in m.message)
    assert warning.type == types.MessageType.Warning


async def test_configuration_pulled_when_settings_are_null(client) -> None:
    client.set_configuration({"exclude": ["docs/"]}, section="filescout")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_for_indexing(client, "filescout/index", count=2)
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {}))
    assert not any(item["path"].startswith("docs/") for item in page["items"])
