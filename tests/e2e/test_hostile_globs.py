"""End to end, globs and ignore patterns built to be costly: patterns a backtracking matcher runs
for seconds on, in a request, in the settings, in .gitignore and .filescoutignore; and a listing
that matches thousands of long paths against a hundred long globs, which must leave the server
answering and stop when cancelled."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from harness.procfs import cpu_seconds
from harness.support import TestClient, as_dict, execute, start_client, stop_client, wait_for_indexing

BACKTRACKING = {
    "*a*a*a*a*a*a*a*a*a*a*b": "a" * 40,  # 19 s with a backtracking matcher
    "**/**/**/**/*a*a*a*a*a*b": "a" * 110,  # 4.4 s
}
ANSWER_WITHIN = 5.0
"""Seconds: generous for an answer, less than a backtracking match of one name took."""


async def get_files(client: TestClient, params: dict) -> dict:
    return as_dict(await client.protocol.send_request_async("files/getFiles", params))


async def stop_or_kill(client: TestClient) -> None:
    """Stop the server; kill it if it is too busy to stop (a matcher that backtracks)."""
    try:
        await asyncio.wait_for(stop_client(client), 20)
    except (asyncio.TimeoutError, JsonRpcException):
        client._server.kill()
        await client.stop()


async def test_backtracking_patterns_in_requests_settings_and_ignore_files_cost_nothing(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "sub").mkdir()
    for name in BACKTRACKING.values():
        for directory in (root, root / "sub"):
            (directory / name).write_text("kept\n")
            (directory / f"{name}b").write_text("ignored\n")
    (root / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*b\n")
    (root / ".filescoutignore").write_text("**/**/**/**/*a*a*a*a*a*b\n")
    client = await start_client(
        root, tmp_path / "cache", init_options={"exclude": list(BACKTRACKING), "include": ["sub/"]}
    )
    try:
        await wait_for_indexing(client, timeout=30)
        everything = await get_files(client, {})
        assert sorted(item["path"] for item in everything["items"]) == sorted(
            [".filescoutignore", ".gitignore", *BACKTRACKING.values()]
            + [f"sub/{name}" for name in BACKTRACKING.values()]
            + [f"sub/{name}b" for name in BACKTRACKING.values()]  # re-included by `include`
        )
        for glob, name in BACKTRACKING.items():
            started = time.monotonic()
            page = await asyncio.wait_for(get_files(client, {"globs": [glob]}), ANSWER_WITHIN)
            assert time.monotonic() - started < ANSWER_WITHIN
            assert sorted(item["path"] for item in page["items"]) == sorted(
                f"sub/{kept}b" for kept in BACKTRACKING.values()
            )
            page = await asyncio.wait_for(get_files(client, {"globs": [f"!{glob}"]}), ANSWER_WITHIN)
            assert name in {item["path"] for item in page["items"]}
    finally:
        await stop_or_kill(client)


HOSTILE_GLOBS = [("*a*b?" * 205)[:1020] + f"c{index:02d}" for index in range(100)]
"""A hundred globs of 1,020 characters (the most a request may name): each path costs RE2 a few
milliseconds against them."""


def long_paths(root: Path, files: int) -> None:
    """Files at the end of fourteen directories with 250-character names: paths of 3,764
    characters, random enough that RE2's automaton keeps meeting new states."""
    rng = random.Random(7)
    directory = root.joinpath(*("".join(rng.choice("ab") for _ in range(250)) for _ in range(14)))
    directory.mkdir(parents=True)
    for _ in range(files):
        (directory / "".join(rng.choice("ab") for _ in range(250))).write_text("x\n")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the server's CPU time in /proc")
async def test_a_costly_listing_leaves_the_server_answering_and_stops_when_cancelled(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    long_paths(root, 2000)
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client, timeout=120)
        request = asyncio.ensure_future(
            client.protocol.send_request_async(
                "files/getFiles", {"globs": HOSTILE_GLOBS, "limit": 10}, msg_id="costly"
            )
        )
        await asyncio.sleep(1.0)
        started = time.monotonic()
        status = as_dict(await asyncio.wait_for(execute(client, "filescout.status"), ANSWER_WITHIN))
        assert status["files"] == 2000
        assert time.monotonic() - started < 2.0, "a status waited for the listing"
        assert not request.done(), "the listing ended too soon to tell"

        client.protocol.notify("$/cancelRequest", types.CancelParams(id="costly"))
        with pytest.raises(JsonRpcException) as caught:
            await asyncio.wait_for(request, ANSWER_WITHIN)
        assert caught.value.code == -32800
        pid = client._server.pid
        before = cpu_seconds(pid)
        await asyncio.sleep(2.0)
        assert cpu_seconds(pid) - before < 0.5, "the cancelled listing went on matching"
        page = await asyncio.wait_for(get_files(client, {"limit": 1}), ANSWER_WITHIN)
        assert len(page["items"]) == 1
    finally:
        await stop_or_kill(client)
