"""The frozen server a platform's VSIX carries (packaging/filescout.spec): it answers initialize
over stdio, indexes with its worker pool (processes it starts from its own program), outlines
with the grammars it took along, redacts with detect-secrets' detectors before a model sees a
file, gives git the system's libraries rather than its own, and has the MCP face and the shared
cache's PostgreSQL driver.

The program is the one editor-clients/vscode/scripts/build-platform-vsix.py left under
build/frozen/ (FILESCOUT_FROZEN names another). With FILESCOUT_TEST_FROZEN=1, or on CI, it is
built first (`--freeze-only`, about a minute; PyInstaller from the `freeze` extra); otherwise,
without one, the tests are skipped."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import documents, procfs
from harness.fake_openai import FakeOpenAI
from harness.wire import ProgressClient, start_command, wait_until_idle
from harness.workspaces import generate

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "editor-clients" / "vscode" / "scripts" / "build-platform-vsix.py"
NAME = "filescout.exe" if sys.platform == "win32" else "filescout"

# Each defines one name the outline must find: the grammars the build takes from the language
# pack, and C# from a package of its own.
OUTLINED = {
    "src/app/greeting.py": ("def say_hello(name):\n    return f'hello {name}'\n", "say_hello"),
    "src/app/rocket.rs": ("pub fn launch_rocket(speed: u32) -> u32 {\n    speed\n}\n", "launch_rocket"),
    "src/app/server.go": ("package app\n\nfunc ServeOrders() int {\n\treturn 1\n}\n", "ServeOrders"),
    "web/page.ts": (
        "export function renderCheckout(total: number): string {\n  return `${total}`;\n}\n",
        "renderCheckout",
    ),
    "lib/Ledger.java": (
        "public class Ledger {\n  public int balanceOf(String id) { return 0; }\n}\n",
        "Ledger",
    ),
    "lib/Widget.cs": ("public class Widget {\n  public void Spin() {}\n}\n", "Widget"),
}
# A Twilio account id on a line of prose: only detect-secrets' Twilio detector takes it for a
# secret (no name or separator before it, too little entropy for the generic rules).
TWILIO_ID = "ACb7d2f9e4a1c3e5a7c9d2b4e6f8a0c2d4"
PLANTED = {"docs/alerts.md": f"# Alerts\n\nThe SMS account is {TWILIO_ID} for the night shift.\n"}
WORKER_MARK = b"--multiprocessing-fork"


def _on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _built() -> Path | None:
    found = sorted((REPO / "build" / "frozen").glob(f"*/dist/filescout/{NAME}"))
    return found[0] if found else None


@pytest.fixture(scope="module")
def frozen() -> Path:
    """The frozen program: named, built now, or left by the build script before."""
    if named := os.environ.get("FILESCOUT_FROZEN"):
        return Path(named)
    if os.environ.get("FILESCOUT_TEST_FROZEN", "").strip() not in ("", "0") or _on_ci():
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(BUILD_SCRIPT), "--freeze-only"], capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, done.stderr[-4000:]
        figures = json.loads(done.stdout.splitlines()[-1])
        print(f"frozen in {time.perf_counter() - started:.0f} s: {figures}", file=sys.stderr)
        return Path(figures["program"])
    program = _built()
    if program is None:
        pytest.skip("no frozen build: run build-platform-vsix.py, or set FILESCOUT_TEST_FROZEN=1")
    return program


@pytest.fixture
def recording_git(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A `git` ahead of the real one on the PATH that notes the LD_LIBRARY_PATH it was started
    with, then runs the real one: (its folder, its notes)."""
    real = shutil.which("git")
    if real is None:
        pytest.skip("git not found")
    folder, notes = tmp_path / "bin", tmp_path / "git-environment.txt"
    folder.mkdir()
    script = folder / "git"
    script.write_text(
        f'#!/bin/sh\necho "LD_LIBRARY_PATH=${{LD_LIBRARY_PATH-unset}}" >> "{notes}"\nexec "{real}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    yield folder, notes


DOCUMENTS = {  # their readers (pypdf; the standard library's zip and expat) must be in the bundle
    "docs/frozen-spec.pdf": documents.pdf(["Scope.", "Retries."], title="Frozen specification"),
    "docs/frozen-review.docx": documents.docx(["The review."], title="Frozen review"),
}
DOCUMENT_SUMMARIES = {
    "docs/frozen-spec.pdf": "PDF document “Frozen specification”, 2 pages",
    "docs/frozen-review.docx": "Word document “Frozen review”",
}


def make_workspace(root: Path) -> Path:
    generate(root, 120, seed=3)  # enough to queue a batch for the workers
    for relative, text in {**{path: text for path, (text, _) in OUTLINED.items()}, **PLANTED}.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    for relative, data in DOCUMENTS.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


async def file_item(client: ProgressClient, relative: str) -> dict:
    (item,) = (await client.result("files/getFiles", {"paths": [relative]}))["items"]
    return item


def pool_workers(pid: int) -> list[int]:
    return [child for child in procfs.descendants(pid) if WORKER_MARK in procfs.command_line(child)]


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; the library path is Linux's")
@pytest.mark.timeout(900)
async def test_serves_indexes_with_workers_outlines_and_leaves_git_the_system_libraries(
    frozen: Path, recording_git: tuple[Path, Path], tmp_path: Path
) -> None:
    root = make_workspace(tmp_path / "ws")
    folder, notes = recording_git
    env = {
        "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
        "FILESCOUT_WORKERS": "1",
        "FILESCOUT_BACKGROUND": "0",
    }
    client = await start_command(
        [str(frozen), "serve"], root, tmp_path / "cache", kind=ProgressClient, env=env
    )
    assert isinstance(client, ProgressClient)
    try:
        await client.wait_for_progress("end", timeout=300)
        workers = pool_workers(client.pid)  # the pool outlives its work by half a minute
        status = await client.command("filescout.status")
        outlines = {
            relative: (await file_item(client, relative))["summary"] for relative in [*OUTLINED, *DOCUMENTS]
        }
    finally:
        await client.stop()

    assert workers, "the frozen server started no worker process"
    program = str(frozen.resolve()).encode()
    assert all(
        procfs.command_line(pid) == b"" or procfs.command_line(pid).startswith(program) for pid in workers
    )
    assert status["byStatus"].get("annotated", 0) >= 120, status["byStatus"]
    assert set(status["byStatus"]) <= {"annotated", "skipped"}, status["byStatus"]
    for relative, (_, name) in OUTLINED.items():
        assert name in outlines[relative], (relative, outlines[relative])
    for relative, summary in DOCUMENT_SUMMARIES.items():
        assert outlines[relative].startswith(summary), (relative, outlines[relative])

    bundled = str(frozen.parent / "_internal")
    started_with = notes.read_text().splitlines()
    assert started_with, "git never ran"
    assert not any(bundled in line for line in started_with), started_with


@pytest.mark.timeout(900)
async def test_a_model_never_sees_what_detect_secrets_finds(frozen: Path, tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws")
    fake = FakeOpenAI().start()
    log = tmp_path / "server.log"
    options = {"model": {"model": "test-model", "baseUrl": fake.base_url, "apiKey": "test-key", "timeout": 5}}
    try:
        client = await start_command(
            [str(frozen), "serve"],
            root,
            tmp_path / "cache",
            kind=ProgressClient,
            env={"FILESCOUT_BACKGROUND": "0"},
            stderr=log,
            initialization_options=options,
        )
        try:
            await wait_until_idle(client, 300)
            item = await file_item(client, "docs/alerts.md")
        finally:
            await client.stop()
    finally:
        fake.stop()

    assert item["annotator"].startswith("model:"), item
    sent = "".join(request.raw for request in fake.requests)
    assert "### docs/alerts.md (" in sent
    assert TWILIO_ID not in sent
    assert "is not the release redaction's screen was checked against" not in log.read_text()


def test_the_mcp_face_answers_and_the_postgres_driver_loads(frozen: Path, tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws")
    env = {**os.environ, "FILESCOUT_CACHE_DIR": str(tmp_path / "cache"), "FILESCOUT_BACKGROUND": "0"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    with subprocess.Popen(
        [str(frozen), "mcp", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    ) as mcp:
        assert mcp.stdin is not None and mcp.stdout is not None
        mcp.stdin.write(json.dumps(initialize).encode() + b"\n")
        mcp.stdin.flush()
        reply = json.loads(mcp.stdout.readline())
        mcp.stdin.close()
        mcp.wait(timeout=60)
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"], reply

    # Port 1 refuses: the driver and libpq loaded, and got as far as connecting.
    done = subprocess.run(
        [str(frozen), "cache", "status", str(root)],
        env={**env, "FILESCOUT_SHARED_CACHE": "postgresql://nobody@127.0.0.1:1/x", "PSYCOPG_IMPL": "binary"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "connection refused" in (done.stdout + done.stderr).lower(), done.stdout + done.stderr
