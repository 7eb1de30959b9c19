"""The platform's self-contained VSIX in a real VS Code, with no filescout anywhere else and no
setting: installing the extension alone is enough."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from editors.code_server import install_extension
from editors.conftest import EditorTools, VSCode, make_folder, scenario
from editors.workbench import wait_until
from harness import procfs

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "editor-clients" / "vscode" / "scripts" / "build-platform-vsix.py"
FROZEN = REPO / "build" / "frozen"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
"""Where a machine without filescout has its programs: the tests' virtual environment is not on it."""


def _frozen_is_current() -> bool:
    """Whether a frozen server built earlier (by this test, test_frozen_build.py or the build
    script) is newer than every source file it was made from."""
    built = [path for path in FROZEN.glob("*/dist/filescout/filescout") if path.is_file()]
    if not built:
        return False
    newest_source = max(path.stat().st_mtime for path in (REPO / "server" / "filescout").rglob("*.py"))
    return min(path.stat().st_mtime for path in built) > newest_source


@pytest.fixture(scope="session")
def bundled_tools(editor_tools: EditorTools, tmp_path_factory: pytest.TempPathFactory) -> EditorTools:
    """The platform VSIX, built by its script (the frozen server reused when it is current),
    installed alone into extensions of its own."""
    root = tmp_path_factory.mktemp("bundled")
    vsix = root / "filescout-platform.vsix"
    command = [sys.executable, str(BUILD_SCRIPT), "--output", str(vsix)]
    if _frozen_is_current():
        command.append("--reuse")
    built = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    extensions = root / "extensions"
    install_extension(editor_tools.binary, vsix, extensions, root / "install-user-data")
    return EditorTools(binary=editor_tools.binary, vsix=vsix, extensions_dir=extensions)


@pytest.fixture
def bundled(bundled_tools: EditorTools, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[VSCode]:
    with scenario(bundled_tools, tmp_path, request) as editor:
        yield editor


def _servers_under(folder: Path) -> list[int]:
    """filescout servers running from a program inside `folder`."""
    found = []
    for pid in procfs.descendants(1):
        argv = procfs.command_line(pid).split(b"\0")
        if argv and argv[0].startswith(str(folder).encode()) and b"serve" in argv:
            found.append(pid)
    return found


def test_the_platform_vsix_alone_runs_the_server_it_carries(bundled: VSCode, tmp_path: Path) -> None:
    assert subprocess.run(["sh", "-c", "command -v filescout"], env={"PATH": SYSTEM_PATH}).returncode != 0
    bundled.server(settings={}, env={"PATH": SYSTEM_PATH})  # no serverCommand, no pythonPath
    bench = bundled.open(folder=make_folder(tmp_path / "shop"))

    bench.wait_status(r"^filescout: 5 files$", timeout=120)
    assert not any("not running" in item for item in bench.filescout_items())
    wait_until(lambda: _servers_under(bundled.tools.extensions_dir), bool, 10, "the bundled server running")

    bench.run_command("filescout: Find Relevant Files")
    bench.answer("refund a stripe charge")
    rows = bench.wait_rows(
        lambda rows: any("stripe_gateway.py" in row for row in rows), "stripe_gateway.py listed"
    )
    assert "stripe_gateway.py" in rows[0], rows
