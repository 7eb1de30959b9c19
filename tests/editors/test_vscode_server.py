"""The VS Code extension and its server in a real VS Code: the folder's output, first-index progress
and its cancel button, a folder another filescout process indexes, the API key in secret storage,
the API and the language-model tool another extension uses, and the server found with no setting
(in ~/.local/bin, in the Python extension's interpreter, or installed by the extension itself)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from editors.code_server import CodeServer, build_probe_vsix, install_extension
from editors.conftest import SERVER, EditorTools, VSCode, make_folder
from editors.workbench import wait_until
from harness.fake_openai import Action, FakeOpenAI, Request
from harness.workspaces import generate

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.skipif(sys.platform != "linux", reason="the scenarios read /proc and use POSIX shells"),
]


def output_log(server: CodeServer, folder: str) -> str:
    """What the folder's output channel shows ("filescout (NAME)"): VS Code keeps each extension
    output channel in a file under the window's logs."""
    logs = sorted((server.user_data / "logs").rglob(f"*filescout ({folder}).log"))
    return "\n".join(log.read_text(errors="replace") for log in logs)


def test_each_server_log_line_shows_once(vscode: VSCode, tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "shop")
    server = vscode.server()
    bench = vscode.open(folder=folder, server=server)
    bench.wait_status(r"^filescout: 5 files$", timeout=90)
    bench.run_command("filescout: Reindex Workspace")
    bench.wait_toast(r"reindexed")

    def scans() -> list[str]:
        return re.findall(r".*scan: 5 files.*", output_log(server, "shop"))

    # The first pass and the reindex, each once (stderr's line, not also as `window/logMessage`).
    wait_until(scans, lambda lines: len(lines) >= 2, 30, "two scan lines in the output")
    time.sleep(1)
    assert len(scans()) == 2, scans()
    log = output_log(server, "shop")
    assert not re.search(r"^\[(Info|Warn|Error|Trace)", log, re.MULTILINE), log
    assert "Traceback" not in log, log
    assert "(from the filescout.serverCommand setting)" in log, log


def test_first_index_shows_a_notification_whose_cancel_stops_it(vscode: VSCode, tmp_path: Path) -> None:
    folder = tmp_path / "big"
    generate(folder, 5000, seed=3)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    bench = vscode.open(folder=folder)

    toast = bench.wait_toast(r"filescout: indexing big", timeout=90)
    assert "Cancel" in toast.buttons, toast
    bench.click_toast_button(r"filescout: indexing big", "Cancel")
    wait_until(
        bench.toasts,
        lambda toasts: not any("indexing big" in toast.message for toast in toasts),
        15,
        "the indexing notification gone",
    )
    items = bench.wait_status(r"^filescout: \d+ files$", timeout=30)
    files = int(re.search(r"(\d+) files", items[0]).group(1))  # type: ignore[union-attr]
    tooltip = bench.hover_text(r"filescout: \d+ files")
    assert "indexing cancelled" in tooltip, tooltip
    bench.run_command("filescout: Show Index Status")
    toast = bench.wait_toast(r"big has")
    assert "indexing cancelled" in toast.message and "Reindex Workspace" in toast.message, toast
    # It stays stopped: nothing indexes the rest behind the user's back.
    time.sleep(3)
    assert bench.wait_status(r"^filescout: \d+ files$") == [f"filescout: {files} files"]


