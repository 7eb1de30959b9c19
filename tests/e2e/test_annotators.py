"""Annotation through the real server: a file the parser chokes on, and model annotation through
the real openai client against a local OpenAI-compatible server that misbehaves on purpose."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types

from harness.fake_openai import Action, FakeOpenAI
from harness.support import (
    as_dict,
    execute,
    file_item,
    make_workspace,
    query_db,
    start_client,
    stop_client,
    wait_for_indexing,
    wait_until,
)


async def test_a_file_the_parser_chokes_on_does_not_stop_the_backlog(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    (root / "deep.json").write_text("[\n" * 5000 + "]\n" * 5000)  # too deep for json.loads
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        status = as_dict(await execute(client, "filescout.status"))
        assert status["byStatus"] == {"annotated": 11, "skipped": 1}, status["byStatus"]
        item = await file_item(client, "deep.json")
        assert item["summary"] and item["annotator"].startswith("structural/")
    finally:
        await stop_client(client)


# -- model annotation, end to end -------------------------------------------------------------

PLANTED_KEY = "sk-proj-PLANTEDabcdefghijklmnopqrstuvwxyz0123456789"
PLANTED_STRIPE = "sk_live_PLANTED4eC39HqLyjWDarjtT1zdp7dc"


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def model_options(fake: FakeOpenAI, **extra) -> dict:
    model = {
        "model": "test-model",
        "baseUrl": fake.base_url,
        "apiKey": "test-key",
        "maxRetries": 2,
        "timeout": 5,
        **extra.pop("model", {}),
    }
    return {"model": model, **extra}


def model_workspace(root: Path) -> Path:
    make_workspace(root, git=False)
    (root / "config").mkdir()
    (root / "config/settings.py").write_text(
        '"""Service settings."""\n'
        f'OPENAI_API_KEY = "{PLANTED_KEY}"\n'
        f'STRIPE = "{PLANTED_STRIPE}"\n'
        "DEBUG = False\n"
    )
    (root / ".env").write_text("DATABASE_PASSWORD=envfilesecret123\n")
    return root


@pytest_asyncio.fixture
async def model_client(tmp_path: Path, fake: FakeOpenAI):
    root = model_workspace(tmp_path / "ws")
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake))
    yield client, root
    await stop_client(client)


async def wait_for_model(client, timeout: float = 60.0) -> dict:
    """Wait until model annotation has nothing left to do; return the model status."""

    async def state() -> dict:
        return as_dict(await execute(client, "filescout.status"))["model"]

    deadline = time.monotonic() + timeout
    while True:
        status = await state()
        if status["state"] != "active" and status["queuedFiles"] == 0:
            return status
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.1)


async def test_model_annotations_land_and_nothing_secret_leaves(model_client, fake: FakeOpenAI) -> None:
    client, root = model_client
    await wait_for_indexing(client)
    status = await wait_for_model(client)
    assert status["state"] == "idle" and status["calls"] == fake.calls() > 0
    port = fake.base_url.split(":")[2].split("/")[0]
    assert status["annotator"] == f"model:127.0.0.1-{port}/test-model/p1"

    item = await file_item(client, "src/shop/cart.py")
    assert item["summary"] == "Model summary of src/shop/cart.py."
    assert item["status"] == "annotated" and item["annotator"].startswith("model:")
    assert item["tags"] == ["model", "summarized"]

    bodies = [request.raw for request in fake.requests]
    assert all(request.body["model"] == "test-model" for request in fake.requests)
    assert all(request.headers.get("authorization") == "Bearer test-key" for request in fake.requests)
    cart_request = next(r for r in fake.requests if "### src/shop/cart.py" in r.text)
    assert "outline: Python source: Shopping cart" in cart_request.text
    assert "symbols: ShoppingCart" in cart_request.text
    assert "### config/settings.py" in "".join(r.text for r in fake.requests)
    for secret in [PLANTED_KEY, PLANTED_STRIPE, "envfilesecret123", "test-key"]:
        assert not any(secret in body for body in bodies), secret
    assert not any("### .env" in r.text for r in fake.requests)
    assert not any("assets/font.woff2" in r.text for r in fake.requests)

    db = as_dict(await execute(client, "filescout.status"))["dbPath"]
    ((tokens,),) = query_db(db, "SELECT sum(input_tokens + output_tokens) FROM usage")
    assert tokens > 0


async def test_rename_costs_no_model_call(model_client, fake: FakeOpenAI) -> None:
    client, root = model_client
    await wait_for_indexing(client)
    await wait_for_model(client)
    calls = fake.calls()
    (root / "src/shop/cart.py").rename(root / "src/shop/basket.py")
    (root / "README.md").write_bytes((root / "src/shop/payments/stripe_gateway.py").read_bytes())
    result = as_dict(await execute(client, "filescout.reindex"))
    assert result["renamed"] == 1
    await wait_for_indexing(client, "filescout/reindex")
    await wait_for_model(client)
    assert fake.calls() == calls  # a rename and a copy of known content cost nothing
    item = await file_item(client, "src/shop/basket.py")
    assert item["summary"] == "Model summary of src/shop/cart.py."
    assert item["status"] == "annotated"


async def test_retry_after_is_honoured(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.script.extend([Action(status=429, headers={"Retry-After": "1"})])
    root = tmp_path / "ws"
    root.mkdir()
    (root / "one.py").write_text('"""One module."""\n')
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake))
    try:
        await wait_for_indexing(client)
        await wait_for_model(client)
        assert fake.calls() == 2
        gap = fake.requests[1].at - fake.requests[0].at
        assert gap >= 0.95, gap
        assert (await file_item(client, "one.py"))["summary"] == "Model summary of one.py."
    finally:
        await stop_client(client)


async def test_server_errors_and_timeouts_are_retried(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.script.extend([Action(status=500), Action(status=503), Action(delay=3.0)])
    root = tmp_path / "ws"
    root.mkdir()
    (root / "one.py").write_text('"""One module."""\n')
    client = await start_client(
        root, tmp_path / "cache", init_options=model_options(fake, model={"timeout": 1, "maxRetries": 4})
    )
    try:
        await wait_for_indexing(client)
        status = await wait_for_model(client)
        assert fake.calls() == 4  # 500, 503, a timeout, then an answer
        assert (await file_item(client, "one.py"))["summary"] == "Model summary of one.py."
        assert status["calls"] == 1 and status["failures"] == 0
    finally:
        await stop_client(client)


async def test_malformed_answers_fall_back_to_structural(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "one.py").write_text('"""Parses invoices."""\n\ndef parse_invoice(text):\n    pass\n')
    fake.answer = lambda paths, request: {"nonsense": True}
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake))
    try:
        await wait_for_indexing(client)
        await wait_for_model(client)
        assert fake.calls() == 2  # asked once more, then gave up on this file
        item = await file_item(client, "one.py")
        assert item["summary"].startswith("Python source: Parses invoices.")
        assert item["status"] == "stale" and item["annotator"] == "structural/4"
        await execute(client, "filescout.reindex")
        await wait_for_indexing(client, "filescout/reindex")
        await wait_for_model(client)
        assert fake.calls() == 2  # not retried on every pass
    finally:
        await stop_client(client)


async def test_fenced_json_and_json_schema_fallback(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.reject_json_schema = True
    real_answer = fake.answer

    def fenced(paths, request):
        return f"Here are the annotations:\n```json\n{json.dumps(real_answer(paths, request))}\n```"

    root = tmp_path / "ws"
    root.mkdir()
    (root / "one.py").write_text('"""One."""\n')
    (root / "two.py").write_text('"""Two."""\n')
    fake.answer = fenced
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake))
    try:
        await wait_for_indexing(client)
        await wait_for_model(client)
        formats = [r.body.get("response_format", {}).get("type") for r in fake.requests]
        assert formats[0] == "json_schema" and formats[-1] == "json_object"
        assert (await file_item(client, "two.py"))["summary"] == "Model summary of two.py."
    finally:
        await stop_client(client)


async def test_a_rejected_request_is_not_sent_again_and_again(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.default = Action(status=400)  # not about response_format: the request itself is refused
    root = make_workspace(tmp_path / "ws", git=False)
    options = model_options(fake, model={"concurrency": 1})
    client = await start_client(root, tmp_path / "cache", init_options=options)
    try:
        await wait_for_indexing(client)
        status = await wait_for_model(client)
        assert "rejected" in status["message"]
        calls = fake.calls()
        assert 0 < calls <= 4  # one request per batch of up to 8 files
        await asyncio.sleep(0.5)
        assert fake.calls() == calls
        item = await file_item(client, "src/shop/cart.py")
        assert item["annotator"] == "structural/4" and item["summary"]
    finally:
        await stop_client(client)


async def test_an_unusable_endpoint_setting_leaves_indexing_working(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    options = {"model": {"model": "m", "baseUrl": "http://127.0.0.1:9/v1\t", "apiKey": "k"}}
    client = await start_client(root, tmp_path / "cache", init_options=options)
    try:
        await wait_for_indexing(client)
        status = as_dict(await execute(client, "filescout.status"))
        assert status["byStatus"]["annotated"] == 10 and status["role"] == "writer"
        assert any("model annotation is off" in m.message for m in client.messages)
    finally:
        await stop_client(client)


async def test_budget_stops_model_calls(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    options = model_options(
        fake, budget={"dailyTokens": 1000}, model={"requestTokens": 600, "concurrency": 1}
    )
    client = await start_client(root, tmp_path / "cache", init_options=options)
    try:
        await wait_for_indexing(client)
        await wait_until(lambda: fake.calls() > 0, message="a model call")
        status = await wait_for_model_stop(client)
        assert status["state"] == "budget_spent"
        assert "daily budget of 1000 tokens" in status["message"]
        assert status["tokensToday"] <= 1000
        calls = fake.calls()
        await asyncio.sleep(0.5)
        assert fake.calls() == calls
        page = as_dict(await client.protocol.send_request_async("files/getFiles", {}))
        structural_only = [i for i in page["items"] if i["annotator"] == "structural/4"]
        assert structural_only and all(i["status"] == "stale" and i["summary"] for i in structural_only)
        assert status["queuedFiles"] == len(structural_only)
        assert status["estimatedTokensToFinish"] > 0
    finally:
        await stop_client(client)


async def wait_for_model_stop(client, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = as_dict(await execute(client, "filescout.status"))["model"]
        if status["state"] not in ("active", "idle"):
            return status
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.1)


async def test_circuit_breaker_opens_and_recovers(tmp_path: Path, fake: FakeOpenAI) -> None:
    fake.default = Action(status=500)
    root = make_workspace(tmp_path / "ws", git=False)
    options = model_options(
        fake, model={"maxRetries": 0, "failurePause": 2, "concurrency": 1, "requestTokens": 600}
    )
    client = await start_client(root, tmp_path / "cache", init_options=options)
    try:
        await wait_for_indexing(client)
        status = await wait_for_model_stop(client)
        assert status["state"] == "unavailable"
        assert fake.calls() == 3  # three failures in a row open the circuit
        page = as_dict(await client.protocol.send_request_async("files/getFiles", {"limit": 3}))
        assert all(item["summary"] for item in page["items"])  # structural annotations serve
        await asyncio.sleep(0.5)
        assert fake.calls() == 3  # nothing while the circuit is open
        fake.default = None
        status = await wait_for_model(client, timeout=30)
        assert status["state"] == "idle"
        item = await file_item(client, "src/shop/cart.py")
        assert item["summary"] == "Model summary of src/shop/cart.py."
    finally:
        await stop_client(client)


async def test_privacy_mode_calls_no_model(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = model_workspace(tmp_path / "ws")
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake, privacyMode=True))
    try:
        await wait_for_indexing(client)
        await asyncio.sleep(0.5)
        status = as_dict(await execute(client, "filescout.status"))
        assert status["model"]["state"] == "privacy"
        assert status["annotator"] == "structural/4"
        assert status["byStatus"].get("annotated", 0) >= 10
        assert fake.calls() == 0
    finally:
        await stop_client(client)


async def test_model_switch_keeps_old_annotations_until_new_arrive(model_client, fake: FakeOpenAI) -> None:
    client, root = model_client
    await wait_for_indexing(client)
    await wait_for_model(client)
    fake.default = Action(status=500)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={
                "filescout": model_options(
                    fake, model={"model": "other-model", "maxRetries": 0, "failurePause": 1}
                )
            }
        )
    )
    await wait_until(
        lambda: any(r.body["model"] == "other-model" for r in fake.requests),
        message="a call to the new model",
    )
    item = await file_item(client, "src/shop/cart.py")
    assert item["summary"] == "Model summary of src/shop/cart.py."
    assert item["status"] == "stale" and "test-model" in item["annotator"]
    fake.default = None
    fake.answer = lambda paths, request: {
        "files": [{"path": p, "summary": f"Other model on {p}.", "tags": ["other"]} for p in paths]
    }
    status = await wait_for_model(client, timeout=30)
    assert "other-model" in status["annotator"]
    item = await file_item(client, "src/shop/cart.py")
    assert item["summary"] == "Other model on src/shop/cart.py." and item["status"] == "annotated"


async def test_annotate_command_and_refused_key(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "one.py").write_text('"""One."""\n')
    fake.default = Action(status=401, body='{"error": {"message": "Incorrect API key provided"}}')
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake))
    try:
        await wait_for_indexing(client)
        status = await wait_for_model_stop(client)
        assert status["state"] == "refused" and "Incorrect API key" in status["message"]
        assert fake.calls() == 1  # no retries against a refusal
        items = as_dict(await execute(client, "filescout.annotate", {"paths": ["one.py"], "timeout": 5}))
        assert items[0]["path"] == "one.py" and items[0]["summary"].startswith("Python source")
    finally:
        await stop_client(client)
