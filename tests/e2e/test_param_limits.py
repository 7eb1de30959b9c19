"""End to end, params at the edges of what the protocol allows: numbers too large for the index,
long lists of path prefixes, a NUL in the workspace root. Each is either served or refused with
-32602 naming the field; none reaches an internal error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, client_capabilities

from harness.support import (
    SAMPLE_FILES,
    SERVER_COMMAND,
    as_dict,
    make_client,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("limits") / "ws", git=True)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(workspace: Path):
    client = await start_client(workspace, workspace.parent / "cache")
    await wait_for_indexing(client)
    yield client
    await stop_client(client)


async def get_files(client, params: object) -> dict:
    return as_dict(await client.protocol.send_request_async("files/getFiles", params))


@pytest.mark.parametrize("value", [2**64, 2**63, 9_223_372_036_855])
async def test_changed_since_beyond_the_index_range_is_invalid_params(client, value: int) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await client.protocol.send_request_async("files/getFiles", {"changedSince": value})
    assert caught.value.code == -32602
    assert "changedSince" in caught.value.message
    assert len((await get_files(client, {"limit": 1}))["items"]) == 1


async def test_changed_since_at_its_maximum_is_served(client) -> None:
    page = await get_files(client, {"changedSince": 9_223_372_036_854})
    assert page["items"] == []
    page = await get_files(client, {"changedSince": 0, "limit": 100})
    assert len(page["items"]) == len(SAMPLE_FILES)


@pytest.mark.parametrize("count", [300, 999, 5000])
async def test_many_path_prefixes_are_served(client, count: int) -> None:
    prefixes = [f"nowhere/dir{index}" for index in range(count - 2)] + ["web", "src/shop/payments"]
    page = await get_files(client, {"paths": prefixes, "limit": 100})
    assert [item["path"] for item in page["items"]] == [
        "src/shop/payments/__init__.py",
        "src/shop/payments/stripe_gateway.py",
        "web/checkoutForm.ts",
    ]
    recent = await get_files(client, {"paths": prefixes, "limit": 100, "orderBy": "recent"})
    assert sorted(item["path"] for item in recent["items"]) == sorted(item["path"] for item in page["items"])


async def test_many_prefixes_page_like_few(client) -> None:
    """Overlapping prefixes and exact file paths, past the point where the filter changes form:
    every file once, in path order, across pages."""
    prefixes = ["src", "src/shop", "src/shop/cart.py", "README.md", "docs/guide"] + [
        f"nowhere/{index}" for index in range(400)
    ]
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, object] = {"paths": prefixes, "limit": 2}
        if cursor is not None:
            params["cursor"] = cursor
        page = await get_files(client, params)
        seen += [item["path"] for item in page["items"]]
        cursor = page.get("nextCursor")
        if not cursor:
            break
    expected = sorted(path for path in SAMPLE_FILES if path.startswith(("src/", "docs/guide/", "README")))
    assert seen == expected


@pytest.mark.parametrize("spelling", ["relative", "uri"])
async def test_nul_in_a_path_prefix_is_invalid_params(client, workspace: Path, spelling: str) -> None:
    value = "src/a\u0000b" if spelling == "relative" else workspace.as_uri() + "/src/a%00b"
    with pytest.raises(JsonRpcException) as caught:
        await get_files(client, {"paths": ["web", value]})
    assert caught.value.code == -32602
    assert "paths[1]" in caught.value.message
    assert "NUL" in caught.value.message


@pytest.mark.parametrize("params", [{"paths": ["web", "src/a\udcffb"]}, {"globs": ["*.py", "\udcff*"]}])
async def test_a_lone_surrogate_in_a_path_is_served_or_refused(client, params: dict) -> None:
    """JSON text may spell a lone surrogate (`\\udcff`); no file name in the index holds one."""
    try:
        page = await get_files(client, params)
    except JsonRpcException as exc:
        assert exc.code == -32602
        assert "[1]" in exc.message
    else:
        assert all("\udcff" not in item["path"] for item in page["items"])


async def test_nul_in_root_uri_is_a_clear_startup_error(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path / "ws", git=False)
    config = ClientServerConfig(
        server_command=SERVER_COMMAND,
        client_factory=make_client,
        server_env={
            **os.environ,
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "FILESCOUT_CACHE_DIR": "",
        },
    )
    client = await config.start()
    try:
        uri = workspace.as_uri() + "%00evil"
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual_studio_code"),
                root_uri=uri,
                workspace_folders=[types.WorkspaceFolder(uri=uri, name="ws")],
            )
        )
        with pytest.raises(JsonRpcException) as caught:
            await client.protocol.send_request_async("files/getFiles", {})
        assert caught.value.code == -32010
        assert "rootUri" in caught.value.message
        assert "NUL" in caught.value.message
        assert "Traceback" not in caught.value.message
        shown = [message.message for message in client.messages]
        assert any("rootUri" in message and "NUL" in message for message in shown), shown
        logged = "\n".join(message.message for message in client.log_messages)
        assert "Traceback" not in logged
    finally:
        await client.shutdown_session()
        await client.stop()


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("files/getFiles", {"globs": ["*.py"] * 101}, "globs"),
        ("files/findRelevant", {"query": "cart", "scope": {"globs": ["*.py"] * 101}}, "scope.globs"),
        ("files/getFiles", {"globs": ["*.py", "[z-a]"]}, "globs[1]"),
        ("files/getFiles", {"globs": ["*.py", "src/[[:nope:]]"]}, "globs[1]"),
        ("files/findRelevant", {"query": "cart", "scope": {"globs": ["[z-a]"]}}, "scope.globs[0]"),
    ],
)
async def test_too_many_globs_or_one_that_is_no_pattern_is_invalid_params(
    client, method: str, params: dict, field: str
) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await client.protocol.send_request_async(method, params)
    assert caught.value.code == -32602
    assert field in caught.value.message
    assert "Traceback" not in caught.value.message
    assert len((await get_files(client, {"limit": 1}))["items"]) == 1


async def test_as_many_globs_as_allowed_are_served(client) -> None:
    globs = [f"nowhere/{index}/*.py" for index in range(99)] + ["src/shop/*.py"]
    page = await get_files(client, {"globs": globs})
    assert [item["path"] for item in page["items"]] == ["src/shop/__init__.py", "src/shop/cart.py"]
