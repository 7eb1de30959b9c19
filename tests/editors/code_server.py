"""A real VS Code for the extension's tests: code-server (VS Code's workbench served to a browser, with
a real extension host) from npm, and the extension's VSIX.

code-server's install script downloads from GitHub and refuses to run as root, and VS Code's own
download servers (which @vscode/test-electron needs) are out of reach on CI, so the install below
does the script's steps by hand: native modules rebuilt from source, Debian's ripgrep in place of
the downloaded one. It is cached under ~/.cache/filescout-editors (FILESCOUT_EDITORS_CACHE), built
in a scratch folder and moved into place when complete, so an interrupted install is redone."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

VERSION = "4.100.3"  # VS Code 1.100.3; the newest code-server whose engines.node accepts Node 20
NODE_MAJOR = 20
REPO = Path(__file__).resolve().parents[2]
# The extension to test: this checkout's, or another build's (FILESCOUT_EXTENSION_SOURCE names its folder).
EXTENSION_SOURCE = Path(os.environ.get("FILESCOUT_EXTENSION_SOURCE") or REPO / "editor-clients" / "vscode")
CHROMIUM = os.environ.get("FILESCOUT_CHROMIUM", "/usr/bin/chromium")
# VS Code's native modules; their prebuilt downloads fail here, so they build from source.
NATIVE_MODULES = (
    "@parcel/watcher",
    "@vscode/spdlog",
    "@vscode/deviceid",
    "kerberos",
    "native-watchdog",
    "node-pty",
)
# Bump when the install steps change, so cached installs are redone.
RECIPE = 1
INSTALL_HINT = (
    "Debian/Ubuntu: apt-get install nodejs npm chromium ripgrep libkrb5-dev g++ make "
    "(Node.js 20); and pip install -e '.[test]' for Playwright"
)
# Workbench settings that keep the screen to what the tests look at.
QUIET_SETTINGS: dict[str, object] = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "workbench.welcomePage.walkthroughs.openOnInstall": False,
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "extensions.ignoreRecommendations": True,
    "git.enabled": False,
    "window.restoreWindows": "none",
    "files.hotExit": "off",
}


def cache_dir() -> Path:
    return Path(os.environ.get("FILESCOUT_EDITORS_CACHE") or Path.home() / ".cache" / "filescout-editors")


def _node_major() -> int | None:
    node = shutil.which("node")
    if node is None:
        return None
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
        return int(version.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def missing_prerequisites() -> list[str]:
    """What this machine lacks to run the tests, each with why; empty when all is there."""
    missing = []
    major = _node_major()
    if major != NODE_MAJOR:
        missing.append(f"Node.js {NODE_MAJOR} (code-server {VERSION} needs it; found: {major or 'none'})")
    if shutil.which("npm") is None:
        missing.append("npm")
    if not Path(CHROMIUM).exists():
        missing.append(f"Chromium at {CHROMIUM} (FILESCOUT_CHROMIUM names another)")
    if shutil.which("rg") is None:
        missing.append("ripgrep (rg), which VS Code's search uses")
    if not (cache_dir() / f"code-server-{VERSION}" / ".complete").exists():
        # Only building the native modules needs these.
        for tool, why in (("g++", "a C++ compiler"), ("make", "make"), ("krb5-config", "libkrb5-dev")):
            if shutil.which(tool) is None:
                missing.append(f"{why}, to build code-server's native modules")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("Playwright for Python (pip install -e '.[test]')")
    return missing


def _npm_env() -> dict[str, str]:
    # node-pty's build runs `npx node-gyp`, which a `yes=false` in ~/.npmrc stops.
    return {
        **os.environ,
        "npm_config_yes": "true",
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
    }


def _run(command: Sequence[str | Path], cwd: Path, log: Path, timeout: float = 900) -> None:
    """Run an install step, its output appended to `log`; fail with the output's end."""
    with log.open("a") as out:
        out.write(f"\n$ (cd {cwd} && {' '.join(map(str, command))})\n")
        out.flush()
        result = subprocess.run(
            [str(part) for part in command],
            cwd=cwd,
            env=_npm_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout,
        )
    if result.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-40:])
        raise RuntimeError(
            f"{' '.join(map(str, command))} failed in {cwd} (exit {result.returncode}):\n{tail}"
        )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One install at a time on this machine (parallel test runs share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def install_code_server() -> Path:
    """The `code-server` executable, installed first when the cache has none."""
    target = cache_dir() / f"code-server-{VERSION}"
    binary = target / "node_modules" / ".bin" / "code-server"
    marker = target / ".complete"
    with _locked(cache_dir() / ".install.lock"):
        if marker.exists() and marker.read_text().strip() == str(RECIPE):
            return binary
        scratch = cache_dir() / f"code-server-{VERSION}.partial"
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)
        scratch.mkdir(parents=True)
        log = cache_dir() / f"code-server-{VERSION}.install.log"
        log.write_text("")
        (scratch / "package.json").write_text('{"name": "filescout-editors", "private": true}\n')
        _run(["npm", "install", "--ignore-scripts", f"code-server@{VERSION}"], scratch, log)
        _run(["npm", "rebuild", "argon2"], scratch, log)
        package = scratch / "node_modules" / "code-server"
        vscode = package / "lib" / "vscode"
        _run(["npm", "install", "--omit=dev", "--ignore-scripts"], vscode, log)
        _run(["npm", "rebuild", *NATIVE_MODULES], vscode, log)
        # @vscode/ripgrep downloads its binary from GitHub: the system's rg instead.
        ripgrep = vscode / "node_modules" / "@vscode" / "ripgrep" / "bin"
        ripgrep.mkdir(parents=True, exist_ok=True)
        (ripgrep / "rg").unlink(missing_ok=True)
        (ripgrep / "rg").symlink_to(shutil.which("rg") or "/usr/bin/rg")
        # What code-server's postinstall.sh does after installing.
        for link, source in (
            (vscode / "node_modules.asar", "node_modules"),
            (vscode / "bin" / "remote-cli" / "code-server", "code-linux.sh"),
            (vscode / "bin" / "helpers" / "browser.sh", "browser-linux.sh"),
        ):
            link.unlink(missing_ok=True)
            link.symlink_to(source)
        _run(["npm", "install", "--omit=dev", "--ignore-scripts"], vscode / "extensions", log)
        _run(["node", "postinstall.mjs"], vscode / "extensions", log)
        scratch.rename(target)
        marker.write_text(f"{RECIPE}\n")
    return binary


