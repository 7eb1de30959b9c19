"""Drives one face of the server (`filescout serve` or `filescout mcp`, a real subprocess on
stdio) with generated messages (fuzz_messages.py) and judges every answer: the server stays
alive, each request gets exactly one reply within a bound, malformed input gets an error reply
with the right code, no reply is an internal error (-32603) or carries a traceback, and after
each batch a known-good request still answers correctly. Shared by tests/e2e/test_fuzz.py (which
asserts that nothing was found) and bench/fuzz_bench.py (which counts what was found)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from harness import launch, procfs, wire
from harness.fuzz_messages import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SERVER_NOT_INITIALIZED,
    Case,
    Expect,
    Face,
    IdKind,
    IdSlot,
    InRoot,
    PreviousId,
    RawFrames,
    error,
    expected,
    render,
)
from harness.support import SAMPLE_FILES

Message = dict[str, Any]
State = Literal["uninitialized", "ready", "shut down"]
LISTED = sorted(SAMPLE_FILES)  # what a listing of the sample workspace holds (binaries are left out)
MAX_EXAMPLES_KEPT = 30
ANY_ANSWER = Expect("one", results=frozenset({"result", "tool-error"}))


def server_env(cache: Path) -> dict[str, str]:
    """No model, no settings from the developer's environment: the sample workspace alone
    (PYTHONPATH is kept, so a run can point at another checkout of the server). Narrower than
    launch.server_env, which keeps all but the model's variables: any other FILESCOUT_ setting
    (an index path, a shared cache, limits) would change the answers judged here."""
    keep = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "PYTHONPATH") if name in os.environ}
    return {**keep, "XDG_CACHE_HOME": str(cache), "FILESCOUT_CACHE_DIR": ""}


# -- the wire ---------------------------------------------------------------------------------


class Wire:
    """The server's stdin and stdout: bytes in, parsed messages out. A thread reads stdout into
    a queue, so a server that stops answering fails a wait by timeout instead of hanging it."""

    face: Face

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.messages: queue.Queue[Message | str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            for body in self.bodies(stdout):
                try:
                    self.messages.put(json.loads(body))
                except ValueError as exc:
                    self.messages.put(f"the server wrote a message that is not JSON ({exc}): {body[:200]!r}")
        finally:
            self.messages.put(None)

    def bodies(self, stdout: IO[bytes]) -> Iterator[bytes]:
        raise NotImplementedError

    def frame(self, body: bytes) -> bytes:
        raise NotImplementedError

    def write(self, data: bytes) -> bool:
        """False if the server no longer reads."""
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(data)
            stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            return False
        return True

    def send(self, message: Any) -> bool:
        return self.write(self.frame(json.dumps(message).encode()))

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> int:
        """Close stdin and wait for the exit code (killing the server if it lingers)."""
        try:
            assert self.process.stdin is not None
            self.process.stdin.close()
        except OSError:
            pass
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return -9


class LspWire(Wire):
    face: Face = "lsp"

    def bodies(self, stdout: IO[bytes]) -> Iterator[bytes]:
        while (body := wire.read_body(stdout)) is not None:
            yield body

    def frame(self, body: bytes) -> bytes:
        return wire.frame(body)


class McpWire(Wire):
    face: Face = "mcp"

    def bodies(self, stdout: IO[bytes]) -> Iterator[bytes]:
        yield from stdout

    def frame(self, body: bytes) -> bytes:
        return body + b"\n"


def start(face: Face, root: Path, cache: Path, stderr_path: Path) -> Wire:
    command = launch.command("serve") if face == "lsp" else launch.command("mcp", str(root))
    process = launch.popen(command, server_env(cache), stderr=stderr_path)
    return LspWire(process) if face == "lsp" else McpWire(process)


# -- the server's resources -------------------------------------------------------------------


@dataclass(frozen=True)
class Resources:
    rss_kib: int
    fds: int
    threads: int


def resources(pid: int) -> Resources:
    """Resident memory, open descriptors and threads of a process, from /proc. A process that is
    gone raises: a reading of nothing would pass for a lean server."""
    sample = procfs.sample_process(pid)
    if sample is None:
        raise ProcessLookupError(f"process {pid} is gone")
    rss_kib = round(sample.rss_mb * 1024)  # exact: the sample holds VmRSS's KiB / 1024
    return Resources(rss_kib=rss_kib, fds=sample.fds, threads=sample.threads)


# -- judging ----------------------------------------------------------------------------------


@dataclass
class Findings:
    """What a run found, by kind; the first examples of each are kept to be read."""

    messages: int = 0
    frames: int = 0
    crashes: int = 0
    hangs: int = 0
    accepted_malformed: int = 0
    internal_errors: int = 0
    other: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, kind: str, text: str) -> str:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.examples) < MAX_EXAMPLES_KEPT:
            self.examples.append(f"{kind}: {text}")
        return f"{kind}: {text}"

    @property
    def total(self) -> int:
        return self.crashes + self.hangs + self.accepted_malformed + self.internal_errors + self.other


@dataclass
class Pending:
    label: str
    expect: Expect
    replied: bool = False
    own: bool = False  # the harness's own request: any answer but an internal error


def id_key(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value)


def has_lone_surrogate(text: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in text)


def describe(value: Any, limit: int = 300) -> str:
    text = value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else json.dumps(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class Fuzzer:
    """One face of one server, its lifecycle state, and the judge of its answers."""

    def __init__(
        self,
        face: Face,
        root: Path,
        cache: Path,
        stderr_path: Path,
        *,
        reply_timeout: float,
        findings: Findings | None = None,
    ) -> None:
        self.face = face
        self.root = root
        self.cache = cache
        self.stderr_path = stderr_path
        self.reply_timeout = reply_timeout
        self.findings = findings if findings is not None else Findings()
        self.state: State = "uninitialized"
        self._serial = 0
        self._pending: dict[tuple[str, Any], Pending] = {}
        self._nulls_due = 0
        self._null_cases: list[str] = []  # what the null-id errors of this batch answer
        self._nulls_free = False  # raw framing errors: any number of null-id errors
        self._nulls_seen = 0
        self._problems: list[str] = []
        self._log_offset = 0
        self._last_body: tuple[str, bytes] = ("", b"")
        self.wire = start(face, root, cache, stderr_path)

    # -- lifecycle

    def initialize(self) -> None:
        """LSP: initialize and wait for the first listing; MCP: the handshake and the same."""
        root = self.root
        if self.face == "lsp":
            params = {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}}
        else:
            params = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "1"},
            }
        reply = self.request("initialize", params, "init")
        if "result" not in reply:
            raise RuntimeError(f"initialize failed: {reply}")
        self.wire.send(
            {
                "jsonrpc": "2.0",
                "method": "initialized" if self.face == "lsp" else "notifications/initialized",
                "params": {},
            }
        )
        self.state = "ready"
        deadline = time.monotonic() + 120
        while self.listed() != LISTED:
            if time.monotonic() > deadline:
                raise RuntimeError("the workspace was not indexed within 120 s")
            time.sleep(0.1)

    def restart(self) -> None:
        """After a crash or a deaf server: a fresh one, so a long run goes on."""
        if self.wire.alive():
            self.wire.process.kill()
        self.wire.process.wait()
        self._pending.clear()
        self.state = "uninitialized"
        self.wire = start(self.face, self.root, self.cache, self.stderr_path)
        self.initialize()

    # -- plain requests

    def next_id(self, kind: IdKind = IdKind.STR, suffix: str = "") -> Any:
        self._serial += 1
        serial = self._serial
        if kind == IdKind.INT:
            return 1_000_000 + serial
        if kind == IdKind.BIG:
            return 2**64 + serial
        if kind == IdKind.NEGATIVE:
            return -(1_000_000 + serial)
        return f"fuzz-{serial}{suffix}"

    def request(self, method: str, params: Any, label: str = "probe") -> Message:
        """Send a request the harness itself needs and return its reply (judging what else
        arrives meanwhile)."""
        msg_id = self.next_id()
        self._pending[id_key(msg_id)] = Pending(label, ANY_ANSWER, own=True)
        if not self.wire.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}):
            raise RuntimeError("the server does not read its input")
        reply = self._wait_for(lambda: self._pending[id_key(msg_id)].replied, keep=id_key(msg_id))
        if reply is None:
            raise RuntimeError(f"no reply to {method} within {self.reply_timeout:.0f} s")
        return reply

    def listed(self) -> list[str]:
        """Paths of a known-good listing, or [] when it failed."""
        if self.face == "lsp":
            reply = self.request("files/getFiles", {"limit": 100})
            items = reply.get("result", {}).get("items", []) if isinstance(reply.get("result"), dict) else []
        else:
            reply = self.request("tools/call", {"name": "list_files", "arguments": {"limit": 100}})
            content = reply.get("result", {}) if isinstance(reply.get("result"), dict) else {}
            items = (
                (content.get("structuredContent") or {}).get("items", [])
                if not content.get("isError")
                else []
            )
        return sorted(item["path"] for item in items)

    # -- generated messages

    def run_batch(self, cases: list[Case]) -> list[str]:
        """Send the cases back to back, wait for every reply due, then check that the server
        still answers a known-good request. Returns what went wrong (also kept in findings)."""
        self._problems = []
        self._nulls_due, self._null_cases = 0, []
        previous: Any = None
        due: list[tuple[str, Any]] = []
        for case in cases:
            expect = expected(case, self.state, self.face)
            body, msg_id = self._render(case, previous)
            if msg_id is not None:
                expect = self._for_id(expect, msg_id)
                if not expect.null_id:
                    key = id_key(msg_id)
                    self._pending[key] = Pending(case.label, expect)
                    due.append(key)
                previous = msg_id
            if case.targets_previous and previous is not None:
                self._relax(previous)
            if expect.null_id and expect.reply == "one":
                self._nulls_due += 1
                self._null_cases.append(f"{case.label} ({describe(body, 120)})")
            self.findings.messages += 1
            self._last_body = (case.label, body)
            if not self.wire.write(self.wire.frame(body)):
                break
        self._settle(due)
        return self._problems

    def _render(self, case: Case, previous: Any) -> tuple[bytes, Any]:
        """The case's bytes with its slots filled, and the request id it got (if any)."""
        assigned: list[Any] = []

        def fill(slot: Any) -> Any:
            if isinstance(slot, IdSlot):
                if not assigned:
                    assigned.append(self.next_id(slot.kind, slot.suffix))
                return assigned[0]
            if isinstance(slot, PreviousId):
                return previous if previous is not None else -1
            if isinstance(slot, InRoot):
                path = self.root / slot.relative
                return path.as_uri() if slot.uri else str(path)
            raise TypeError(slot)

        body = render(case, fill)
        return body, assigned[0] if assigned else None

    def _for_id(self, expect: Expect, msg_id: Any) -> Expect:
        """An id with a lone surrogate cannot be written back by the MCP SDK: the server
        refuses the request with a null id instead."""
        if self.face == "mcp" and isinstance(msg_id, str) and has_lone_surrogate(msg_id):
            return error(INVALID_REQUEST, null_id=True)
        return expect

    def _relax(self, msg_id: Any) -> None:
        """A cancelled request may answer -32800 (LSP) or not at all (MCP)."""
        pending = self._pending.get(id_key(msg_id))
        if pending is None:
            return
        expect = pending.expect
        if self.face == "lsp":
            pending.expect = Expect(
                expect.reply, expect.null_id, expect.results, expect.errors | {REQUEST_CANCELLED}
            )
        else:
            pending.expect = Expect("maybe", expect.null_id, expect.results, expect.errors)

    def run_frames(self, frames: RawFrames) -> list[str]:
        """LSP only: bytes that break the framing, then a request that must be answered: the
        reader has resynchronised. Replies between are null-id -32700/-32600 errors or answers to
        the frames' own requests."""
        self._problems = []
        ids = [self.next_id() for _ in range(frames.ids)]
        answer = Expect("one" if frames.fine else "maybe", results=frozenset({"result"}))
        for msg_id in ids:
            self._pending[id_key(msg_id)] = Pending(frames.label, answer)
        before = self._nulls_seen
        self._nulls_free = True
        self.findings.frames += 1
        data = frames.make(ids)
        self._last_body = (frames.label, data)
        self.wire.write(data)
        self._settle([id_key(msg_id) for msg_id in ids] if frames.fine else [])
        self._nulls_free = False
        if frames.bad and self._nulls_seen == before and self.wire.alive():
            self._problem("other", f"{frames.label}: no error reply to a broken frame ({describe(data)})")
        return self._problems

    # -- waiting and judging

    def _settle(self, due: list[tuple[str, Any]]) -> None:
        """Wait for the replies due, then a known-good request; judge everything that arrives."""
        self._wait_for(lambda: all(self._answered(key) for key in due))
        for key in due:
            pending = self._pending.get(key)
            if pending is not None and not pending.replied and pending.expect.reply == "one":
                self._problem(
                    "hangs", f"no reply within {self.reply_timeout:.0f} s to {pending.label} (id {key[1]!r})"
                )
                del self._pending[key]
        if not self.wire.alive():
            self._crashed()
            return
        if not self._probe_answers():
            return
        if self._nulls_due > 0:
            cases = "; ".join(self._null_cases)
            self._problem("other", f"{self._nulls_due} of these got no error reply: {cases}")
        self._nulls_due = 0
        self._null_cases = []
        self._check_log()

    def _check_log(self) -> None:
        """Bad input is answered in words: a traceback in the server's log is a finding too."""
        with open(self.stderr_path, "rb") as log:
            log.seek(self._log_offset)
            data = log.read()
        self._log_offset += len(data)
        text = data.decode("utf-8", "replace")
        if "Traceback" in text:
            start = text.index("Traceback")
            label, body = self._last_body
            self._problem(
                "other",
                f"a traceback in the server's log, around {label} ({describe(body)}): {text[max(start - 300, 0) : start + 1500]}",
            )

    def _answered(self, key: tuple[str, Any]) -> bool:
        """Replied, or owed no reply (a cancelled MCP request may never be answered)."""
        pending = self._pending.get(key)
        return pending is None or pending.replied or pending.expect.reply != "one"

    def _probe_answers(self) -> bool:
        """The known-good request of the current state answers as it should."""
        try:
            if self.state == "ready":
                listed = self.listed()
                if listed != LISTED:
                    self._problem("other", f"a known-good listing came back as {listed}")
                return True
            reply = self.request("files/getFiles", {})
        except RuntimeError as exc:
            if not self.wire.alive():
                self._crashed()
            else:
                self._problem("hangs", f"the known-good request: {exc}")
                self.restart()
            return False
        code = reply.get("error", {}).get("code")
        want = SERVER_NOT_INITIALIZED if self.state == "uninitialized" else INVALID_REQUEST
        if code != want:
            self._problem("other", f"a known-good request in state {self.state} answered {reply}")
        return True

    def _crashed(self) -> None:
        code = self.wire.process.poll()
        label, body = self._last_body
        self._problem("crashes", f"the server exited with {code} after {label}: {describe(body)}")
        self.restart()

    def _wait_for(self, done: Callable[[], bool], keep: tuple[str, Any] | None = None) -> Message | None:
        """Judge arriving messages until `done()`, or `reply_timeout` passes without it."""
        deadline = time.monotonic() + self.reply_timeout
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                message = self.wire.messages.get(timeout=remaining)
            except queue.Empty:
                return None
            if message is None:  # the server closed its output
                self.wire.messages.put(None)
                return None
            if isinstance(message, str):
                self._problem("other", message)
                continue
            reply = self._receive(message)
            if keep is not None and reply is not None and id_key(reply.get("id")) == keep:
                return reply
        return None

    def _receive(self, message: Message) -> Message | None:
        """Answer the server's own requests, ignore its notifications, judge replies."""
        if "method" in message:
            if "id" in message:
                self.wire.send(
                    {"jsonrpc": "2.0", "id": message["id"], "result": None if self.face == "lsp" else {}}
                )
            return None
        self._judge(message)
        return message

    def _judge(self, reply: Message) -> None:
        failure = reply.get("error")
        if isinstance(failure, dict):
            code = failure.get("code")
            if code == INTERNAL_ERROR:
                self._problem("internal_errors", f"-32603 {describe(reply)}")
            if "traceback" in json.dumps(failure).lower():
                self._problem("other", f"a traceback in an error reply: {describe(reply)}")
        if reply.get("id") is None:
            self._judge_null(reply)
            return
        key = id_key(reply["id"])
        pending = self._pending.get(key)
        if pending is None:
            self._problem("other", f"a reply to no request of ours: {describe(reply)}")
            return
        if pending.replied:
            self._problem("other", f"a second reply to {pending.label}: {describe(reply)}")
            return
        pending.replied = True
        expect = pending.expect
        if pending.own:
            return
        if expect.reply == "none":
            self._problem("other", f"a reply to {pending.label}, which needs none: {describe(reply)}")
        elif isinstance(failure, dict):
            if failure.get("code") not in expect.errors and failure.get("code") != INTERNAL_ERROR:
                self._problem(
                    "other",
                    f"{pending.label}: error {failure.get('code')} where {sorted(expect.errors)} or a result were due: {describe(reply)}",
                )
        else:
            kind = (
                "tool-error"
                if isinstance(reply.get("result"), dict) and reply["result"].get("isError")
                else "result"
            )
            if kind not in expect.results:
                which = "accepted_malformed" if not expect.results or kind == "result" else "other"
                self._problem(
                    which,
                    f"{pending.label}: a {kind} where {sorted(expect.errors)} was due: {describe(reply)}",
                )

    def _judge_null(self, reply: Message) -> None:
        self._nulls_seen += 1
        code = (reply.get("error") or {}).get("code")
        if code not in (PARSE_ERROR, INVALID_REQUEST):
            self._problem("other", f"a null-id reply that is not a parse or request error: {describe(reply)}")
        if self._nulls_free:
            return
        if self._nulls_due <= 0:
            self._problem("other", f"an error reply with a null id nothing called for: {describe(reply)}")
        self._nulls_due -= 1

    def _problem(self, kind: str, text: str) -> None:
        self._problems.append(self.findings.add(kind, text))

    def resources(self) -> Resources:
        return resources(self.wire.process.pid)
