"""The repository's history through the server: in a git work tree, findRelevant names the past
commits that make a file relevant."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness.support import as_dict, start_client, stop_client, wait_for_indexing

FILES = {
    "app/billing.py": (
        '"""Billing: currency conversion of invoice totals, with rounding to cents."""\n\n'
        "def convert_currency(amount, rate):\n    return round(amount * rate, 2)\n"
    ),
    "lib/rates.py": "TABLE = {'eur': 1.1}\n",
}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    command = ["git", "-c", "user.name=filescout", "-c", "user.email=t@example.invalid", "-C", str(root)]
    return subprocess.run(
        [*command, *args], check=True, capture_output=True, env=env, text=True
    ).stdout.strip()


async def test_find_relevant_names_the_similar_past_commit(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for relative, text in FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Initial import")
    (root / "lib/rates.py").write_text("TABLE = {'eur': 1.1}\nSCALE = 100\n")
    git(root, "commit", "-q", "-am", "Fix rounding error in currency conversion totals")
    sha = git(root, "rev-parse", "--short=7", "HEAD")
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)  # the history is read before the pass's progress ends
        result = as_dict(
            await client.protocol.send_request_async(
                "files/findRelevant", {"query": "rounding error in currency conversion", "limit": 5}
            )
        )
    finally:
        await stop_client(client)
    reasons = {item["path"]: item["reason"] for item in result["items"]}
    assert (
        f"changed by similar past commits: Fix rounding error in currency conversion totals ({sha})"
        in reasons["lib/rates.py"]
    )
    assert "past commits" not in reasons["app/billing.py"]
