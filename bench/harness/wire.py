"""JSON-RPC with LSP's framing, with nothing in between: times are when a message's bytes
arrive, not when some client library has finished decoding them."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness import launch

REPLY_TIMEOUT = 600.0


def frame(body: bytes) -> bytes:
    """One LSP frame: a Content-Length header, a blank line, the body."""
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def encode(message: Any) -> bytes:
    return frame(json.dumps(message).encode())


def jsonrpc_message(method: str, params: Any = None, number: int | None = None) -> dict[str, Any]:
    """A request (with `number`) or notification; no "params" member when there are none."""
    made: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if number is not None:
        made["id"] = number
    if params is not None:
        made["params"] = params
    return made


def read_body(stream: IO[bytes]) -> bytes | None:
    """The next frame's body from a blocking stream; None at its end."""
    length = None
    while (line := stream.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    if length is None:
        return None
    return stream.read(length)


async def receive(stream: asyncio.StreamReader) -> tuple[float, Any] | None:
    """The next message from an event loop's stream and when its header arrived; None at its end."""
    length = 0
    while True:
        line = await stream.readline()
        arrived = time.perf_counter()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return arrived, json.loads(await stream.readexactly(length))


@dataclass
class Reply:
    """One request's fate: when it was sent, when its reply came, and each batch of partial
    results (arrival, items) sent for its token before it."""

    kind: str
    sent: float
    arrived: float | None = None
    error: dict[str, Any] | None = None
    partials: list[tuple[float, int]] = field(default_factory=list)

    @property
    def latency(self) -> float | None:
        return None if self.arrived is None else self.arrived - self.sent

    @property
    def first_partial(self) -> float | None:
        return self.partials[0][0] if self.partials else None


class WireClient:
    """A `filescout serve` subprocess driven over its stdio, many requests in flight at once.

    A reader task routes each reply to its request's future, notes when partial results arrive,
    keeps the last index phase the server announced, and says yes to every request the server
    makes (progress tokens, watcher registration)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.ids = itertools.count(1)
        self.pending: dict[int, tuple[Reply, asyncio.Future[dict[str, Any]]]] = {}
        self.partial_of: dict[str, Reply] = {}
        self.phase = "starting"
        self.phases: list[tuple[float, str]] = []
        self.changed = asyncio.Event()
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    async def start(
        cls,
        root: Path,
        cache: Path,
        *,
        env: dict[str, str] | None = None,
        base_env: dict[str, str] | None = None,
        stderr: Path | None = None,
        watch: bool = True,
        initialization_options: Any = None,
    ) -> WireClient:
        """A server on `root` with its index under `cache`, initialized and told so."""
        process = await launch.spawn(
            launch.SERVE, launch.server_env(cache, env, base=base_env), stderr=stderr
        )
        client = cls(process)
        capabilities = {
            "window": {"workDoneProgress": True},
            "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": watch}},
        }
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "capabilities": capabilities,
        }
        if initialization_options is not None:
            params["initializationOptions"] = initialization_options
        await client.request("initialize", params)
        client.notify("initialized", {})
        return client

    def notify(self, method: str, params: Any = None) -> None:
        self._send(jsonrpc_message(method, params))

    def send(self, method: str, params: Any, kind: str | None = None) -> asyncio.Future[dict[str, Any]]:
        """Send a request now; the future resolves to its reply message. Its `Reply` is in `.reply`."""
        number = next(self.ids)
        reply = Reply(kind or method, time.perf_counter())
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        future.reply = reply  # type: ignore[attr-defined]
        self.pending[number] = (reply, future)
        if isinstance(params, dict) and "partialResultToken" in params:
            self.partial_of[str(params["partialResultToken"])] = reply
        self._send(jsonrpc_message(method, params, number))
        return future

    async def request(self, method: str, params: Any, timeout: float = REPLY_TIMEOUT) -> dict[str, Any]:
        """The whole reply message (with "result" or "error")."""
        return await asyncio.wait_for(self.send(method, params), timeout)

    async def timed(self, method: str, params: Any, timeout: float = REPLY_TIMEOUT) -> Reply:
        """Send a request and wait for it; the Reply says when each part of it arrived."""
        future = self.send(method, params)
        await asyncio.wait_for(future, timeout)
        return future.reply  # type: ignore[attr-defined]

    async def result(self, method: str, params: Any, timeout: float = REPLY_TIMEOUT) -> Any:
        """The reply's result; an error reply raises."""
        message = await self.request(method, params, timeout)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message.get("result")

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.result("workspace/executeCommand", {"command": name, "arguments": list(arguments)})

    async def wait_for_phase(self, phase: str, timeout: float = REPLY_TIMEOUT) -> None:
        """Until the server has announced `phase` (e.g. "idle" after its first index)."""
        deadline = time.perf_counter() + timeout
        while not any(seen == phase for _, seen in self.phases):
            self.changed.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or self.reader.done():
                raise TimeoutError(f"the server never said {phase!r} (last: {self.phase!r})")
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(encode(message))

    async def _read(self) -> None:
        assert self.process.stdout is not None
        try:
            while (received := await receive(self.process.stdout)) is not None:
                self._dispatch(*received)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.changed.set()
        for reply, future in self.pending.values():  # the server is gone: these never come
            if not future.done():
                future.set_exception(ConnectionError(f"no reply to {reply.kind}: the server exited"))

    def _dispatch(self, arrived: float, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is not None and "id" in message:
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif method == "$/progress":
            params = message["params"]
            reply = self.partial_of.get(str(params["token"]))
            if reply is not None and isinstance(params["value"], list):
                reply.partials.append((arrived, len(params["value"])))
        elif method == "filescout/status":
            phase = message["params"]["phase"]
            if phase != self.phase:
                self.phases.append((arrived, phase))
                self.changed.set()
            self.phase = phase
        elif method is None and (entry := self.pending.pop(message.get("id"), None)):  # type: ignore[arg-type]
            reply, future = entry
            reply.arrived = arrived
            reply.error = message.get("error")
            if not future.done():
                future.set_result(message)

    async def stop(self) -> None:
        """shutdown and exit, as an editor closes; killed if it does not go within a minute."""
        try:
            await self.request("shutdown", None, timeout=60)
            self.notify("exit")
            await asyncio.wait_for(self.process.wait(), 30)
        except (TimeoutError, asyncio.TimeoutError, ConnectionError):
            self.process.kill()
            await self.process.wait()
        self.reader.cancel()


# A whole pass, timed to its end, and the polls benchmarks share.

PASS_TIMEOUT = 3600.0
"""A cold index of a large tree takes longer than one reply may."""


class ProgressClient(WireClient):
    """A WireClient that also keeps the work-done progress the server reports (begin, report, end,
    each with its message) and when it was started. A pass's progress ends after the repository's
    history is read, where its idle status comes before: the benchmarks time a full pass to the
    end, and read its counts from the messages ("annotating 32/900 files", "10000 files indexed,
    1234 annotated")."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.started = time.perf_counter()
        self.progress: list[tuple[float, str, dict[str, Any]]] = []
        super().__init__(process)

    @classmethod
    async def start(cls, root: Path, cache: Path, **options: Any) -> ProgressClient:
        """As WireClient.start; `started` is the moment before the process was spawned."""
        started = time.perf_counter()
        client = await super().start(root, cache, **options)
        assert isinstance(client, ProgressClient)
        client.started = started
        return client

    def _dispatch(self, arrived: float, message: dict[str, Any]) -> None:
        super()._dispatch(arrived, message)
        if message.get("method") == "$/progress" and isinstance(value := message["params"]["value"], dict):
            self.progress.append((arrived, str(value.get("kind")), value))
            self.changed.set()

    def progress_at(self, kind: str = "end") -> float | None:
        """When the first progress of `kind` ("begin", "report" or "end") arrived; None before it."""
        return next((at for at, seen, _ in self.progress if seen == kind), None)

    async def wait_for_progress(self, kind: str = "end", timeout: float = PASS_TIMEOUT) -> float:
        """When the first progress of `kind` arrived, once it has."""
        deadline = time.perf_counter() + timeout
        while (at := self.progress_at(kind)) is None:
            self.changed.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or self.reader.done():
                raise TimeoutError(f"the server never reported progress {kind!r}")
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        return at

    async def phase_time(self, phase: str, timeout: float = PASS_TIMEOUT) -> float:
        """When the server first announced `phase` (e.g. "annotating": the scan is stored)."""
        await self.wait_for_phase(phase, timeout)
        return next(at for at, seen in self.phases if seen == phase)


async def save_until_annotated(client: WireClient, root: Path, relative: str, serial: int) -> float:
    """Append a function to a file, send didSave, and wait until the file shows the new content's
    annotation; seconds from the notification."""
    path = root / relative
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"\n\ndef saved_marker_{serial}():\n    return {serial}\n")
    size = path.stat().st_size
    started = time.perf_counter()
    client.notify("textDocument/didSave", {"textDocument": {"uri": path.as_uri()}})
    while True:
        (item,) = (await client.result("files/getFiles", {"paths": [relative]}))["items"]
        if (item["size"], item["status"]) == (size, "annotated"):
            return time.perf_counter() - started
        await asyncio.sleep(0.005)


async def wait_until_idle(client: WireClient, limit: float) -> float:
    """Seconds until the first scan has finished and the model has nothing queued (the server's
    own word, `filescout.status`, polled: a model's queue is in no notification)."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        status = await client.command("filescout.status")
        model = status["model"] or {"state": "off", "queuedFiles": 0}  # no model configured
        scanned = status["lastScan"] is not None and status["phase"] == "idle"
        if scanned and model["state"] in ("idle", "off") and model["queuedFiles"] == 0:
            return time.perf_counter() - started
        await asyncio.sleep(0.2)
    raise TimeoutError(f"the model did not finish within {limit:.0f} s")


async def start_command(
    arguments: list[str],
    root: Path,
    cache: Path,
    *,
    kind: type[WireClient] = WireClient,
    env: dict[str, str] | None = None,
    stderr: Path | None = None,
    initialization_options: Any = None,
) -> WireClient:
    """As `kind.start`, for a server that another command line starts (a frozen build, another
    interpreter): initialized and told so. A ProgressClient's `started` is the moment before the
    process was spawned."""
    started = time.perf_counter()
    process = await launch.spawn(arguments, launch.server_env(cache, env), stderr=stderr)
    client = kind(process)
    if isinstance(client, ProgressClient):
        client.started = started
    params: dict[str, Any] = {
        "processId": os.getpid(),
        "rootUri": root.as_uri(),
        "capabilities": {
            "window": {"workDoneProgress": True},
            "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}},
        },
    }
    if initialization_options is not None:
        params["initializationOptions"] = initialization_options
    await client.request("initialize", params)
    client.notify("initialized", {})
    return client
