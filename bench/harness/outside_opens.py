"""Links flipped in and out of the workspace while the server scans, saves, opens and
annotates, with the server under strace: what it opened outside the root, and whether an
outside file's words reached the index. Shared by tests/e2e/test_outside_opens.py (a few
hundred flips) and bench/outside_opens_bench.py (thousands).

The workspace holds `link.py`, a symlink flipped between `inside_target.py` and a file
outside, and `pkg/`, a directory flipped into a symlink to a directory outside and back (the
real one parked in `build/`, which the sample's .gitignore leaves out). The client keeps
saving, opening, accessing and annotating both paths while the links flip.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from harness.support import SERVER_COMMAND, TestClient, as_dict, execute, make_workspace

SECRET_WORDS = ("zqxflippedoutsideword", "zqxoutsidepackageword")
INSIDE_SOURCE = "def inside_target_function():\n    return 'inside'\n"
TRACED_CALLS = "trace=open,openat,openat2,creat,execve"
RETURNED_FD = re.compile(r"=\s+\d+<(.*)>\s*$")
EXECUTED = re.compile(r'^(\d+)\s+execve\("([^"]*)"')


def strace_missing() -> str | None:
    """Why the server cannot run under strace here, or None when it can."""
    if shutil.which("strace") is None:
        return "strace is not installed (apt-get install strace; .ci/run installs it on CI)"
    return None


def traced_command(log: Path) -> list[str]:
    """`filescout serve` under strace: every open of the server and its worker processes, with
    the path each returned descriptor names (-y), in `log`."""
    return ["strace", "-f", "-qq", "-y", "--seccomp-bpf", "-e", TRACED_CALLS, "-o", str(log), *SERVER_COMMAND]


@dataclass
class Flipping:
    root: Path
    outside: Path

    @property
    def link(self) -> Path:
        return self.root / "link.py"

    @property
    def package(self) -> Path:
        return self.root / "pkg"

    @property
    def parked(self) -> Path:
        return self.root / "build" / "pkg"


def make_flipping_workspace(base: Path, *, git: bool) -> Flipping:
    root = make_workspace(base / "ws", git=git)
    outside = base / "outside"
    (outside / "pkg").mkdir(parents=True)
    (outside / "secret.py").write_text(f"def {SECRET_WORDS[0]}():\n    return 'kept outside'\n")
    (outside / "pkg" / "mod.py").write_text(f"def {SECRET_WORDS[1]}():\n    return 'kept outside'\n")
    (root / "inside_target.py").write_text(INSIDE_SOURCE)
    (root / "link.py").symlink_to("inside_target.py")
    (root / "pkg").mkdir()
    (root / "pkg" / "mod.py").write_text("def package_function():\n    return 'inside'\n")
    (root / "build").mkdir(exist_ok=True)
    return Flipping(root, outside)


@dataclass
class Flipper:
    """A thread that flips `link.py` and `pkg` `flips` times, one every `interval` seconds."""

    where: Flipping
    flips: int
    interval: float
    done: int = 0
    errors: list[BaseException] = field(default_factory=list)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="flipper", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        try:
            for number in range(self.flips):
                flip(self.where, outward=number % 2 == 0)
                self.done += 1
                time.sleep(self.interval)
            if self.done % 2:
                flip(self.where, outward=False)  # ends inside, as it began
        except BaseException as exc:
            self.errors.append(exc)


def flip(where: Flipping, *, outward: bool) -> None:
    """Point `link.py` outside (or back inside), and swap `pkg` for a symlink to a directory
    outside (or back)."""
    spare = where.link.with_name("link.py.next")
    spare.symlink_to(where.outside / "secret.py" if outward else "inside_target.py")
    os.replace(spare, where.link)  # in one step, as a checkout does
    if outward:
        os.rename(where.package, where.parked)
        where.package.symlink_to(where.outside / "pkg", target_is_directory=True)
    else:
        where.package.unlink()
        os.rename(where.parked, where.package)


async def exercise(client: TestClient, where: Flipping, flipper: Flipper) -> int:
    """Save, open, access and annotate both flipped paths until the flipper is done; a full
    pass now and then. Returns the rounds made."""
    protocol = client.protocol
    uris = [(where.root / name).as_uri() for name in ("link.py", "pkg/mod.py")]
    rounds = 0
    while flipper.running:
        for uri in uris:
            document = types.TextDocumentIdentifier(uri=uri)
            protocol.notify(
                types.TEXT_DOCUMENT_DID_SAVE, types.DidSaveTextDocumentParams(text_document=document)
            )
            opened = types.TextDocumentItem(uri=uri, language_id="python", version=rounds, text="")
            protocol.notify(
                types.TEXT_DOCUMENT_DID_OPEN, types.DidOpenTextDocumentParams(text_document=opened)
            )
        protocol.notify("files/didAccess", {"paths": ["link.py", "pkg/mod.py"]})
        if rounds % 8 == 0:
            try:
                await execute(client, "filescout.annotate", {"paths": ["link.py"], "timeout": 1})
            except JsonRpcException:
                pass  # not in the index at this moment
        if rounds % 40 == 0:
            await execute(client, "filescout.reindex")
        rounds += 1
        await asyncio.sleep(0.005)
    return rounds


async def flip_while_asked(
    client: TestClient, where: Flipping, flips: int, interval: float
) -> tuple[Flipper, int, str]:
    """Flip the links `flips` times while the client saves, opens and asks; then reindex at
    rest and let the last saves' annotations land. The flipper, the client's rounds and the
    index's path, for the test and the benchmark alike."""
    flipper = Flipper(where, flips, interval)
    flipper.start()
    rounds = await exercise(client, where, flipper)
    flipper.join()
    await execute(client, "filescout.reindex")  # at rest, inside again
    await asyncio.sleep(1.0)
    return flipper, rounds, as_dict(await execute(client, "filescout.status"))["dbPath"]