def build_vsix(destination: Path) -> Path:
    """The extension packaged as users install it (`npm run package`, which compiles first)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    log = destination.with_suffix(".log")
    log.write_text("")
    installed = EXTENSION_SOURCE / "node_modules" / ".package-lock.json"
    lock = EXTENSION_SOURCE / "package-lock.json"
    with _locked(cache_dir() / ".extension.lock"):
        if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
            _run(["npm", "ci"], EXTENSION_SOURCE, log)
        _run(["npm", "run", "package", "--", "-o", destination], EXTENSION_SOURCE, log, timeout=600)
    return destination


def build_probe_vsix(destination: Path, source: str = "probe") -> Path:
    """A test-only extension: probe/, which depends on filescout and uses its API and tool, or
    another folder next to it (`source`)."""
    _run(
        [
            "npx",
            "--yes",
            "@vscode/vsce@4",
            "package",
            "--allow-missing-repository",
            "--skip-license",
            "--no-dependencies",
            "-o",
            destination,
        ],
        Path(__file__).resolve().parent / source,
        destination.with_suffix(".log"),
        timeout=600,
    )
    return destination


def install_extension(binary: Path, vsix: Path, extensions_dir: Path, user_data_dir: Path) -> None:
    extensions_dir.mkdir(parents=True, exist_ok=True)
    log = extensions_dir.parent / "install-extension.log"
    _run(
        [
            binary,
            "--extensions-dir",
            extensions_dir,
            "--user-data-dir",
            user_data_dir,
            "--config",
            _config(extensions_dir.parent, 0),
            "--install-extension",
            vsix,
            "--force",
        ],
        extensions_dir.parent,
        log,
        timeout=300,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _config(root: Path, port: int) -> Path:
    config = root / "code-server.yaml"
    config.write_text(f"bind-addr: 127.0.0.1:{port}\nauth: none\ncert: false\n")
    return config


class CodeServer:
    """One code-server of a scenario's own, with its own home, user data and port, so no extension
    host or filescout server of an earlier scenario is met (code-server keeps a closed window's
    extension host alive for a while)."""

    def __init__(
        self,
        binary: Path,
        root: Path,
        extensions_dir: Path,
        settings: Mapping[str, object],
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.binary = binary
        self.root = root
        self.home = root / "home"
        self.user_data = root / "user-data"
        self.extensions_dir = extensions_dir
        self.log = root / "code-server.log"
        self.port = free_port()
        self.env = dict(env or {})
        self.process: subprocess.Popen[bytes] | None = None
        (self.user_data / "User").mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        self.write_settings(settings)

    def write_settings(self, settings: Mapping[str, object]) -> None:
        """User settings as read at start (the workbench does not pick up later edits on disk)."""
        merged = {**QUIET_SETTINGS, **settings}
        (self.user_data / "User" / "settings.json").write_text(json.dumps(merged, indent=2))

    def environment(self) -> dict[str, str]:
        """What code-server runs with, and so its extension host, its terminals and the
        filescout servers the extension starts."""
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("FILESCOUT_", "XDG_", "VSCODE_", "PYTEST_")) and key != "CI"
        }
        env.update(HOME=str(self.home), **self.env)
        return env

    def start(self, timeout: float = 60) -> None:
        env = self.environment()
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    str(self.binary),
                    "--config",
                    str(_config(self.root, self.port)),
                    "--user-data-dir",
                    str(self.user_data),
                    "--extensions-dir",
                    str(self.extensions_dir),
                    "--disable-workspace-trust",
                    "--disable-telemetry",
                    "--disable-update-check",
                    "--disable-getting-started-override",
                ],
                cwd=self.root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its extension hosts and filescout servers go with it
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"code-server exited ({self.process.returncode}):\n{self.log.read_text()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return
            time.sleep(0.2)
        raise RuntimeError(
            f"code-server did not listen on port {self.port} in {timeout} s:\n{self.log.read_text()}"
        )

    def url(self, folder: Path | None = None, workspace: Path | None = None) -> str:
        base = f"http://127.0.0.1:{self.port}/"
        if workspace is not None:
            return f"{base}?workspace={workspace}"
        return f"{base}?folder={folder}" if folder is not None else base

    def processes(self, needle: str) -> list[str]:
        """Command lines of the processes under this code-server that contain `needle`."""
        if self.process is None:
            return []
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) != self.process.pid:
                    continue
                command = (
                    (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                )
            except (OSError, ProcessLookupError):
                continue
            if needle in command:
                found.append(command)
        return found

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        # Children that outlived the leader (a filescout server finishing its writes).
        deadline = time.monotonic() + 5
        while self.processes("") and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process = None
