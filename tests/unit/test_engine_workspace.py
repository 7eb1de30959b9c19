"""The engine in-process: a Workspace on a real workspace and a real SQLite index, driven
through the same operations the faces call."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import pytest_asyncio

from filescout.core.errors import InvalidParams, ReadOnly
from filescout.engine import Hooks, Workspace
from filescout_protocol.types import FindRelevantParams, GetFilesParams, IndexStatus, Scope
from harness.support import SAMPLE_FILES, make_workspace


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}


@pytest_asyncio.fixture
async def indexed(tmp_path: Path, env: dict[str, str]):
    root = make_workspace(tmp_path / "ws", git=False)
    statuses: list[IndexStatus] = []
    engine = await Workspace.open(root, env=env, hooks=Hooks(on_status=statuses.append))
    engine.start_indexing("index")
    await engine.wait_idle()
    yield engine, statuses
    await engine.close()


async def listed(engine: Workspace, **params) -> list[str]:
    return [
        item.path
        for batch in [b async for b in engine.stream_files(GetFilesParams(**params))]
        for item in batch
    ]


async def test_a_pass_indexes_annotates_and_reports_its_phases(indexed) -> None:
    engine, statuses = indexed
    status = await engine.status()
    text_files = list(SAMPLE_FILES)
    assert status.files == len(text_files) + 1  # and the binary font
    assert status.by_status == {"annotated": len(text_files), "skipped": 1}
    assert status.role == "writer" and status.phase == "idle"
    await asyncio.sleep(0.05)  # status notifications are sent from background tasks
    phases = [entry.phase for entry in statuses]
    assert phases[0] == "scanning" and phases[-1] == "idle" and "annotating" in phases
    assert statuses[-1].annotated == len(text_files)


async def test_listing_filters_and_text_query(indexed) -> None:
    engine, _ = indexed
    assert await listed(engine, paths=["src/shop/payments"]) == [
        "src/shop/payments/__init__.py",
        "src/shop/payments/stripe_gateway.py",
    ]
    assert "assets/font.woff2" not in await listed(engine)
    ranked = await listed(engine, query="refund charge")
    assert ranked[0] == "src/shop/payments/stripe_gateway.py"
    page = await engine.files_page(GetFilesParams(limit=3))
    assert len(page.items) == 3 and page.next_cursor is not None
    rest = await engine.files_page(GetFilesParams(limit=100, cursor=page.next_cursor))
    assert [item.path for item in page.items + rest.items] == await listed(engine)
    with pytest.raises(InvalidParams, match="orderBy"):
        await engine.files_page(GetFilesParams(order_by="rank"))


async def test_find_relevant_ranks_and_explains(indexed) -> None:
    engine, _ = indexed
    result = await engine.find_relevant(
        FindRelevantParams(query="where is the shopping cart discount applied", limit=3)
    )
    assert result.stages == ["prefilter"] and not result.degraded
    assert result.items[0].path == "src/shop/cart.py"
    assert result.items[0].reason
    scoped = await engine.find_relevant(FindRelevantParams(query="cart", scope=Scope(paths=["web"])))
    assert all(item.path.startswith("web/") for item in scoped.items)
    with pytest.raises(InvalidParams, match=r"scope\.paths"):
        await engine.find_relevant(FindRelevantParams(query="cart", scope=Scope(paths=["../elsewhere"])))


async def test_an_answer_never_waits_for_the_writer(indexed) -> None:
    engine, _ = indexed
    question = FindRelevantParams(query="where is the shopping cart discount applied", limit=3)
    release = asyncio.Event()

    async def hold_the_writer() -> None:  # as a long transaction of the annotation backlog does
        async with engine._index.db.transaction():
            await release.wait()

    holder = asyncio.create_task(hold_the_writer())
    await asyncio.sleep(0.05)
    try:
        result = await asyncio.wait_for(engine.find_relevant(question), 30)
    finally:
        release.set()
        await holder
    assert result.items[0].path == "src/shop/cart.py"


async def test_an_answer_is_never_counted_as_the_users_use(indexed) -> None:
    """A file findRelevant merely returned must not gain rank the next time, nor be explained as
    used: the same question asked ten times gives the same ranking and the same reasons."""
    engine, _ = indexed
    question = FindRelevantParams(query="where is the shopping cart discount applied", limit=5)
    answers = []
    for _ in range(10):
        result = await engine.find_relevant(question)
        answers.append([(item.path, item.reason) for item in result.items])
        await asyncio.sleep(0.05)  # room for anything the answer would have written in the background
    assert all(answer == answers[0] for answer in answers), answers
    assert not any("used it" in reason for _, reason in answers[0])
    assert await used(engine) == set()
    await engine.touch(["src/shop/cart.py"])  # the user's own use still counts
    for _ in range(100):
        if await used(engine):
            break
        await asyncio.sleep(0.05)
    assert await used(engine) == {"src/shop/cart.py"}


async def used(engine: Workspace) -> set[str]:
    """The files the index counts as used (read inside a transaction: after every write before it)."""
    async with engine._index.db.transaction(bump=False) as db:
        return {str(row[0]) for row in await db.execute_fetchall("SELECT path FROM access")}


async def test_an_edit_is_seen_by_refresh_and_reindex(indexed, tmp_path: Path) -> None:
    engine, _ = indexed
    root = engine.root
    (root / "src/shop/cart.py").write_text(
        '"""Gift wrapping for parcels."""\n\ndef wrap_gift(box):\n    pass\n'
    )
    await engine.refresh(["src/shop/cart.py"])
    await engine.wait_idle()
    (item,) = (await engine.files_page(GetFilesParams(paths=["src/shop/cart.py"]))).items
    assert "wrap_gift" in item.summary and item.status == "annotated"
    (root / "src/shop/new_module.py").write_text("def fresh():\n    pass\n")
    (root / "scripts/deploy.sh").unlink()
    result = await engine.reindex()
    assert (result.added, result.removed) == (1, 1)


async def test_a_second_workspace_on_the_same_index_reads_and_refuses_to_write(
    indexed, env: dict[str, str]
) -> None:
    engine, _ = indexed
    reader = await Workspace.open(engine.root, env=env)
    try:
        assert reader.role == "reader"
        assert (await reader.status()).files == (await engine.status()).files
        with pytest.raises(ReadOnly):
            await reader.reindex()
        assert await listed(reader) == await listed(engine)
    finally:
        await reader.close()


async def test_touch_records_use_and_annotate_now_answers(indexed) -> None:
    engine, _ = indexed
    await engine.touch(["web/checkoutForm.ts"], weight=3.0)
    assert (await listed(engine, order_by="frecency"))[0] == "web/checkoutForm.ts"
    items = await engine.annotate_now(["src/shop/cart.py"], timeout=5)
    assert [item.status for item in items] == ["annotated"]
    with pytest.raises(InvalidParams, match="not in the index"):
        await engine.annotate_now(["missing.py"], timeout=1)


async def test_a_reindex_replaced_before_it_began_still_answers(indexed) -> None:
    engine, _ = indexed
    engine.start_indexing("index")
    reindex = asyncio.ensure_future(engine.reindex())
    await asyncio.sleep(0)
    engine.start_indexing("index")  # replaces the reindex's pass while it waits for the first
    done, _ = await asyncio.wait({reindex}, timeout=10)
    assert done, "reindex never answered"
    assert reindex.result().files > 0  # answered with the scan of the pass that replaced it
    await engine.wait_idle()


async def test_a_reindex_replaced_while_it_scans_still_answers(indexed) -> None:
    """Two reindex requests in a row: the first one's pass is already scanning when the second
    replaces it, and its caller gets the second one's scan (not a cancellation, which would end
    an MCP server's whole session)."""
    engine, statuses = indexed
    seen = len(statuses)
    reindex = asyncio.ensure_future(engine.reindex())
    for _ in range(10_000):
        if any(status.phase == "scanning" for status in statuses[seen:]):
            break
        await asyncio.sleep(0.001)
    second = asyncio.ensure_future(engine.reindex())
    done, _ = await asyncio.wait({reindex, second}, timeout=10)
    assert done == {reindex, second}, "a reindex never answered"
    assert not reindex.cancelled() and reindex.result().files == len(SAMPLE_FILES) + 1
    assert second.result().files == len(SAMPLE_FILES) + 1
    await engine.wait_idle()


async def test_cancelling_one_reindex_leaves_the_other_to_answer(indexed) -> None:
    """The second reindex replaces the first one's pass, and its caller gives up: the first
    caller still gets the scan, not the second one's cancellation."""
    engine, _ = indexed
    first = asyncio.ensure_future(engine.reindex())
    await asyncio.sleep(0)
    second = asyncio.ensure_future(engine.reindex())
    await asyncio.sleep(0)
    second.cancel()
    done, _ = await asyncio.wait({first}, timeout=10)
    assert done, "the first reindex never answered"
    assert not first.cancelled() and first.result().files == len(SAMPLE_FILES) + 1
    await engine.wait_idle()