def opened_outside(log: Path, outside: Path) -> dict[str, list[str]]:
    """The lines of the strace log that opened something below `outside`, by the program that
    did: "filescout" (the server, its workers and their threads) or the one a process executed
    (git, for the listings it is asked for)."""
    return opened_below(log, outside)


def opened_below(log: Path, directory: Path) -> dict[str, list[str]]:
    """The lines of the strace log that opened something below `directory`, by program (see
    `opened_outside`); used on the workspace too, to show the log records what was opened."""
    prefix = str(directory.resolve()) + "/"
    programs: dict[str, str] = {}
    found: dict[str, list[str]] = {}
    with open(log, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if (executed := EXECUTED.match(line)) is not None:
                program = os.path.basename(executed.group(2))
                programs[executed.group(1)] = "filescout" if program.startswith("python") else program
                continue
            returned = RETURNED_FD.search(line)
            if returned is not None and (returned.group(1) + "/").startswith(prefix):
                # A thread's id is no process's: threads are the server's and its workers'.
                program = programs.get(line.split(maxsplit=1)[0], "filescout")
                found.setdefault(program, []).append(line.strip())
    return found


def secret_words_in_index(db: str | Path) -> list[str]:
    """Where an outside file's words are in the index: its content words, its annotations'
    summaries and symbols, its definitions."""
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        found: list[str] = []
        for word in SECRET_WORDS:
            if connection.execute("SELECT 1 FROM body_terms WHERE term = ?", (word.lower(),)).fetchone():
                found.append(f"content words: {word}")
            if connection.execute(
                "SELECT 1 FROM files_fts WHERE files_fts MATCH ?", (f'"{word}"',)
            ).fetchone():
                found.append(f"file descriptions: {word}")
            if connection.execute(
                "SELECT 1 FROM annotations WHERE instr(lower(summary || ' ' || symbols), ?)", (word.lower(),)
            ).fetchone():
                found.append(f"annotations: {word}")
        return found
    finally:
        connection.close()
