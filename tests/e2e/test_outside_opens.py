"""The server under strace while links flip in and out of the workspace: it never opens a file
outside the root, whatever it was doing when a link moved (a scan's stat then read, a save, an
opened file's annotation and imports, filescout.annotate), and no outside file's words reach
the index. strace missing skips these tests on a developer's machine and fails them on CI."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types

from harness.outside_opens import (
    SECRET_WORDS,
    flip,
    flip_while_asked,
    make_flipping_workspace,
    opened_below,
    opened_outside,
    secret_words_in_index,
    strace_missing,
    traced_command,
)
from harness.support import as_dict, execute, start_client, stop_client, wait_for_indexing
from mounts import on_ci

FLIPS = 300
FLIP_INTERVAL = 0.05  # seconds: 300 flips in about 15 s


@pytest.fixture
def strace_log(tmp_path: Path) -> Path:
    missing = strace_missing()
    if missing is not None:
        if on_ci():
            pytest.fail(missing, pytrace=False)
        pytest.skip(missing)
    return tmp_path / "opens.strace"


async def test_flipped_links_never_get_a_file_outside_opened(tmp_path: Path, strace_log: Path) -> None:
    where = make_flipping_workspace(tmp_path, git=False)
    client = await start_client(where.root, tmp_path / "cache", command=traced_command(strace_log))
    try:
        await wait_for_indexing(client, timeout=120)
        flipper, rounds, db = await flip_while_asked(client, where, FLIPS, FLIP_INTERVAL)
        assert flipper.errors == [] and flipper.done == FLIPS and rounds >= 10  # the client kept at it
        found = as_dict(
            await client.protocol.send_request_async("files/findRelevant", {"query": " ".join(SECRET_WORDS)})
        )
    finally:
        await stop_client(client)
    assert opened_below(strace_log, where.root).get("filescout")  # the log shows the opens it makes
    assert opened_outside(strace_log, where.outside) == {}
    assert secret_words_in_index(db) == []
    assert [item["path"] for item in found.get("items", [])] == []


async def test_opened_and_annotated_links_retargeted_outside_are_not_read(
    tmp_path: Path, strace_log: Path
) -> None:
    """didOpen, files/didAccess and filescout.annotate of an indexed link that now leads out
    (no race needed: the scan saw it inside)."""
    where = make_flipping_workspace(tmp_path, git=False)
    client = await start_client(where.root, tmp_path / "cache", command=traced_command(strace_log))
    try:
        await wait_for_indexing(client, timeout=120)
        flip(where, outward=True)  # link.py and pkg lead out now; the index does not know it yet
        uri = (where.root / "link.py").as_uri()
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text="")
            )
        )
        client.protocol.notify("files/didAccess", {"paths": ["link.py", "pkg/mod.py"]})
        await execute(client, "filescout.annotate", {"paths": ["link.py", "pkg/mod.py"], "timeout": 2})
        await asyncio.sleep(0.5)
    finally:
        await stop_client(client)
    assert opened_below(strace_log, where.root).get("filescout")  # the log shows the opens it makes
    assert opened_outside(strace_log, where.outside) == {}
