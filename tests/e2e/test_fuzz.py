"""End to end, generated traffic on both faces (bench/harness/fuzz_messages.py): every LSP method and
filescout command, every MCP tool, with well-formed but wrong params, broken JSON-RPC envelopes,
unreadable bodies and, on LSP's stdio, broken framing. One long-lived server per face; after
every batch it must be alive, have answered each request exactly once with the right kind of
answer (never -32603, never a traceback), and still answer a known-good request correctly
(bench/harness/fuzz_harness.py judges every reply). bench/fuzz_bench.py runs the same at scale."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harness.fuzz_harness import Fuzzer
from harness.fuzz_messages import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    NO_REPLY,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    Case,
    Expect,
    Face,
    IdKind,
    IdSlot,
    InRoot,
    PreviousId,
    RawFrames,
    batches,
    cursor_for,
    error,
    lsp_lifecycle,
    lsp_messages,
    mcp_messages,
    raw_frames,
    result,
)
from harness.support import make_workspace

REPLY_TIMEOUT = 30.0  # generous: only a hang should reach it


def fuzz(examples: int) -> settings:
    """Deterministic (the same messages on every run) and not shrunk: the server keeps state
    between examples, so a smaller replay would not mean the same."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


def start_fuzzer(face: Face, base: Path) -> Fuzzer:
    root = make_workspace(base / "ws", git=True)
    return Fuzzer(face, root, base / "cache", base / "stderr.log", reply_timeout=REPLY_TIMEOUT)


def assert_clean(problems: list[str]) -> None:
    assert not problems, "\n".join(problems)


def assert_no_traceback(fuzzer: Fuzzer) -> None:
    log = fuzzer.stderr_path.read_text(errors="replace")
    assert "Traceback" not in log, log[-5000:]


@pytest.fixture(scope="module")
def lsp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzer]:
    """`filescout serve`, not yet initialized."""
    fuzzer = start_fuzzer("lsp", tmp_path_factory.mktemp("fuzz-lsp"))
    yield fuzzer
    if fuzzer.wire.alive():
        fuzzer.wire.process.kill()
    fuzzer.wire.process.wait()


@pytest.fixture(scope="module")
def ready_lsp(lsp: Fuzzer) -> Fuzzer:
    if lsp.state == "uninitialized":
        lsp.initialize()
    return lsp


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzer]:
    """`filescout mcp`, initialized, its workspace indexed."""
    fuzzer = start_fuzzer("mcp", tmp_path_factory.mktemp("fuzz-mcp"))
    fuzzer.initialize()
    yield fuzzer
    if fuzzer.wire.alive():
        fuzzer.wire.process.kill()
    fuzzer.wire.process.wait()


# LSP: before initialize, serving, framing, then shutdown and exit (in this order)


@fuzz(25)
@given(batch=batches(lsp_messages(initialized=False), max_size=6))
def test_lsp_before_initialize_requests_get_minus_32002_or_an_envelope_error(
    lsp: Fuzzer, batch: list[Case]
) -> None:
    assert lsp.state == "uninitialized"
    assert_clean(lsp.run_batch(batch))


@fuzz(160)
@given(batch=batches(lsp_messages()))
def test_lsp_every_method_and_command(ready_lsp: Fuzzer, batch: list[Case]) -> None:
    assert_clean(ready_lsp.run_batch(batch))


@fuzz(250)
@given(frames=raw_frames())
def test_lsp_broken_framing_is_answered_and_the_reader_resynchronises(
    ready_lsp: Fuzzer, frames: RawFrames
) -> None:
    assert_clean(ready_lsp.run_frames(frames))


def request(method: str, params: object, expect: Expect | None = None) -> Case:
    body = {"jsonrpc": "2.0", "id": IdSlot(IdKind.STR), "method": method, "params": params}
    return Case(method, body, expect or error(INVALID_REQUEST), request=True)


def test_lsp_notifications_sent_as_requests_are_refused(ready_lsp: Fuzzer) -> None:
    """A notification with an id is a request no handler answers: refused with -32600, not
    left waiting (nor, for `exit`, acted upon)."""
    document = {
        "textDocument": {
            "uri": InRoot("README.md", uri=True),
            "languageId": "markdown",
            "version": 1,
            "text": "x",
        }
    }
    cases = [
        request("textDocument/didOpen", document),
        request("textDocument/didSave", {"textDocument": {"uri": InRoot("README.md", uri=True)}}),
        request("workspace/didChangeWatchedFiles", {"changes": []}),
        request("$/cancelRequest", {"id": 1}),
        request("exit", None),
        request("files/didAccess", {"paths": ["README.md"]}, result()),  # filescout's own: answered
    ]
    assert_clean(ready_lsp.run_batch(cases))


