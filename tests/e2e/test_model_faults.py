"""The model endpoint failing in every way it can, through the real server: findRelevant with the
model on still answers every request (with the model-free ranking, or the judging it got, and a
note saying what failed), annotation keeps every file's structural annotation until the model is
back, and a request can be cancelled while its model call hangs.

Retries and plain 500s in annotation are covered in test_annotators.py; the client's own
handling of each fault (in process, with answers that drip in past the timeout, which to a
request are timeouts like the hung connection's) in tests/unit/test_model_client_faults.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from harness.fake_openai import LISTED_FILE, Action, FakeOpenAI
from harness.support import (
    SAMPLE_FILES,
    as_dict,
    execute,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
    wait_until,
)

QUESTION = "refund a stripe charge from the shopping cart"
ANSWER_WITHIN = 30.0  # seconds: only so that a hang fails the test instead of stalling it
TIMEOUT = 1.0  # the model's per-call timeout in these tests: ample for the fake under load

# What the endpoint does, and words the request's note must contain to say so truthfully.
FAULTS: dict[str, tuple[Action, str]] = {
    "hung connection": (Action(fault="hang"), f"no answer within {TIMEOUT:g} s"),
    "connection closed before answering": (Action(fault="drop"), "Connection error"),
    "connection closed mid-answer": (Action(fault="truncate"), "Connection error"),
    "malformed JSON body": (Action(body='{"choices": [{"message": {"content": "x'), "not JSON"),
    "a completion without a message": (Action(body='{"choices": [{}]}'), "not a chat completion"),
    "500": (Action(status=500), "500"),
    "429 with Retry-After": (Action(status=429, headers={"Retry-After": "0.1"}), "429"),
    "429 asking for two minutes": (Action(status=429, headers={"Retry-After": "120"}), "429"),
    "429 without Retry-After": (Action(status=429), "429"),
}


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def model_options(fake: FakeOpenAI, **model: Any) -> dict[str, Any]:
    return {
        "model": {
            "model": "test-model",
            "baseUrl": fake.base_url,
            "timeout": TIMEOUT,
            "maxRetries": 1,
            "failurePause": 30,
            **model,
        }
    }


async def model_status(client) -> dict[str, Any]:
    return as_dict(await execute(client, "filescout.status"))["model"]


async def wait_for_model_idle(client) -> dict[str, Any]:
    status: dict[str, Any] = {}

    async def idle() -> bool:
        nonlocal status
        status = await model_status(client)
        return status["state"] == "idle" and status["queuedFiles"] == 0

    deadline = asyncio.get_running_loop().time() + ANSWER_WITHIN
    while not await idle():
        assert asyncio.get_running_loop().time() < deadline, status
        await asyncio.sleep(0.05)
    return status


@pytest_asyncio.fixture
async def modelled(tmp_path: Path, fake: FakeOpenAI):
    root = make_workspace(tmp_path / "ws", git=False)
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake))
    await wait_for_indexing(client)
    await wait_for_model_idle(client)
    yield client
    await stop_client(client)


async def find(client, **options: Any) -> dict[str, Any]:
    request = client.protocol.send_request_async(
        "files/findRelevant", {"query": QUESTION, "limit": 5, "options": options}
    )
    return as_dict(await asyncio.wait_for(request, ANSWER_WITHIN))


def paths(result: dict[str, Any]) -> list[str]:
    return [item["path"] for item in result["items"]]


async def test_find_relevant_answers_under_every_fault_of_the_judging_calls(
    modelled, fake: FakeOpenAI
) -> None:
    client = modelled
    model_free = await find(client, useModel=False)
    assert paths(model_free) and not model_free["degraded"]
    for name, (action, said) in FAULTS.items():
        healthy = await find(client)  # a success closes the failure streak of the last fault
        assert healthy["stages"] == ["prefilter", "judge", "final"], (name, healthy)
        before = len(fake.requests)
        fake.per_kind.update({"tags": action, "judge": action})
        try:
            result = await find(client)
        finally:
            fake.per_kind.clear()
        sent = [request.kind for request in fake.requests[before:]]
        assert result["degraded"] and result["stages"] == ["prefilter"], (name, result)
        assert paths(result) == paths(model_free), name  # the model-free ranking, whole
        assert {item["stage"] for item in result["items"]} == {"prefilter"}, name
        assert "judging failed" in result["message"] and said in result["message"], (name, result)
        assert "tag selection failed" in result["message"], (name, result)
        # Retries are bounded: each call is made at most twice, timeouts never twice.
        assert sent.count("tags") <= 2 and sent.count("judge") <= 2, (name, sent)
        if "within" in said:
            assert sent.count("tags") == 1 and sent.count("judge") == 1, (name, sent)


async def test_find_relevant_keeps_the_judging_when_the_final_ranking_fails(
    modelled, fake: FakeOpenAI
) -> None:
    client = modelled
    scores = {"src/shop/payments/stripe_gateway.py": 9.0, "src/shop/cart.py": 6.0, "tests/test_cart.py": 5.0}
    fake.judge_score = lambda path: scores.get(path, 1.0)
    judged_order = list(scores)
    for name in ("hung connection", "connection closed mid-answer", "a completion without a message", "500"):
        action, said = FAULTS[name]
        await find(client, selectTags=False)
        fake.per_kind["final"] = action
        try:
            result = await find(client, selectTags=False)
        finally:
            fake.per_kind.clear()
        assert result["stages"] == ["prefilter", "judge"] and result["degraded"], (name, result)
        assert paths(result) == judged_order, (name, result)
        assert {item["stage"] for item in result["items"]} == {"judge"}, name
        assert "final ranking failed" in result["message"] and said in result["message"], (name, result)


async def test_answers_naming_files_not_offered_are_dropped(modelled, fake: FakeOpenAI) -> None:
    client = modelled
    fake.judge_score = lambda path: 8.0 if "shop" in path else 0.0

    def invent(kind: str, answer: Any) -> Any:
        if kind == "judge":
            answer["files"].insert(0, {"path": "src/shop/evil.py", "score": 10, "reason": "invented"})
        if kind == "final":  # an invented file first, then the offered ones in reverse
            answer["files"] = [{"path": "../../etc/passwd", "reason": "invented"}, *answer["files"][::-1]]
        return answer

    fake.edit = invent
    result = await find(client, selectTags=False)
    assert result["stages"] == ["prefilter", "judge", "final"] and not result["degraded"], result
    (final,) = [request for request in fake.requests if request.kind == "final"]
    offered = LISTED_FILE.findall(final.text)
    assert len(offered) >= 2 and all("shop" in path for path in offered)
    assert paths(result) == offered[::-1][:5]

    # An answer about none of the files offered is no answer: the earlier stage stands.
    fake.edit = lambda kind, answer: (
        {"files": [{"path": "nowhere.py", "reason": "invented"}]} if kind == "final" else answer
    )
    result = await find(client, selectTags=False)
    assert result["stages"] == ["prefilter", "judge"] and result["degraded"], result
    assert "final ranking failed" in result["message"] and "named none of the files" in result["message"]
    assert paths(result) == sorted(offered)[:5]  # the judging's order: by score, then path

    fake.edit = lambda kind, answer: (
        {"files": [{"path": "nowhere.py", "score": 10, "reason": "invented"}]} if kind == "judge" else answer
    )
    result = await find(client, selectTags=False)
    assert result["stages"] == ["prefilter"] and result["degraded"], result
    assert "judging failed" in result["message"] and "named none of the files" in result["message"]
    assert paths(result) == paths(await find(client, useModel=False))


async def test_a_request_is_cancelled_while_its_model_call_hangs(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    client = await start_client(
        root, tmp_path / "cache", init_options=model_options(fake, timeout=60, concurrency=1)
    )
    try:
        await wait_for_indexing(client)
        await wait_for_model_idle(client)
        fake.per_kind["judge"] = Action(fault="hang")
        request = asyncio.ensure_future(
            client.protocol.send_request_async(
                "files/findRelevant",
                {"query": QUESTION, "options": {"selectTags": False}},
                msg_id="hung",
            )
        )
        await wait_until(lambda: fake.calls("judge") == 1, message="the hung judging call")
        client.protocol.notify("$/cancelRequest", types.CancelParams(id="hung"))
        with pytest.raises(JsonRpcException) as caught:
            await asyncio.wait_for(request, ANSWER_WITHIN)
        assert caught.value.code == -32800
        # The slot the hung call held is free again: the next request's calls go out at once.
        fake.per_kind.clear()
        result = await find(client, selectTags=False)
        assert result["stages"] == ["prefilter", "judge", "final"], result
        assert fake.calls("judge") == 2
    finally:
        await stop_client(client)


# -- annotation -------------------------------------------------------------------------------

ANNOTATION_FAULTS = (
    "hung connection",
    "connection closed mid-answer",
    "a completion without a message",
    "429 with Retry-After",
)


async def all_files(client) -> list[dict[str, Any]]:
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {"limit": 100}))
    return page["items"]


async def test_annotation_keeps_structural_annotations_through_every_fault(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    options = model_options(fake, maxRetries=0, failurePause=0.3, concurrency=1, requestTokens=600)
    fake.default = FAULTS[ANNOTATION_FAULTS[0]][0]
    client = await start_client(root, tmp_path / "cache", init_options=options)
    try:
        await wait_for_indexing(client)
        text_files = sorted(SAMPLE_FILES)
        for round_, name in enumerate(ANNOTATION_FAULTS):
            action, said = FAULTS[name]
            fake.default = action
            if round_:  # new content for every file, annotated while the endpoint fails
                for relative in text_files:
                    with (root / relative).open("a") as file:
                        file.write(
                            f"\n# revision {round_}\n"
                            if relative.endswith((".py", ".sh"))
                            else f"\nr{round_}\n"
                        )
                await execute(client, "filescout.reindex")
            await wait_until(
                lambda before=fake.calls(): fake.calls() >= before + 3,
                message=f"three failed calls ({name})",
            )
            status = await model_status(client)
            message = status["message"] or ""
            assert said in message or "the model endpoint is failing" in message, (name, status)
            items = await all_files(client)
            assert sorted(item["path"] for item in items) == text_files, name  # none lost
            for item in items:
                assert item["summary"] and item["status"] in ("stale", "annotated"), (name, item)
                if item["annotator"].startswith("structural/"):
                    assert item["status"] == "stale", (name, item)
            assert any(item["annotator"].startswith("structural/") for item in items), name
            fake.default = None  # the endpoint recovers: every file gets the model's annotation
            await wait_for_model_idle(client)
            items = await all_files(client)
            assert all(
                item["annotator"].startswith("model:") and item["status"] == "annotated" for item in items
            ), (
                name,
                [(item["path"], item["annotator"], item["status"]) for item in items],
            )
    finally:
        fake.default = None
        await stop_client(client)
