"""The server keeps the content search's top-k store beside its index: built in the background
once the index is quiet (40 s without a commit: the cold first run here ends before that, the
second start builds it), searched once complete, and right again after a kill -9 while files
changed (what the index has and the store missed comes in on the next start; deleted content is
never an answer). Looked at from a reading process, as a second editor window would."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from filescout.engine.settings import default_db_path
from filescout.index import Index
from filescout.index.topk import BUILT, directory_for
from filescout.relevance.query import expression
from harness.support import TestClient, as_dict, make_workspace, start_client, stop_client, wait_for_indexing

pytest.importorskip("tantivy")

UPLOAD = "src/shop/uploads.py"
UPLOAD_TEXT = "def store_upload(blob):\n    # an upload lands in the zeppelin bucket\n    return blob\n"


async def paths(index: Index, terms: list[str], *, timeout: float = 30.0) -> tuple[list[str], list[str]]:
    """The content search's files from the store, and FTS5's for the same terms. A reading
    process searches the store while the writer marks it complete (not while it reconciles)."""
    deadline = time.monotonic() + timeout
    while not index.contents.exact:
        assert time.monotonic() < deadline, "the store never became complete"
        await asyncio.sleep(0.05)
    stored = await index.contents.search_words(terms, limit=20, fallback=None)
    full_text = await index.contents.search(expression(terms, single_tokens=True) or '""', limit=20)
    return [hit.path for hit in stored], [hit.path for hit in full_text]


async def reader_of(db: Path, *, timeout: float = 120.0) -> Index:
    """The index opened read-only, with the store the server built."""
    deadline = time.monotonic() + timeout
    while not (directory_for(db) / BUILT).exists():
        assert time.monotonic() < deadline, "the server never built its top-k store"
        await asyncio.sleep(0.05)
    index = await Index.open_readonly(db)
    index.keep_content_store()
    assert await index.contents.store_settled()
    return index


async def until_found(index: Index, terms: list[str], path: str, *, timeout: float = 30.0) -> list[str]:
    """The store's files for `terms` once `path` is among them (the writer's store commit shows
    in another process a moment after it is made)."""
    deadline = time.monotonic() + timeout
    while True:
        found, _ = await paths(index, terms)
        if path in found or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.1)


async def kill(client: TestClient) -> None:
    """SIGKILL the server (if it still runs) and let the client go."""
    server = client._server
    assert server is not None
    if server.returncode is None:
        server.kill()
    await asyncio.wait_for(server.wait(), 10)
    await client.stop()


async def test_the_servers_store_answers_and_survives_a_kill_while_files_change(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    cache = tmp_path / "cache"
    db = default_db_path(root.resolve(), {"XDG_CACHE_HOME": str(cache)})

    client = await start_client(root, cache)
    try:
        await wait_for_indexing(client)
    finally:
        await stop_client(client)
    assert not directory_for(db).exists()  # a cold index: FTS5 until the index is quiet

    client = await start_client(root, cache)
    try:
        await wait_for_indexing(client)
        reader = await reader_of(db)
        try:
            stored, full_text = await paths(reader, ["discounts", "totals"])
            assert stored == full_text == ["src/shop/cart.py"]
            stored, full_text = await paths(reader, ["gateway", "refunds", "webhooks"])
            assert stored == full_text
        finally:
            await reader.close()
        (root / UPLOAD).write_text(UPLOAD_TEXT)
        await asyncio.sleep(0.05)
    finally:  # the new file may be in SQLite, in the store, in both or in neither
        await kill(client)

    (root / "src/shop/cart.py").unlink()
    client = await start_client(root, cache)
    try:
        await wait_for_indexing(client)
        reader = await reader_of(db)
        try:
            assert UPLOAD in await until_found(reader, ["zeppelin"], UPLOAD)
            assert "src/shop/cart.py" not in (await paths(reader, ["discounts", "totals", "cart"]))[0]
            stored, full_text = await paths(reader, ["zeppelin", "bucket"])
            assert stored == full_text == [UPLOAD]
        finally:
            await reader.close()
        found = as_dict(
            await client.protocol.send_request_async(
                "files/findRelevant", {"query": "the zeppelin bucket", "limit": 3}
            )
        )
        assert found["items"][0]["path"] == UPLOAD
    finally:
        await stop_client(client)
