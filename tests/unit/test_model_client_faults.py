"""The model client in-process against the fake server misbehaving at the HTTP level: answers
that are not chat completions, a server that drips its answer, and the limits a caller with a
deadline (a findRelevant request) puts on waiting. Every failure must arrive as a ModelError."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from filescout.llm.client import Budget, Completion, ModelClient, ModelError, ModelUnavailable, ask
from filescout.relevance.judge import JudgeAnswer
from filescout_protocol.types import BudgetSettings, ModelSettings
from harness.fake_openai import Action, FakeOpenAI

QUESTION = [{"role": "system", "content": "You rate files."}, {"role": "user", "content": "Rate a.py."}]
GOOD = '{"files": [{"path": "a.py", "score": 7, "reason": "fine"}]}'


async def ask_once(
    model: ModelClient, *, deadline: float | None = None, retries: int | None = None
) -> Completion:
    """One call of QUESTION, as a user's request makes it (a deadline, few retries) or, without
    them, as background work does."""
    return await model.complete(
        QUESTION, schema={}, schema_name="x", max_output_tokens=10, deadline=deadline, retries=retries
    )


def completion(message: object, usage: object = None) -> str:
    """A chat completion's body holding `message`, as a server would send it."""
    body: dict[str, object] = {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message}],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


