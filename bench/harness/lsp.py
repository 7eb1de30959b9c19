"""A small LSP client for benchmarks: starts `filescout serve`, records when notifications
arrive, and reads the server's peak memory from /proc."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from cattrs import Converter
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import JsonRPCResponseMessage, default_converter


def plain_replies() -> Converter:
    """pygls turns each object of a reply to a method it does not know into a namedtuple class
    made for it (json.dumps, then json.loads again): ~70 ms for a page of 1,000 files on an idle
    machine, twice that under load, which a bench would count as the server's time. Replies
    stay the plain JSON that `json.loads` made, as an editor's client parses them."""
    converter = default_converter()
    converter.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    return converter


class BenchClient(LanguageClient):
    def __init__(self) -> None:
        super().__init__("filescout-bench", "1", converter_factory=plain_replies)
        self.started = 0.0
        self.events: list[tuple[float, str, Any]] = []
        self.partial: dict[str, list[Any]] = {}
        self.changed = asyncio.Event()

        @self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(params: types.WorkDoneProgressCreateParams) -> None:
            return None

        @self.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            value = params.value
            if isinstance(value, list):
                self.partial.setdefault(str(params.token), []).append((time.perf_counter(), value))
            else:
                kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
                self.events.append((time.perf_counter(), f"progress:{kind}", value))
            self.changed.set()

        @self.feature("filescout/status")
        def status(params: Any) -> None:
            self.events.append((time.perf_counter(), f"status:{params.phase}", params))
            self.changed.set()

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def log_message(params: types.LogMessageParams) -> None:
            return None

        @self.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            return None

    async def wait_for(self, name: str, after: float = 0.0, timeout: float = 3600) -> float:
        """The time of the first event called `name` at or after `after`."""
        deadline = time.perf_counter() + timeout
        while True:
            for at, event, _ in self.events:
                if event == name and at >= after:
                    return at
            self.changed.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(name)
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def peak_rss_mb(self) -> float:
        """VmHWM of the server process (Linux)."""
        process = self._server
        if process is None:
            return float("nan")
        try:
            for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return float("nan")


async def start(
    root: Path,
    cache: Path,
    *,
    watch: bool = True,
    initialization_options: Any = None,
    environment: dict[str, str] | None = None,
) -> BenchClient:
    """A server on `root` with its index under `cache`; `environment` replaces this process's
    for the server (e.g. to run another code tree)."""
    client = BenchClient()
    env = {**(environment or os.environ), "XDG_CACHE_HOME": str(cache), "FILESCOUT_CACHE_DIR": ""}
    client.started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "filescout", "serve", env=env)
    capabilities = types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True),
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=watch)
        ),
    )
    await client.initialize_async(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=root.as_uri(),
            process_id=os.getpid(),
            initialization_options=initialization_options,
        )
    )
    client.initialized(types.InitializedParams())
    return client


async def stop(client: BenchClient) -> None:
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


async def size_and_status(client: BenchClient, relative: str) -> tuple[int, str]:
    page = await client.protocol.send_request_async("files/getFiles", {"paths": [relative]})
    item = page["items"][0]
    return item["size"], item["status"]


async def save_until_annotated(client: BenchClient, root: Path, relative: str, serial: int) -> float:
    """Append a function to a file, send didSave, and wait until the file shows the new
    content's annotation; seconds from the notification."""
    path = root / relative
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"\n\ndef saved_marker_{serial}():\n    return {serial}\n")
    size = path.stat().st_size
    started = time.perf_counter()
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    while (await size_and_status(client, relative)) != (size, "annotated"):
        await asyncio.sleep(0.005)
    return time.perf_counter() - started
