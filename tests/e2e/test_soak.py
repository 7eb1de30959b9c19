"""End to end, a compressed soak: a few hundred edit/save/question cycles, with files created,
renamed and deleted behind the editor's back and a reindex now and then, against the server as a
subprocess. Whatever a cycle opens (SQLite statements, scan threads, git or file handles, tasks)
must be given back: once the server is idle again, its open file descriptors are where they were
after a warm-up of the same cycles, its threads within what the index and the executor's pool
keep, its memory has not run away, and no request was answered with an error. A second test
types thousands of changes: notifications must leave nothing behind. bench/soak_bench.py runs
the long version and reports figures."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from harness.procfs import ProcessSample, sample_process
from harness.support import (
    as_dict,
    execute,
    make_large_workspace,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
)

WARM_UP_CYCLES = 40
CYCLES = 300
REINDEX_EVERY = 30
RSS_ALLOWANCE_MB = 30  # generous: 300 cycles added 4 to 6 MB
POOL_THREADS = min(32, (os.cpu_count() or 1) + 4)
"""asyncio's default executor starts threads as work overlaps, up to this many, and keeps them."""
TRANSIENT_THREADS = 4
"""Threads that come and go with the work, never more of them: the worker processes' pool keeps
a manager thread, a queue feeder and an idle timer here until it has been idle a while, and the
frame reader's pool may hold a second thread."""
QUESTIONS = [
    "where is the shopping cart discount applied",
    "payment gateway refunds",
    "helper value unit",
    "checkout form address validation",
    "deploy script",
]


class Cycles:
    """One developer's cycle, numbered: every request it sends must be answered without error."""

    def __init__(self, client: Any, root: Path) -> None:
        self.client = client
        self.root = root
        self.edited = sorted(root.glob("pkg*/mod*/unit_*.py"))[:30]
        self.created: list[Path] = []

    async def run(self, first: int, count: int) -> None:
        for number in range(first, first + count):
            self.edit(number)
            await self.question(number)
            if number % 3 == 0:
                await self.page(number)
            if number % 7 == 0:
                self.watched(number)
            if number % REINDEX_EVERY == REINDEX_EVERY // 2:
                await execute(self.client, "filescout.reindex")

    def edit(self, number: int) -> None:
        path = self.edited[number % len(self.edited)]
        uri = path.as_uri()
        text = path.read_text()
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
        )
        text += f"\ndef edited_{number}(value):\n    return value + {number}\n"
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(2, uri),
                [types.TextDocumentContentChangeWholeDocument(text)],
            )
        )
        path.write_text(text)
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
        )

    async def question(self, number: int) -> None:
        params = {"query": QUESTIONS[number % len(QUESTIONS)], "limit": 10}
        if number % 2:
            params["partialResultToken"] = f"soak-{number}"
        await self.client.protocol.send_request_async("files/findRelevant", params)
        self.client.partial_results.pop(f"soak-{number}", None)

    async def page(self, number: int) -> None:
        filters = [{}, {"kinds": ["source"]}, {"globs": ["*.py"], "orderBy": "recent"}, {"query": "helper"}]
        await self.client.protocol.send_request_async(
            "files/getFiles", {"limit": 50, **filters[number % len(filters)]}
        )

    def watched(self, number: int) -> None:
        """Create a file; every other time, rename or delete one created before."""
        changes = []
        path = self.root / "pkg0" / f"added_{number}.py"
        path.write_text(f'"""Added in cycle {number}."""\n\ndef added_{number}():\n    return {number}\n')
        self.created.append(path)
        changes.append(types.FileEvent(path.as_uri(), types.FileChangeType.Created))
        if number % 2 and len(self.created) > 1:
            old = self.created.pop(0)
            if number % 4 == 1:
                new = old.with_name(f"renamed_{old.name}")
                old.rename(new)
                self.created.append(new)
                changes.append(types.FileEvent(new.as_uri(), types.FileChangeType.Created))
            else:
                old.unlink()
            changes.append(types.FileEvent(old.as_uri(), types.FileChangeType.Deleted))
        self.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes))


async def settled(client: Any) -> ProcessSample:
    """Wait until the index is idle with nothing queued, then, a moment later (a thread or
    descriptor still on its way out is not counted), read the server's figures."""
    for _ in range(600):
        status = as_dict(await execute(client, "filescout.status"))
        if status["phase"] == "idle" and status["queued"] == 0:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"the server did not become idle: {status}")
    assert status["lastError"] is None, status
    await asyncio.sleep(0.5)
    figures = sample_process(client._server.pid)
    assert figures is not None, "the server is gone"
    return figures


@pytest.mark.timeout(240)
async def test_soak_gives_back_descriptors_and_threads(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=True)
    make_large_workspace(root, 120, grow=False)
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        initial = await settled(client)
        cycles = Cycles(client, root)
        await cycles.run(0, WARM_UP_CYCLES)
        baseline = await settled(client)
        await cycles.run(WARM_UP_CYCLES, CYCLES)
        after = await settled(client)
    finally:
        await stop_client(client)
    assert after.fds <= baseline.fds, (baseline, after)
    # Threads come back to what the index needs, plus the executor's pool and the threads that
    # come and go with the work: a thread left behind by a reindex, a save or a question would be
    # 10, 300 or 300 more than that.
    ceiling = initial.threads + POOL_THREADS + TRANSIENT_THREADS
    assert after.threads <= ceiling, (initial, baseline, after)
    assert after.rss_mb <= baseline.rss_mb + RSS_ALLOWANCE_MB, (baseline, after)
    assert client.error is None
    assert [m.message for m in client.log_messages if m.type == types.MessageType.Error] == []


NOTIFIED_FILES = 20
CHANGES = 9000
CHANGES_ALLOWANCE_MB = 8  # what pygls kept of each one came to 24 MB


async def notify_changes(client: Any, paths: list[Path], first: int, count: int) -> None:
    """Typing in open files: a didChange for each keystroke. Every 50, wait for the server to
    have handled them (it reads in order, so a request's reply comes after them): what is
    measured is then what stays behind, not what was in flight."""
    for number in range(first, first + count):
        if number % 50 == 0:
            await client.protocol.send_request_async("files/getFiles", {"limit": 1})
        uri = paths[number % len(paths)].as_uri()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(number + 2, uri),
                [
                    types.TextDocumentContentChangeWholeDocument(
                        f"def typed_{number}():\n    return {number}\n"
                    )
                ],
            )
        )


@pytest.mark.timeout(240)
async def test_notifications_leave_no_memory_behind(tmp_path: Path) -> None:
    root = make_large_workspace(tmp_path / "ws", NOTIFIED_FILES, grow=False)
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        paths = sorted(root.rglob("*.py"))
        for path in paths:
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(path.as_uri(), "python", 1, ""))
            )
        await notify_changes(client, paths, 0, CHANGES // 5)
        baseline = await settled(client)
        await notify_changes(client, paths, CHANGES // 5, CHANGES)
        after = await settled(client)
    finally:
        await stop_client(client)
    grown_mb = after.rss_mb - baseline.rss_mb
    assert grown_mb < CHANGES_ALLOWANCE_MB, (baseline, after)
