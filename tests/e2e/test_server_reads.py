"""End to end, requests that change nothing: one server per sample workspace (a git repository and
a plain directory) answers every test here, so each test must leave the index as it found it. A
findRelevant that answers records the files it returns as used, so those tests start their own
server (test_server.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

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
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

TEXT_FILES = set(SAMPLE_FILES)


@pytest.fixture(scope="module", params=["git", "plain"])
def workspace(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp(request.param) / "ws", git=request.param == "git")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(workspace: Path):
    client = await start_client(workspace, workspace.parent / "cache")
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
    page = as_dict(
        await client.protocol.send_request_async(
            "files/getFiles", {"paths": ["src/shop/payments"], "globs": ["!__init__.py"]}
        )
    )
    assert [item["path"] for item in page["items"]] == ["src/shop/payments/stripe_gateway.py"]
    page = as_dict(
        await client.protocol.send_request_async("files/getFiles", {"paths": ["src/shop/cart.py", "web"]})
    )
    assert [item["path"] for item in page["items"]] == ["src/shop/cart.py", "web/checkoutForm.ts"]


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
    client, method: str, params: object, expected: str
) -> None:
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