class Writer:
    """`filescout serve` on a folder, initialized by a minimal client of its own: another
    process that writes the folder's index (as another editor window would)."""

    def __init__(self, folder: Path, env: dict[str, str], log: Path) -> None:
        self.log = log
        self.process = subprocess.Popen(
            [str(SERVER), "serve"],
            cwd=folder,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log.open("wb"),
        )
        self.initialized = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()
        # No work-done progress nor dynamic registration: the server asks this client nothing.
        params = {"processId": os.getpid(), "rootUri": folder.as_uri(), "capabilities": {}}
        self._send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        if not self.initialized.wait(60):
            raise AssertionError(f"the other process did not answer initialize: {log.read_text()}")
        self._send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def _send(self, message: dict[str, object]) -> None:
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _drain(self) -> None:
        """Reads what the server writes; the answer to `initialize` sets `initialized`."""
        assert self.process.stdout is not None
        stream = self.process.stdout
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = stream.read(1)
                if not byte:
                    return
                header += byte
            length = int(re.search(rb"Content-Length: *(\d+)", header, re.IGNORECASE).group(1))  # type: ignore[union-attr]
            if json.loads(stream.read(length)).get("id") == 1:
                self.initialized.set()

    def wait_indexed(self, timeout: float = 60) -> None:
        wait_until(
            lambda: self.log.read_text(errors="replace"),
            lambda text: "scan:" in text,
            timeout,
            "the other process's first scan",
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self._send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            self._send({"jsonrpc": "2.0", "method": "exit"})
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def test_a_folder_another_process_indexes_says_so_and_what_to_do(vscode: VSCode, tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "shop")
    cache = tmp_path / "cache"
    server = vscode.server(
        vscode.settings(**{"filescout.exclude": ["tests/"]}), env={"FILESCOUT_CACHE_DIR": str(cache)}
    )
    env = {**os.environ, "FILESCOUT_CACHE_DIR": str(cache)}
    writer = Writer(folder, env, tmp_path / "writer.log")
    try:
        writer.wait_indexed()
        pid = writer.process.pid
        bench = vscode.open(folder=folder, server=server)
        bench.wait_status(r"^filescout: 5 files$", timeout=90)
        # The setting that cannot apply is named, with why and when it will.
        toast = bench.wait_toast(r"filescout.exclude does not apply", timeout=30)
        assert f"pid {pid}, `filescout serve`" in toast.message, toast
        assert "takes over" in toast.message, toast
        assert f"pid {pid}" in bench.hover_text(r"filescout: 5 files")
        bench.dismiss_toasts()

        bench.run_command("filescout: Reindex Workspace")
        toast = bench.wait_toast(r"cannot reindex")
        assert toast.message == (
            f"filescout: shop is indexed by another filescout process (pid {pid}, `filescout serve`), so this "
            "window cannot reindex it. It takes over when that process exits: stop it (or close the other "
            "window), or reindex there."
        ), toast
        assert "Error" not in toast.message
        bench.dismiss_toasts()
        bench.run_command("filescout: Show Index Status")
        toast = bench.wait_toast(r"shop has 5 files")
        assert f"Indexed by another filescout process (pid {pid}, `filescout serve`)" in toast.message, toast
        assert "takes over when that process exits" in toast.message, toast
        bench.dismiss_toasts()

        # The other process exits: this window's server takes over and applies the exclude.
        writer.stop()
        bench.wait_status(r"^filescout: 4 files$", timeout=60)
        wait_until(
            lambda: bench.hover_text(r"filescout: 4 files"),
            lambda tooltip: "another" not in tooltip,
            20,
            "a tooltip without the other process",
        )
        bench.run_command("filescout: Reindex Workspace")
        toast = bench.wait_toast(r"reindexed")
        assert toast.message == "filescout: shop reindexed, 4 files (no changes).", toast
    finally:
        writer.stop()


KEY = "sk-test-stored-key-7f3a"


class KeyedOpenAI(FakeOpenAI):
    """Answers only requests that carry the key, as a real endpoint would."""

    def _respond(self, request: Request) -> tuple[int, dict[str, str], str, Action]:
        if request.headers.get("authorization") != f"Bearer {KEY}":
            return (
                401,
                {},
                json.dumps({"error": {"message": "bad key", "type": "invalid_request_error"}}),
                Action(),
            )
        return super()._respond(request)


@pytest.fixture
def model() -> Iterator[KeyedOpenAI]:
    fake = KeyedOpenAI().start()
    yield fake
    fake.stop()


def test_the_api_key_goes_to_secret_storage_and_reaches_the_model(
    vscode: VSCode, tmp_path: Path, model: KeyedOpenAI
) -> None:
    folder = make_folder(tmp_path / "shop")
    server = vscode.server(
        vscode.settings(**{"filescout.model.model": "fake-model", "filescout.model.baseUrl": model.base_url})
    )
    bench = vscode.open(folder=folder, server=server)
    bench.wait_status(r"filescout: .*\d+", timeout=90)

    bench.run_command("filescout: Set API Key")
    bench.wait_input()
    bench.page.keyboard.type(KEY)
    bench.page.keyboard.press("Enter")
    bench.wait_toast(r"API key stored")
    wait_until(
        lambda: [request.headers.get("authorization") for request in model.requests],
        lambda keys: f"Bearer {KEY}" in keys,
        60,
        "a model request with the stored key",
    )
    # Kept in secret storage, never in the settings.
    settings = (server.user_data / "User" / "settings.json").read_text()
    assert KEY not in settings


def test_another_extension_uses_the_api_and_the_language_model_tool(vscode: VSCode, tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "shop")
    bench = vscode.open(folder=folder)
    bench.wait_status(r"^filescout: 5 files$", timeout=90)

    bench.run_command("Probe: Ask filescout's API for Status")
    assert bench.wait_toast(r"^probe status").message == "probe status: 5 files, idle"

    bench.run_command("Probe: Ask filescout's API for Relevant Files")
    bench.answer("refund a stripe charge")
    toast = bench.wait_toast(r"^probe find")
    assert toast.message.startswith("probe find: src/shop/payments/stripe_gateway.py"), toast

    bench.run_command("Probe: Invoke the filescout Tool")
    bench.answer("refund a stripe charge")
    toast = bench.wait_toast(r"^probe tool")
    assert toast.message.startswith("probe tool: <filescout-files"), toast
    assert "src/shop/payments/stripe_gateway.py" in toast.message, toast

    bench.run_command("Probe: Map the Workspace with filescout")
    toast = bench.wait_toast(r"^probe overview")
    # The whole tree of five files fits in 400 tokens (the probe shows the block's start only).
    assert toast.message.startswith('probe overview: <filescout-overview files="5" shown="5">'), toast


def test_with_no_setting_the_server_is_found_where_pip_user_puts_it(vscode: VSCode, tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "shop")
    server = vscode.server({})
    bench = vscode.open(folder=folder, server=server)

    # Nothing anywhere: one message, which offers to install a server.
    toast = bench.wait_toast(r"no filescout server was found", timeout=90)
    assert toast.buttons[:2] == ["Install filescout", "How to Install"], toast
    bench.wait_status(r"not running")
    # How to install: the commands, with the private environment's real path, and what to do offline.
    bench.click_toast_button(r"no filescout server was found", "How to Install")
    help_text = wait_until(
        lambda: output_log(server, "shop"),
        lambda text: "--no-index --find-links" in text,
        20,
        "the install help in the output",
    )
    venv = re.search(r"-m venv (\S+)", help_text)
    assert venv and venv.group(1).endswith("/globalStorage/filescout.filescout/venv"), help_text
    assert f"{venv.group(1)}/bin/python -m pip install --upgrade filescout" in help_text, help_text
    assert "pipx install filescout" in help_text and "filescout: Restart Server" in help_text, help_text

    # A `filescout` in ~/.local/bin (what pip --user, pipx and uv tool leave there), not on the PATH.
    program = server.home / ".local" / "bin" / "filescout"
    program.parent.mkdir(parents=True)
    program.write_text(f'#!/bin/sh\nexec "{SERVER}" "$@"\n')
    program.chmod(0o755)
    bench.dismiss_toasts()
    bench.run_command("filescout: Restart Server")
    bench.wait_status(r"^filescout: 5 files$", timeout=60)
    assert len(server.processes(" serve")) == 1, server.processes(" serve")
    assert f"starting {program} serve (from ~/.local/bin)" in output_log(server, "shop")
    assert not bench.toasts(), bench.toasts()


FAKE_PYTHON = """#!/bin/sh
# A stand-in for python3 that records its calls: `-m venv DIR` makes DIR/bin/python (this script),
# and that python's `-m pip install ... filescout` puts a filescout into DIR/bin.
echo "$0 $*" >> "{calls}"
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && chmod +x "$3/bin/python"
  echo "created $3"
elif [ "$1 $2 $3" = "-m pip install" ]; then
  bin=$(dirname "$0")
  printf '#!/bin/sh\\nexec "{server}" "$@"\\n' > "$bin/filescout" && chmod +x "$bin/filescout"
  echo "Successfully installed filescout"
else
  exit 2
fi
"""


def test_install_filescout_sets_up_the_private_environment_and_starts_the_server(
    vscode: VSCode, tmp_path: Path
) -> None:
    """The "Install filescout" button runs `python3 -m venv` and `pip install filescout` (here a
    stand-in python3 that needs no network, first on the login shell's PATH), shows them, and
    starts the server from the environment it made."""
    folder = make_folder(tmp_path / "shop")
    server = vscode.server({})
    calls = tmp_path / "python-calls.log"
    fake_bin = server.home / "fake-bin"
    fake_bin.mkdir()
    (fake_bin / "python3").write_text(FAKE_PYTHON.format(calls=calls, server=SERVER))
    (fake_bin / "python3").chmod(0o755)
    # The extension host gets a login shell's PATH: the stand-in comes first on it.
    (server.home / ".profile").write_text(f'PATH="{fake_bin}:$PATH"\n')
    server.stop()
    server.start()
    bench = vscode.open(folder=folder, server=server)

    bench.wait_toast(r"no filescout server was found", timeout=90)
    bench.click_toast_button(r"no filescout server was found", "Install filescout")
    bench.wait_status(r"^filescout: 5 files$", timeout=90)
    made = calls.read_text().splitlines()
    assert len(made) == 2, made
    venv = made[0].split(" -m venv ")[1]
    assert made[0] == f"{fake_bin}/python3 -m venv {venv}" and venv.endswith("filescout.filescout/venv"), made
    assert made[1] == f"{venv}/bin/python -m pip install --upgrade filescout", made
    log = output_log(server, "shop")
    assert f"$ {fake_bin}/python3 -m venv {venv}" in log and "Successfully installed filescout" in log, log
    assert f"starting {venv}/bin/filescout serve (from the extension's private environment)" in log, log


def test_with_no_setting_the_python_extensions_interpreter_is_used(
    editor_tools: EditorTools, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """With the Python extension present (here a stand-in with its API), the interpreter it selected
    for the folder runs the server when filescout is installed in it."""
    extensions = tmp_path / "extensions"
    shutil.copytree(editor_tools.extensions_dir, extensions, symlinks=True)
    fake = build_probe_vsix(tmp_path / "fake-python.vsix", source="fake_python")
    install_extension(editor_tools.binary, fake, extensions, tmp_path / "install-user-data")
    editor = VSCode(EditorTools(editor_tools.binary, editor_tools.vsix, extensions), tmp_path / "editor")
    try:
        interpreter = SERVER.parent / "python"
        server = editor.server({}, env={"FILESCOUT_TEST_INTERPRETER": str(interpreter)})
        bench = editor.open(folder=make_folder(tmp_path / "shop"), server=server)
        bench.wait_status(r"^filescout: 5 files$", timeout=90)
        log = output_log(server, "shop")
        assert (
            f"starting {interpreter} -m filescout serve (from the Python extension's interpreter)" in log
        ), log
    except BaseException:
        print(f"\nscreenshots and logs: {editor.keep_artifacts(request.node.nodeid)}", file=sys.stderr)
        raise
    finally:
        editor.close()
