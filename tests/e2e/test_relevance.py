"""Relevance end to end: getFiles filters and orders, and findRelevant's stages streaming
through partial results, with the model stages served by a local misbehaving fake."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from harness.fake_openai import Action, FakeOpenAI
from harness.support import (
    SAMPLE_BINARY,
    SAMPLE_FILES,
    as_dict,
    execute,
    make_large_workspace,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
    wait_until,
)

TEXT_FILES = set(SAMPLE_FILES)


async def get_files(client, **params) -> list[dict]:
    page = as_dict(await client.protocol.send_request_async("files/getFiles", params))
    return page["items"]


async def find(client, token: str | None = None, **params) -> tuple[dict, list[list[dict]]]:
    if token is not None:
        params["partialResultToken"] = token
    result = as_dict(await client.protocol.send_request_async("files/findRelevant", params))
    return result, client.partial_results.get(token, []) if token else []


@pytest_asyncio.fixture
async def shop(tmp_path: Path):
    root = make_workspace(tmp_path / "ws", git=True)
    client = await start_client(root, tmp_path / "cache")
    await wait_for_indexing(client)
    yield client, root
    await stop_client(client)


# -- getFiles ------------------------------------------------------------------------------


async def test_get_files_filters(shop) -> None:
    client, root = shop
    assert {i["path"] for i in await get_files(client, kinds=["test"])} == {"tests/test_cart.py"}
    assert {i["path"] for i in await get_files(client, kinds=["binary"])} == set(SAMPLE_BINARY)
    assert {i["path"] for i in await get_files(client, languages=["typescript", "bash"])} == {
        "web/checkoutForm.ts",
        "scripts/deploy.sh",
    }
    assert await get_files(client, status=["pending"]) == []
    assert len(await get_files(client, status=["annotated"])) == len(TEXT_FILES)

    tagged = await get_files(client, tags=["stripe"])
    assert [i["path"] for i in tagged] == ["src/shop/payments/stripe_gateway.py"]
    both = await get_files(client, tags=["python", "cart"], tagsMatch="all")
    assert {i["path"] for i in both} == {"src/shop/cart.py", "tests/test_cart.py"}
    source = await get_files(client, tags=["python", "cart"], tagsMatch="all", kinds=["source"])
    assert {i["path"] for i in source} == {"src/shop/cart.py"}
    either = await get_files(client, tags=["typescript", "bash"], tagsMatch="any")
    assert {i["path"] for i in either} == {"web/checkoutForm.ts", "scripts/deploy.sh"}

    matched = await get_files(client, query="discount totals")
    assert matched[0]["path"] == "src/shop/cart.py"
    assert all("cart" in i["path"] or "Cart" in i["summary"] for i in matched)

    time.sleep(0.01)
    since = int(time.time() * 1000)
    (root / "README.md").write_text("# Sample shop\n\nNow with vouchers.\n")
    await execute(client, "filescout.reindex")
    recent = await get_files(client, changedSince=since)
    assert [i["path"] for i in recent] == ["README.md"]
    newest = await get_files(client, orderBy="recent", limit=1)
    assert newest[0]["path"] == "README.md"


async def test_get_files_orders_page_with_cursors(shop) -> None:
    client, _ = shop
    for order in ("path", "recent", "frecency", "rank"):
        extra = {"query": "shop cart checkout payments"} if order == "rank" else {}
        everything = await get_files(client, orderBy=order, limit=1000, **extra)
        paged: list[str] = []
        cursor = None
        while True:
            params = {"orderBy": order, "limit": 3, **extra, **({"cursor": cursor} if cursor else {})}
            page = as_dict(await client.protocol.send_request_async("files/getFiles", params))
            paged += [item["path"] for item in page["items"]]
            cursor = page["nextCursor"]
            if cursor is None:
                break
        assert paged == [item["path"] for item in everything], order
        assert len(set(paged)) == len(paged)
    with pytest.raises(JsonRpcException) as caught:
        page = as_dict(await client.protocol.send_request_async("files/getFiles", {"limit": 2}))
        await client.protocol.send_request_async(
            "files/getFiles", {"limit": 2, "orderBy": "recent", "cursor": page["nextCursor"]}
        )
    assert caught.value.code == -32602 and "cursor" in caught.value.message
    with pytest.raises(JsonRpcException) as caught:
        await client.protocol.send_request_async("files/getFiles", {"orderBy": "rank"})
    assert caught.value.code == -32602 and "orderBy" in caught.value.message


async def test_get_files_frecency_order_follows_use(shop) -> None:
    client, _ = shop
    for _ in range(3):
        client.protocol.notify("files/didAccess", {"paths": ["scripts/deploy.sh"]})
    client.protocol.notify("files/didAccess", {"paths": ["web/checkoutForm.ts"]})
    await wait_until_async(
        lambda: get_files(client, orderBy="frecency", limit=2),
        lambda items: [i["path"] for i in items] == ["scripts/deploy.sh", "web/checkoutForm.ts"],
    )


async def wait_until_async(fetch, predicate, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = await fetch()
        if predicate(value):
            return value
        assert time.monotonic() < deadline, value
        await asyncio.sleep(0.05)


async def test_get_files_streams_large_listings_in_batches(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", 2500)
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        result = await client.protocol.send_request_async(
            "files/getFiles", {"partialResultToken": "all", "batchSize": 1000}
        )
        assert result == []
        batches = client.partial_results["all"]
        assert [len(batch) for batch in batches] == [1000, 1000, 500]
        paths = [item["path"] for batch in batches for item in batch]
        assert paths == sorted(paths) and len(set(paths)) == 2500
    finally:
        await stop_client(client)


# -- findRelevant without a model -----------------------------------------------------------


async def test_find_relevant_scope_limit_and_reasons(shop) -> None:
    client, _ = shop
    result, _ = await find(client, query="refund a Stripe charge", limit=1)
    assert [i["path"] for i in result["items"]] == ["src/shop/payments/stripe_gateway.py"]
    assert (
        "defines `refund_charge` (def refund_charge(charge_id)), which matches"
        in result["items"][0]["reason"]
    )
    assert result["stages"] == ["prefilter"] and not result["degraded"]
    scoped, _ = await find(client, query="checkout cart shop", scope={"paths": ["web"]})
    assert {i["path"] for i in scoped["items"]} == {"web/checkoutForm.ts"}
    named, _ = await find(client, query="the apply_discount function in cart.py rounds wrongly")
    assert named["items"][0]["path"] == "src/shop/cart.py"
    assert "names this file" in named["items"][0]["reason"]
    assert "defines `apply_discount` the question mentions" in named["items"][0]["reason"]


async def test_find_relevant_prefers_source_unless_asked(shop) -> None:
    client, _ = shop
    result, _ = await find(client, query="shopping cart")
    paths = [i["path"] for i in result["items"]]
    assert paths.index("src/shop/cart.py") < paths.index("tests/test_cart.py")
    asked, _ = await find(client, query="the shopping cart tests")
    assert asked["items"][0]["path"] == "tests/test_cart.py"


async def test_find_relevant_reports_work_done_progress(shop) -> None:
    client, _ = shop
    client.progress_reports["fr-progress"] = []
    await client.protocol.send_request_async(
        "files/findRelevant", {"query": "stripe refund", "workDoneToken": "fr-progress"}
    )
    reports = client.progress_reports["fr-progress"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)


# -- findRelevant with a model --------------------------------------------------------------


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def model_options(fake: FakeOpenAI, **model) -> dict:
    return {
        "model": {"model": "test-model", "baseUrl": fake.base_url, "maxRetries": 0, "timeout": 10, **model}
    }


@pytest_asyncio.fixture
async def modelled(tmp_path: Path, fake: FakeOpenAI):
    root = make_workspace(tmp_path / "ws", git=False)
    (root / ".env").write_text("DATABASE_PASSWORD=envfilesecret123\n")
    (root / "config.py").write_text(
        '"""Database settings."""\nDATABASE_URL = "postgres://app:hunter2hunter2@db/app"\n'
    )
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake))
    await wait_for_indexing(client)
    await wait_until(
        lambda: (
            fake.calls("annotate") > 0
            and not any(
                t
                for t in client.progress_reports
                if str(t).startswith("filescout/model")
                and not isinstance(client.progress_reports[t][-1], types.WorkDoneProgressEnd)
            )
        ),
        message="model annotation to finish",
    )
    yield client, root
    await stop_client(client)


async def test_stages_stream_in_order(modelled, fake: FakeOpenAI) -> None:
    client, _ = modelled
    fake.judge_score = lambda path: 9.0 if "payments" in path else 6.0 if path == "src/shop/cart.py" else 1.0
    fake.final_order = lambda paths: sorted(paths, key=lambda p: "cart" not in p)  # cart first
    fake.pick_tags = lambda tags: ["stripe"] if "stripe" in tags else []
    result, batches = await find(client, "stages", query="refund a stripe charge from the cart", limit=3)
    stages = [batch[0]["stage"] for batch in batches]
    assert stages[0] == "prefilter" and stages[-1] == "final"
    assert "judge" in stages
    assert stages == sorted(stages, key=["prefilter", "judge", "final"].index)
    final = [item["path"] for item in batches[-1]]
    assert final == ["src/shop/cart.py", "src/shop/payments/stripe_gateway.py"]
    assert batches[-1][0]["reason"] == "placed src/shop/cart.py"
    judged = [item for batch in batches if batch[0]["stage"] == "judge" for item in batch]
    assert all(item["score"] >= 5 for item in judged) and len(judged) <= 3
    assert result == {
        "items": [],
        "stages": ["prefilter", "judge", "final"],
        "degraded": False,
        "message": None,
    }
    assert fake.calls("tags") == 1 and fake.calls("final") == 1

    plain = as_dict(
        await client.protocol.send_request_async(
            "files/findRelevant", {"query": "refund a stripe charge from the cart", "limit": 3}
        )
    )
    assert [item["path"] for item in plain["items"]] == final


async def test_no_secrets_in_relevance_prompts(tmp_path: Path, fake: FakeOpenAI) -> None:
    # A summary that repeats a credential (a model may do that) and a question that pastes a
    # key both reach the relevance prompts only redacted.
    leaked_url = "postgres://app:hunter2hunter2@db/app"
    pasted_key = "sk-proj-Zq8mB2xK7vR4tY1uW9pL3nA6"
    fake.answer = lambda paths, request: {
        "files": [
            {
                "path": p,
                "summary": (
                    f"Database settings; connects to {leaked_url}."
                    if p == "config.py"
                    else f"Model summary of {p}."
                ),
                "tags": ["database"],
            }
            for p in paths
        ]
    }
    root = make_workspace(tmp_path / "ws", git=False)
    (root / "config.py").write_text('"""Database settings."""\nDATABASE_URL = "postgres://localhost/app"\n')
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake))
    try:
        await wait_for_indexing(client)
        deadline = time.monotonic() + 30
        while True:  # until the model's summary shows
            item = (await get_files(client, paths=["config.py"]))[0]
            if item["annotator"].startswith("model:"):
                break
            assert time.monotonic() < deadline, item
            await asyncio.sleep(0.05)
        assert "hunter2" not in item["summary"] and "[REDACTED]" in item["summary"]  # nor to the client
        await find(client, query=f"why does the database login fail with my key {pasted_key}")
        prompts = [r.raw for r in fake.requests if r.kind in ("judge", "final", "tags")]
        assert {r.kind for r in fake.requests} >= {"judge", "final", "tags"}
        assert any("config.py" in prompt for prompt in prompts)
        for secret in ("hunter2hunter2", pasted_key):
            assert not any(secret in prompt for prompt in prompts), secret
    finally:
        await stop_client(client)


async def test_model_failures_degrade_gracefully(modelled, fake: FakeOpenAI) -> None:
    client, _ = modelled
    fake.per_kind["judge"] = Action(status=500)
    result, _ = await find(client, query="refund a stripe charge", options={"selectTags": False})
    assert result["degraded"] and "judging failed" in result["message"]
    assert result["stages"] == ["prefilter"]
    assert result["items"][0]["path"] == "src/shop/payments/stripe_gateway.py"
    assert result["items"][0]["stage"] == "prefilter"

    del fake.per_kind["judge"]
    fake.per_kind["final"] = Action(status=500)
    fake.judge_score = lambda path: 8.0 if "shop" in path else 0.0
    result, _ = await find(
        client, query="refund a stripe charge from the shopping cart", options={"selectTags": False}
    )
    assert result["degraded"] and "final ranking failed" in result["message"]
    assert result["stages"] == ["prefilter", "judge"]
    assert {item["stage"] for item in result["items"]} == {"judge"}


async def test_malformed_and_invented_model_output(modelled, fake: FakeOpenAI) -> None:
    client, _ = modelled
    fake.judge_score = lambda path: 9.0

    def tamper(kind: str, answer):
        if kind == "judge":
            answer["files"].append({"path": "does/not/exist.py", "score": 10, "reason": "invented"})
        if kind == "final":
            return "Sure! Here is the ranking you asked for."
        return answer

    fake.edit = tamper
    result, _ = await find(
        client, query="refund a stripe charge from the shopping cart", options={"selectTags": False}
    )
    paths = [item["path"] for item in result["items"]]
    assert "does/not/exist.py" not in paths and paths
    assert result["degraded"] and "malformed" in result["message"]
    assert result["stages"] == ["prefilter", "judge"]
    assert fake.calls("final") == 2  # asked once more, then gave up


async def test_use_model_false_makes_no_calls(modelled, fake: FakeOpenAI) -> None:
    client, _ = modelled
    before = fake.calls()
    result, _ = await find(client, query="refund a stripe charge", options={"useModel": False})
    assert result["stages"] == ["prefilter"] and not result["degraded"]
    assert fake.calls() == before


async def test_cancel_stops_model_calls_at_once(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = make_large_workspace(tmp_path / "ws", 300)
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake, concurrency=1))
    try:
        await wait_for_indexing(client)
        await wait_until(lambda: fake.calls("annotate") > 0, message="annotation calls")
        await asyncio.sleep(0.5)
        fake.per_kind["judge"] = Action(delay=1.5)
        request = asyncio.ensure_future(
            client.protocol.send_request_async(
                "files/findRelevant",
                {
                    "query": "unit sample helper value",
                    "limit": 10,
                    "options": {"candidates": 120, "selectTags": False},
                },
                msg_id="to-cancel",
            )
        )
        await wait_until(lambda: fake.calls("judge") == 1, message="the first judging call")
        client.protocol.notify("$/cancelRequest", types.CancelParams(id="to-cancel"))
        with pytest.raises(JsonRpcException) as caught:
            await request
        assert caught.value.code == -32800
        await asyncio.sleep(2.5)
        assert fake.calls("judge") == 1  # the other chunks were never sent
        status = as_dict(await execute(client, "filescout.status"))
        assert status["files"] == 300  # the server carries on
    finally:
        await stop_client(client)
