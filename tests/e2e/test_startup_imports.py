"""End to end: what starting up imports. The path to a query-ready index needs neither the model
client, nor the MCP SDK, nor secret detection, nor the relevance stages; each costs startup time
and is imported where it is first needed. These tests read the modules a real `filescout index`
and a real `filescout serve` hold when they exit, so an import added on the way cannot undo it
unnoticed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import IO, Any

from harness import launch, wire
from harness.support import make_workspace, run_git

TIMEOUT = 60.0
NEVER_AT_STARTUP = (
    "openai",  # the model client: only once a model is configured
    "mcp",  # the MCP SDK: only `filescout mcp`
    "detect_secrets",  # redaction's rules: only for a text its screen holds back
    "psycopg",  # the team's shared cache: only when one is configured
    "filescout.mcp",
    "filescout.relevance.find",  # the relevance stages: at the first question
    "filescout.relevance.prefilter",
)


def environment(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "FILESCOUT_CACHE_DIR": "",
        "FILESCOUT_TEST_MODULES": str(tmp_path / "modules.txt"),
    }


def imported(tmp_path: Path) -> set[str]:
    return set((tmp_path / "modules.txt").read_text().split("\n"))


def unexpected(modules: set[str]) -> list[str]:
    return sorted(
        name for name in modules if name.split(".")[0] in NEVER_AT_STARTUP or name in NEVER_AT_STARTUP
    )


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    body = wire.read_body(stream)
    return None if body is None else json.loads(body)


def serve_until_ready(root: Path, env: dict[str, str]) -> None:
    """Start the server, let it verify the index against the tree, and shut it down."""
    process = subprocess.Popen(
        launch.probed("serve"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        initialize = {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {}}
        process.stdin.write(
            wire.encode({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
        )
        process.stdin.flush()
        while (message := read_message(process.stdout)) is not None and message.get("id") != 1:
            pass
        process.stdin.write(wire.encode({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        process.stdin.flush()
        phases = []
        while (message := read_message(process.stdout)) is not None:
            if message.get("method") == "filescout/status":
                phases.append(message["params"]["phase"])
                if phases[-1] == "idle" and "annotating" in phases:
                    break
        assert "annotating" in phases, f"the server never became ready: {phases}"
        process.stdin.write(wire.encode({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        process.stdin.write(wire.encode({"jsonrpc": "2.0", "method": "exit"}))
        process.stdin.flush()
        assert process.wait(timeout=TIMEOUT) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_index_without_a_model_imports_no_model_client_sdk_or_relevance(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=True)
    env = environment(tmp_path)
    subprocess.run(launch.probed("index", str(root)), env=env, check=True, timeout=TIMEOUT)
    modules = imported(tmp_path)
    assert "filescout.engine" in modules and "filescout.scan.tree" in modules  # the probe saw the run
    assert unexpected(modules) == []


def test_a_warm_server_start_imports_no_annotation_grammar_model_client_or_relevance(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    env = environment(tmp_path)
    subprocess.run(launch.command("index", str(root)), env=env, check=True, timeout=TIMEOUT)
    serve_until_ready(root, env)
    modules = imported(tmp_path)
    assert "filescout.lsp.handlers" in modules and "filescout.scan.tree" in modules
    # Nothing changed, so nothing is annotated: the grammars are not loaded either.
    assert unexpected(modules) == []
    assert "tree_sitter_language_pack" not in modules


VAULT = '''"""The vault: where the service keeps what it must not show."""


def open_vault(path: str, api_token: str = "Zk82HqLmNw3xTr7VbC1pYs9dFg4jK6uE") -> None:
    """Open the vault at `path`."""
'''


def test_a_query_answered_from_a_current_index_redacts_without_the_secret_detection_package(
    tmp_path: Path,
) -> None:
    """What `find` shows goes through every redaction rule where the screen holds a text back (a
    definition quoting a key, here), from the catalogue of detect-secrets' detectors: the
    package, which imports requests, urllib3 and ssl, is not loaded."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "vault.py").write_text(VAULT, encoding="utf-8")
    for arguments in (("init", "-q"), ("add", "src"), ("commit", "-q", "-m", "vault")):
        run_git(root, *arguments)  # git lists the files: a current index, known without a walk
    env = environment(tmp_path)
    subprocess.run(
        launch.command("index", str(root)), env=env, check=True, timeout=TIMEOUT, capture_output=True
    )
    found = subprocess.run(
        launch.probed("find", str(root), "open the vault", "--no-model"),
        env=env,
        check=True,
        timeout=TIMEOUT,
        capture_output=True,
        text=True,
    )
    modules = imported(tmp_path)
    assert "src/vault.py" in found.stdout and "[REDACTED]" in found.stdout  # the rules ran on it
    assert "Zk82HqLmNw3xTr7VbC1pYs9dFg4jK6uE" not in found.stdout
    assert "filescout.relevance.find" in modules
    assert "filescout.engine.passes" not in modules  # answered from the index as it is
    assert sorted(name for name in modules if name.split(".")[0] in ("detect_secrets", "requests")) == []
    # A one-shot command never keeps the content search's top-k store: neither it nor tantivy.
    assert sorted(name for name in modules if name in ("filescout.index.topk", "tantivy")) == []