class Usage:
    """The budget's sink: every (calls, failures, input, output) it was told about."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, int]] = []

    async def __call__(self, day: str, calls: int, failures: int, tokens_in: int, tokens_out: int) -> None:
        self.rows.append((calls, failures, tokens_in, tokens_out))


@pytest.fixture
def usage() -> Usage:
    return Usage()


async def no_wait(seconds: float) -> None:
    """Backoff without the wait, for tests that only count the attempts."""


def make_client(
    fake: FakeOpenAI, usage: Usage, sleep: Any = asyncio.sleep, **settings: object
) -> ModelClient:
    options = {"model": "test-model", "base_url": fake.base_url, "max_retries": 0, **settings}
    return ModelClient(ModelSettings(**options), Budget(BudgetSettings(), [], usage), sleep=sleep)  # type: ignore[arg-type]


@pytest.fixture
async def client(fake: FakeOpenAI, usage: Usage) -> AsyncIterator[ModelClient]:
    model = make_client(fake, usage)
    yield model
    await model.close()


@pytest.mark.parametrize(
    "body",
    [
        '{"choices": [{}]}',  # a choice without a message
        '{"choices": [{"message": null}]}',
        completion({"role": "assistant", "content": 5}),  # content that is not text
        completion({"role": "assistant", "content": ["a", "b"]}),
        '{"choices": "none"}',
        "[1, 2]",  # JSON, but not an object
        '"hello"',
        "null",
        "this is not JSON",
        '{"id": "x", "choices": [{"index": 0, "message": {"role": "assist',  # cut short
    ],
)
async def test_an_answer_that_is_not_a_completion_is_a_model_error(
    client: ModelClient, fake: FakeOpenAI, usage: Usage, body: str
) -> None:
    fake.default = Action(body=body)
    with pytest.raises(ModelUnavailable, match="model call failed"):
        await ask(client, QUESTION, JudgeAnswer, name="judgement", max_output_tokens=100)
    assert fake.calls() == 1  # not retried: the endpoint answered, with nonsense
    assert client.breaker.failures == 1 and usage.rows == [(0, 1, 0, 0)]


@pytest.mark.parametrize(
    "usage_block",
    [
        {"prompt_tokens": "many", "completion_tokens": None},
        {"prompt_tokens": -1_000_000, "completion_tokens": -5},
        {"prompt_tokens": 1.5, "completion_tokens": True},
    ],
)
async def test_token_counts_that_cannot_be_true_are_estimated(
    client: ModelClient, fake: FakeOpenAI, usage: Usage, usage_block: dict[str, object]
) -> None:
    fake.default = Action(body=completion({"role": "assistant", "content": GOOD}, usage_block))
    answer = await ask(client, QUESTION, JudgeAnswer, name="judgement", max_output_tokens=100)
    assert answer.value.files[0].path == "a.py"
    ((calls, failures, tokens_in, tokens_out),) = usage.rows
    assert (calls, failures) == (1, 0)
    assert isinstance(tokens_in, int) and tokens_in > 0  # estimated from what was sent
    assert isinstance(tokens_out, int) and tokens_out > 0  # estimated from the answer
    assert client.budget.tokens_today == tokens_in + tokens_out


async def test_a_dripping_answer_is_cut_at_the_timeout(fake: FakeOpenAI, usage: Usage) -> None:
    # Each byte arrives well within the HTTP client's read timeout; the whole would take minutes.
    model = make_client(fake, usage, timeout=0.5)
    fake.default = Action(fault="drip")
    try:
        with pytest.raises(ModelUnavailable, match=r"no answer within 0\.5 s"):
            await ask(model, QUESTION, JudgeAnswer, name="judgement", max_output_tokens=100)
        assert fake.calls() == 1 and model.breaker.failures == 1
    finally:
        await model.close()


@pytest.mark.parametrize("fault", ["drop", "truncate"])
async def test_a_connection_lost_mid_answer_is_retried(fake: FakeOpenAI, usage: Usage, fault: str) -> None:
    model = make_client(fake, usage, sleep=no_wait, max_retries=1)
    fake.script.append(Action(fault=fault))  # type: ignore[arg-type]
    fake.default = Action(body=completion({"role": "assistant", "content": GOOD}))
    try:
        answer = await ask(model, QUESTION, JudgeAnswer, name="judgement", max_output_tokens=100)
        assert answer.value.files[0].score == 7 and fake.calls() == 2
    finally:
        await model.close()


async def test_a_caller_with_a_deadline_does_not_wait_out_a_long_retry_after(
    fake: FakeOpenAI, usage: Usage
) -> None:
    model = make_client(fake, usage, max_retries=4)
    fake.default = Action(status=429, headers={"Retry-After": "60"})
    try:
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match="429"):
            await ask_once(model, deadline=started + 5, retries=1)
        assert fake.calls() == 1  # the wait asked for ends after the deadline: given up at once
    finally:
        await model.close()


async def test_a_caller_with_a_deadline_does_not_retry_a_timeout(fake: FakeOpenAI, usage: Usage) -> None:
    model = make_client(fake, usage, max_retries=4, timeout=0.3)
    fake.default = Action(fault="hang")
    try:
        with pytest.raises(ModelUnavailable, match="no answer within"):
            await ask_once(
                model,
                deadline=time.monotonic() + 30,
                retries=1,
            )
        assert fake.calls() == 1
    finally:
        await model.close()


async def test_a_caller_with_a_deadline_retries_a_quick_failure_once(fake: FakeOpenAI, usage: Usage) -> None:
    model = make_client(fake, usage, max_retries=4)
    fake.default = Action(status=503, headers={"Retry-After": "0.05"})
    try:
        with pytest.raises(ModelUnavailable, match="503"):
            await ask_once(
                model,
                deadline=time.monotonic() + 30,
                retries=1,
            )
        assert fake.calls() == 2  # one retry, not the four of background work
    finally:
        await model.close()


async def test_a_caller_with_a_deadline_does_not_queue_past_it(fake: FakeOpenAI, usage: Usage) -> None:
    # Background calls hold every slot (a hung endpoint); a request's call gives up at its
    # deadline instead of queueing behind them.
    model = make_client(fake, usage, concurrency=1, timeout=30)
    fake.default = Action(fault="hang")
    try:
        background = asyncio.create_task(ask_once(model))
        while fake.calls() == 0:
            await asyncio.sleep(0.01)
        with pytest.raises(ModelError, match="busy with other calls"):
            await ask_once(
                model,
                deadline=time.monotonic() + 0.3,
            )
        assert fake.calls() == 1
        background.cancel()
        await asyncio.gather(background, return_exceptions=True)
    finally:
        await model.close()


async def test_a_call_waiting_out_a_retry_after_holds_no_slot(fake: FakeOpenAI, usage: Usage) -> None:
    # A background call told to come back in a minute must not keep a request's call waiting.
    model = make_client(fake, usage, concurrency=1, max_retries=2)
    fake.script.append(Action(status=429, headers={"Retry-After": "60"}))
    fake.default = Action(body=completion({"role": "assistant", "content": GOOD}))
    try:
        background = asyncio.create_task(ask_once(model))
        while fake.calls() == 0:
            await asyncio.sleep(0.01)
        answer = await ask_once(model, deadline=time.monotonic() + 10)
        assert answer.text == GOOD and fake.calls() == 2 and not background.done()
        background.cancel()
        await asyncio.gather(background, return_exceptions=True)
    finally:
        await model.close()


async def test_a_long_wait_before_a_retry_is_said(fake: FakeOpenAI, usage: Usage) -> None:
    model = make_client(fake, usage, max_retries=2)
    fake.script.append(Action(status=429, headers={"Retry-After": "60"}))
    try:
        assert model.retry_note() is None
        background = asyncio.create_task(ask_once(model))
        while model.retry_note() is None:
            assert not background.done()
            await asyncio.sleep(0.01)
        assert (
            model.retry_note()
            == "model call failed (429 Error code: 429 - scripted 429); trying again in 60 s"
        )
        background.cancel()
        await asyncio.gather(background, return_exceptions=True)
    finally:
        await model.close()


def closed_port() -> str:
    """A base URL on this machine where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class Waits:
    """The backoff's waits, counted and skipped."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


@pytest.mark.parametrize("one_shot", [False, True])
async def test_a_one_shot_command_does_not_wait_for_an_endpoint_nothing_listens_on(
    fake: FakeOpenAI, usage: Usage, one_shot: bool
) -> None:
    waits = Waits()
    settings = ModelSettings(model="test-model", base_url=closed_port(), max_retries=4)
    model = ModelClient(settings, Budget(BudgetSettings(), [], usage), sleep=waits, one_shot=one_shot)
    try:
        with pytest.raises(ModelUnavailable, match="Connection error: "):
            await ask_once(model)
        # A server keeps trying (the endpoint may be starting); a terminal is not kept waiting.
        assert len(waits.seconds) == (0 if one_shot else 4)
        reason = model.unavailable_reason()
        if one_shot:
            assert reason is not None and reason.startswith(
                "the model endpoint is failing (Connection error: "
            )
        else:
            assert reason is None  # one failed call in a row: the breaker waits for three
    finally:
        await model.close()


async def test_a_one_shot_command_gives_up_after_the_first_call_that_fails(
    fake: FakeOpenAI, usage: Usage
) -> None:
    waits = Waits()
    fake.default = Action(status=503)
    settings = ModelSettings(model="test-model", base_url=fake.base_url, max_retries=2)
    model = ModelClient(settings, Budget(BudgetSettings(), [], usage), sleep=waits, one_shot=True)
    try:
        with pytest.raises(ModelUnavailable, match="503"):
            await ask_once(model)
        assert fake.calls() == 3 and len(waits.seconds) == 2  # a live server's 503 is retried
        with pytest.raises(ModelUnavailable, match="circuit open"):
            await ask_once(model)
        assert fake.calls() == 3
        assert (
            model.unavailable_reason() == "the model endpoint is failing (503 Error code: 503 - scripted 503)"
        )
    finally:
        await model.close()
