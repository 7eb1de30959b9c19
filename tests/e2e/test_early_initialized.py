"""A client that sends `initialized` before the answer to `initialize` has come (the spec says to
wait; some clients pipeline it) gets a working server, not "cannot index this workspace: None"."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from harness import launch, wire
from harness.support import make_workspace


async def test_initialized_sent_before_the_initialize_answer_is_waited_for(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    process = await launch.spawn(launch.SERVE, launch.server_env(tmp_path / "cache"))
    assert process.stdin is not None and process.stdout is not None
    try:
        params = {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}}
        process.stdin.write(wire.encode(wire.jsonrpc_message("initialize", params, 1)))
        process.stdin.write(wire.encode(wire.jsonrpc_message("initialized", {})))
        said: list[str] = []
        page = None
        while page is None:
            received = await asyncio.wait_for(wire.receive(process.stdout), 60)
            assert received is not None, "the server closed its output"
            _, message = received
            if message.get("method") == "window/showMessage":
                said.append(message["params"]["message"])
            elif message.get("id") == 1:  # initialize answered: now ask something
                request = wire.jsonrpc_message("files/getFiles", {"limit": 100}, 2)
                process.stdin.write(wire.encode(request))
            elif message.get("id") == 2:
                page = message
        assert not any("cannot index" in text for text in said), said
        assert "result" in page, page
    finally:
        process.kill()
        await process.wait()