@pytest.mark.parametrize("arguments", [{}, "", {"paths": ["README.md"]}, "README.md"])
@pytest.mark.parametrize("command", ["filescout.status", "filescout.reindex", "filescout.annotate"])
def test_lsp_command_arguments_that_are_not_an_array_are_invalid_params(
    ready_lsp: Fuzzer, command: str, arguments: object
) -> None:
    """`arguments` is an array: an object used to be taken as the list of its keys and a
    string as the list of its characters (so `{}` and `""` ran the command)."""
    params = {"command": command, "arguments": arguments}
    assert_clean(ready_lsp.run_batch([request("workspace/executeCommand", params, error(INVALID_PARAMS))]))


@pytest.mark.parametrize("bad_id", [[], [1], {}, {"a": 1}, None, 1.5, True])
def test_lsp_a_cancel_request_for_no_id_is_ignored_without_a_traceback(
    ready_lsp: Fuzzer, bad_id: object
) -> None:
    """pygls looked the id up among the requests under way: a list or an object raised (once
    one was under way), and the log got a traceback for the client's mistake."""
    under_way = [
        request("workspace/executeCommand", {"command": "filescout.reindex"}, result(REQUEST_CANCELLED)),
        request("files/findRelevant", {"query": "shopping cart"}, result(REQUEST_CANCELLED)),
    ]
    params = {"id": bad_id}
    cancel = Case(
        "$/cancelRequest", {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": params}, NO_REPLY
    )
    assert_clean(ready_lsp.run_batch([*under_way, cancel, *under_way, cancel]))


@pytest.mark.parametrize(
    ("order", "position"),
    [
        ("path", [2**70]),
        ("recent", [1]),
        ("recent", [1, "a", 2]),
        ("recent", [2**63, "README.md"]),
        ("frecency", ["abc"]),
        ("frecency", [10**30]),
        ("rank", [-1]),
    ],
)
def test_lsp_a_forged_cursor_is_invalid_params(ready_lsp: Fuzzer, order: str, position: list[object]) -> None:
    """A cursor of the server's own form whose position has the wrong shape, or a number SQLite
    cannot hold, is refused naming the cursor (it was an internal error)."""
    params: dict[str, object] = {"cursor": cursor_for(order, position), "orderBy": order, "query": "cart"}
    reply = ready_lsp.request("files/getFiles", params)
    assert reply.get("error", {}).get("code") == INVALID_PARAMS, reply
    assert reply["error"]["message"].startswith("cursor:"), reply
    assert_clean(ready_lsp.run_batch([]))


@fuzz(10)
@given(batch=st.lists(lsp_lifecycle("shutdown"), min_size=1, max_size=4))
def test_lsp_a_broken_shutdown_does_not_shut_down(ready_lsp: Fuzzer, batch: list[Case]) -> None:
    assert_clean(ready_lsp.run_batch(batch))


@pytest.fixture(scope="module")
def shut_down_lsp(ready_lsp: Fuzzer) -> Fuzzer:
    reply = ready_lsp.request("shutdown", None)
    assert reply.get("result", "missing") is None, reply
    ready_lsp.state = "shut down"
    return ready_lsp


@fuzz(20)
@given(batch=batches(lsp_messages(), max_size=6))
def test_lsp_after_shutdown_requests_get_minus_32600(shut_down_lsp: Fuzzer, batch: list[Case]) -> None:
    assert_clean(shut_down_lsp.run_batch(batch))


@fuzz(10)
@given(batch=st.lists(lsp_lifecycle("exit"), min_size=1, max_size=4))
def test_lsp_a_broken_exit_does_not_exit(shut_down_lsp: Fuzzer, batch: list[Case]) -> None:
    assert_clean(shut_down_lsp.run_batch(batch))


def test_lsp_exit_after_all_that_is_clean(shut_down_lsp: Fuzzer) -> None:
    shut_down_lsp.wire.send({"jsonrpc": "2.0", "method": "exit"})
    assert shut_down_lsp.wire.process.wait(timeout=REPLY_TIMEOUT) == 0
    assert shut_down_lsp.findings.total == 0, shut_down_lsp.findings.examples
    assert shut_down_lsp.findings.messages >= 700 and shut_down_lsp.findings.frames >= 250  # the run ran
    assert_no_traceback(shut_down_lsp)


# MCP


@fuzz(180)
@given(batch=batches(mcp_messages()))
def test_mcp_every_tool_and_method(mcp: Fuzzer, batch: list[Case]) -> None:
    assert_clean(mcp.run_batch(batch))


def line(text: bytes, expect: Expect | None = None) -> Case:
    return Case("line", text, expect or error(PARSE_ERROR, null_id=True), "parse")


def with_id(body: dict[str, object], code: int) -> Case:
    return Case(f"{body}", {"jsonrpc": "2.0", "id": IdSlot(IdKind.INT), **body}, error(code), request=True)


def test_mcp_lines_the_sdk_would_drop_get_an_error_reply(mcp: Fuzzer) -> None:
    """The MCP SDK drops a line it cannot validate without a word: the client's request then
    waits for ever. Each of these is answered instead."""
    cases = [
        line(b"garbage"),
        line(b'{"jsonrpc": "2.0", "id": 1, "method": '),
        line(b"[1, 2]", error(INVALID_REQUEST, null_id=True)),
        line(b'{"jsonrpc": "2.0", "id": 1.0, "method": "ping"}', error(INVALID_REQUEST, null_id=True)),
        line(b'{"jsonrpc": "2.0", "id": "a\\ud800", "method": "ping"}', error(INVALID_REQUEST, null_id=True)),
        line(b'{"jsonrpc": "2.0", "method": "ping", "params": 5}', NO_REPLY),
        line(b"", NO_REPLY),
        line(b"\x1e"),  # not a blank: str.strip() said it was
        line(b"\x0c\x1c"),
        with_id({"method": "tools/call", "params": 5}, INVALID_REQUEST),
        with_id({"method": "tools/list", "params": [1]}, INVALID_PARAMS),
        with_id({"jsonrpc": "1.0", "method": "tools/list"}, INVALID_REQUEST),
        with_id({}, INVALID_REQUEST),
        with_id(
            {"method": "tools/call", "params": {"name": "list_files", "arguments": {"globs": ["\ud800"]}}},
            INVALID_PARAMS,
        ),
        with_id(
            {"method": "ping", "params": {"x": nested(300)}}, INVALID_PARAMS
        ),  # deeper than the SDK reads
    ]
    assert_clean(mcp.run_batch(cases))


def nested(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


def test_mcp_a_line_over_the_limit_is_skipped_unread(mcp: Fuzzer) -> None:
    too_long = (
        b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"x": "'
        + b"x" * (16 * 1024 * 1024)
        + b'"}}'
    )
    assert_clean(mcp.run_batch([line(too_long, error(INVALID_REQUEST, null_id=True))]))


def test_mcp_two_reindexes_at_once_both_answer(mcp: Fuzzer) -> None:
    """The first reindex's pass is replaced by the second's: it answers with that scan rather
    than with a cancellation, which used to end the whole MCP session."""
    call = {"method": "tools/call", "params": {"name": "reindex_workspace", "arguments": {}}}
    cases = [
        Case("reindex", {"jsonrpc": "2.0", "id": IdSlot(IdKind.INT), **call}, result(), request=True)
        for _ in range(3)
    ]
    for _ in range(3):
        assert_clean(mcp.run_batch(cases))


def test_mcp_cancelling_the_second_reindex_leaves_the_first_to_answer(mcp: Fuzzer) -> None:
    """The client cancels the second of two reindex calls: the first still answers (the
    cancellation used to reach it through the scan they share, and end the session)."""
    call = {"method": "tools/call", "params": {"name": "reindex_workspace", "arguments": {}}}
    first = Case(
        "first reindex", {"jsonrpc": "2.0", "id": IdSlot(IdKind.INT), **call}, result(), request=True
    )
    second = replace(first, label="second reindex")
    cancel = Case(
        "cancel the second",
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": PreviousId()}},
        NO_REPLY,
        targets_previous=True,
    )
    for _ in range(3):
        assert_clean(mcp.run_batch([first, second, cancel]))


def test_mcp_closing_stdin_after_all_that_exits_cleanly(mcp: Fuzzer) -> None:
    assert mcp.wire.close() == 0
    assert mcp.findings.total == 0, mcp.findings.examples
    assert mcp.findings.messages >= 600, mcp.findings  # the run ran
    assert_no_traceback(mcp)
