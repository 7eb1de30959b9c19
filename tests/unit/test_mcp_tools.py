"""The MCP face's own reading of answers: how many files a prompt-ready block shows (the
structured content carries those and no more), errors in the tools' argument names, and the
boundary that keeps the SDK's cancellation its own."""

from __future__ import annotations

import asyncio

import pytest

from filescout.engine.prompt import Listed, render
from filescout.mcp.server import Interrupted, apart
from filescout.mcp.tools import TOOL_SPECS, ArgumentNames, shown_in


@pytest.mark.parametrize("tokens", [200, 260, 400, 800, 4000])
def test_shown_in_counts_the_files_a_block_shows(tokens: int) -> None:
    items = [
        Listed(
            f"src/{n}. tricky/2. name_{n}.py",  # a path that looks like a numbered line
            f"1. a summary that starts like an entry, number {n}; " * (n % 3 + 1),
            f"why {n}: 3. matches",
        )
        for n in range(1, 30)
    ]
    block = render("Request: 12. where is the cart", items, tokens=tokens)
    shown = shown_in(block)
    assert [f"{n}. {item.path}" in block for n, item in enumerate(items, 1)] == [
        n <= shown for n in range(1, len(items) + 1)
    ]
    if shown < len(items):
        assert f"{len(items) - shown} more files did not fit in {tokens} tokens" in block


def test_shown_in_an_empty_answer() -> None:
    assert shown_in(render("Files listed:", [], tokens=200)) == 0


def test_argument_names_replace_the_engines_names_only() -> None:
    names = ArgumentNames({"scope.paths": "paths", "orderBy": "order_by"})
    assert (
        names("scope.paths[0]: '../x' is outside the workspace")
        == "paths[0]: '../x' is outside the workspace"
    )
    assert (
        names("cursor: it continues a listing ordered by 'path', not 'recent'; pass the same orderBy")
        == "cursor: it continues a listing ordered by 'path', not 'recent'; pass the same order_by"
    )
    assert names("orderBy: `rank` orders by a text query") == "order_by: `rank` orders by a text query"
    # What the caller sent is shown as it was sent, even if it reads like a field's name.
    assert names("paths[0]: 'scope.paths' is outside") == "paths[0]: 'scope.paths' is outside"
    assert names('paths[0]: "it\'s orderBy" is outside') == 'paths[0]: "it\'s orderBy" is outside'
    assert names("a.orderBy or orderByX stay") == "a.orderBy or orderByX stay"
    assert ArgumentNames({})("scope.paths[0]: x") == "scope.paths[0]: x"


def test_every_tool_argument_a_name_stands_for_exists() -> None:
    for spec in TOOL_SPECS:
        for argument in spec.arguments._names.values():
            assert argument in spec.input.__struct_fields__, (spec.name, argument)


async def test_apart_raises_the_very_cancellation_it_was_given() -> None:
    started = asyncio.Event()
    stopped: list[str] = []

    async def work() -> None:
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            stopped.append("work")
            raise asyncio.CancelledError from None  # a new one, as careless code does

    caller = asyncio.ensure_future(apart(work()))
    await started.wait()
    caller.cancel("Cancelled via cancel scope 1234")
    with pytest.raises(asyncio.CancelledError) as raised:
        await caller
    assert raised.value.args == ("Cancelled via cancel scope 1234",)
    assert stopped == ["work"]


async def test_apart_turns_a_cancellation_of_the_works_own_into_an_error() -> None:
    async def work() -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.cancel()  # something it waited on was cancelled; the caller was not
        await future

    with pytest.raises(Interrupted):
        await apart(work())


async def test_apart_waits_for_the_work_to_stop() -> None:
    finished: list[str] = []

    async def work() -> str:
        try:
            await asyncio.sleep(10)
        finally:
            await asyncio.sleep(0.05)  # cleaning up after the cancellation
            finished.append("cleaned up")
        return "never"

    caller = asyncio.ensure_future(apart(work()))
    await asyncio.sleep(0.01)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert finished == ["cleaned up"]
    assert await apart(asyncio.sleep(0, result="answer")) == "answer"
