"""End to end, many requests at once over LSP: a status sent behind a burst of heavy requests
(questions, large listings) is answered before most of them, since heavy work takes turns
(engine/admission.py) and cheap requests never wait for one; a heavy request cancelled while it
waits for its turn is answered as cancelled and gives its place up. Orderings only, no clock: which
reply came first is what the policy decides, how long each took is the machine's business. At
the end, the gate's own bookkeeping in process: who holds a place and who waits, step by step."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from filescout.engine.admission import Admission
from harness.support import (
    TestClient,
    as_dict,
    make_large_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILES = 1500
HEAVY = 40
QUESTIONS = (
    "helper value of the sample unit",
    "which module returns value plus one",
    "unit of the sample with helpers",
    "pkg mod helper function",
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_large_workspace(tmp_path_factory.mktemp("burst") / "ws", FILES, grow=False)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(workspace: Path, tmp_path_factory: pytest.TempPathFactory):
    client = await start_client(workspace, tmp_path_factory.mktemp("cache"))
    await wait_for_indexing(client, timeout=120)
    yield client
    await stop_client(client)


def heavy_request(number: int) -> tuple[str, dict[str, Any]]:
    """Alternately a large page of getFiles and a model-free question."""
    if number % 2:
        return "files/getFiles", {"limit": 500, "orderBy": "recent" if number % 4 == 1 else "path"}
    return "files/findRelevant", {"query": QUESTIONS[number // 2 % len(QUESTIONS)], "limit": 20}


def send(
    client: TestClient, arrivals: list[str], name: str, method: str, params: Any, msg_id: str | None = None
) -> asyncio.Future[Any]:
    """Send a request now, in order with the others (pytest-lsp's own `send_request_async` sends
    only once its coroutine runs); `name` goes into `arrivals` when the reply comes."""
    future = asyncio.wrap_future(client.protocol.send_request(method, params, msg_id=msg_id))
    future.add_done_callback(lambda _: arrivals.append(name))
    return future


async def test_a_status_behind_a_burst_of_heavy_requests_answers_before_most_of_them(
    client: TestClient,
) -> None:
    arrivals: list[str] = []
    heavy = [send(client, arrivals, f"h{n}", *heavy_request(n)) for n in range(HEAVY)]
    status_params = types.ExecuteCommandParams(command="filescout.status")
    status = send(client, arrivals, "status", types.WORKSPACE_EXECUTE_COMMAND, status_params)
    page = send(client, arrivals, "page", "files/getFiles", {"limit": 100})
    await asyncio.gather(*heavy, status, page)
    assert as_dict(status.result())["files"] == FILES
    assert len(as_dict(page.result())["items"]) == 100
    assert all(as_dict(reply.result())["items"] for reply in heavy)
    assert arrivals.index("status") < HEAVY // 2, arrivals
    assert arrivals.index("page") < HEAVY // 2, arrivals


async def test_a_cancelled_queued_request_is_answered_as_cancelled_and_gives_its_place_up(
    client: TestClient,
) -> None:
    arrivals: list[str] = []
    ahead = [send(client, arrivals, f"h{n}", *heavy_request(n)) for n in range(1, HEAVY, 2)]  # listings
    queued = send(client, arrivals, "queued", *heavy_request(HEAVY + 1), msg_id="queued")
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="queued"))
    with pytest.raises(JsonRpcException) as caught:
        await queued
    assert caught.value.code == -32800
    await asyncio.gather(*ahead)
    # When the cancel is read (and so where its reply falls among the replies to the cheap
    # listings ahead) is the reading thread's turn for the interpreter: no ordering is asserted.

    # Every place is free again: more heavy requests than any machine admits at once, all
    # answered (a place kept by the cancelled request would leave the last ones waiting).
    after = [send(client, arrivals, f"after{n}", *heavy_request(n)) for n in range(12)]
    assert all(as_dict(reply)["items"] for reply in await asyncio.gather(*after))


# The gate itself, in process: who holds a place and who waits, step by step.


async def holder(gate: Admission, entered: list[str], name: str, leave: asyncio.Event) -> None:
    async with gate.heavy():
        entered.append(name)
        await leave.wait()


async def settle() -> None:
    """Let every task that can run take its steps (a handful of loop turns)."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_the_gate_admits_in_order_and_cancelled_waiters_leave_no_place_behind() -> None:
    gate = Admission(2)
    entered: list[str] = []
    leave = {name: asyncio.Event() for name in "abcdef"}
    tasks = {name: asyncio.ensure_future(holder(gate, entered, name, leave[name])) for name in "abcde"}
    await settle()
    assert entered == ["a", "b"] and (gate.running, gate.waiting) == (2, 3)

    tasks["d"].cancel()  # cancelled while it waits: out of the queue at once
    await settle()
    assert tasks["d"].cancelled() and (gate.running, gate.waiting) == (2, 2)

    leave["a"].set()  # a's place goes to c, the first in line
    await settle()
    assert entered == ["a", "b", "c"] and (gate.running, gate.waiting) == (2, 1)

    leave["b"].set()  # b's place goes to e, which is cancelled before it can take it
    await asyncio.sleep(0)
    tasks["e"].cancel()
    await settle()
    assert tasks["e"].cancelled() and "e" not in entered
    assert (gate.running, gate.waiting) == (1, 0), "the place handed to e was not passed on"

    leave["c"].set()
    await settle()
    assert (gate.running, gate.waiting) == (0, 0)
    tasks["f"] = asyncio.ensure_future(holder(gate, entered, "f", leave["f"]))
    await settle()
    assert entered[-1] == "f" and gate.running == 1
    leave["f"].set()
    await asyncio.gather(*(task for name, task in tasks.items() if name not in "de"))
    assert gate.running == 0


async def test_a_stream_admitted_through_its_first_item_gives_its_place_back_after_it() -> None:
    gate = Admission(1)
    resume = asyncio.Event()

    async def stages() -> Any:
        yield "lexical"
        await resume.wait()  # what a model stage waits on
        yield "final"

    stream = gate.admitted(stages(), through_first=True)
    assert await anext(stream) == "lexical"
    assert gate.running == 1
    waiting = asyncio.ensure_future(anext(stream))
    await settle()
    assert gate.running == 0, "the place was kept while the stream waited on something else"
    resume.set()
    assert await waiting == "final"
    await stream.aclose()
    assert gate.running == 0
