"""A root no editor should index — a kernel view such as /proc, the file system's root — is
refused at start with a message the user sees, from the server and from the command line; the
server stays responsive and shuts down when asked."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, client_capabilities

from harness import launch
from harness.support import SERVER_COMMAND, make_client, make_workspace


@pytest.mark.parametrize(
    ("root", "said"),
    [("/proc", "view of the running system"), ("/", "the file system's root")],
)
async def test_the_server_refuses_a_root_that_is_no_project(tmp_path: Path, root: str, said: str) -> None:
    if root == "/proc" and not os.path.exists("/proc/self"):
        pytest.skip("no /proc here")
    config = ClientServerConfig(
        server_command=SERVER_COMMAND,
        client_factory=make_client,
        server_env={**os.environ, "FILESCOUT_CACHE_DIR": str(tmp_path / "cache")},
    )
    client = await config.start()
    try:
        uri = Path(root).as_uri()
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual_studio_code"),
                root_uri=uri,
                workspace_folders=[types.WorkspaceFolder(uri=uri, name="root")],
            )
        )
        started = time.monotonic()
        with pytest.raises(JsonRpcException) as caught:
            await client.protocol.send_request_async("files/getFiles", {})
        assert time.monotonic() - started < 10  # answered, not after a walk of the whole disk
        assert caught.value.code == -32010
        assert said in caught.value.message
        shown = [message.message for message in client.messages]
        assert any(said in message for message in shown), shown
    finally:
        await client.shutdown_session()  # answered: nothing is being walked
        await client.stop()
    assert not (tmp_path / "cache").exists()


def test_the_command_line_refuses_the_home_folder_unless_told_to(tmp_path: Path) -> None:
    home = make_workspace(tmp_path / "home", git=False)
    env = {**os.environ, "HOME": str(home), "FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}

    def status(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            launch.command("status", str(home)),
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
        )

    refused = status()
    assert refused.returncode == 1
    assert "your home folder" in refused.stderr
    assert "FILESCOUT_ALLOW_ANY_ROOT=1" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert status(FILESCOUT_ALLOW_ANY_ROOT="1").returncode == 0
