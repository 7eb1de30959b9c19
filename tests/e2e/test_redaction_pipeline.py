"""Secrets planted across a workspace never reach the model, through the whole pipeline (scan,
structural outline, excerpt, the real openai client, the relevance prompts), checked against
every request body the fake server received; and a file named like a token still gets its model
annotation and can still be judged."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from harness.fake_openai import FakeOpenAI
from harness.support import (
    as_dict,
    execute,
    file_item,
    make_workspace,
    start_client,
    stop_client,
    wait_for_indexing,
)

TOKEN_NAME = "ghp_R8x2Lk9QmT4vZ7nB1cW5yH3jD6fS0aPeUoIq"
TOKEN_FILE = f"keys/{TOKEN_NAME}.py"
SECRETS = [
    "7f3kQ9zLx2VbN8mRt4YwPq1sDcE6hJ0a",
    "u9Fq2LxZ7mKp3VtR8wYs1NcB6hJd0gEa",
    "Xq7!mP2#vL9zR4tW",
    "kube7Yq2Lx9Mp4Zr8Kt3Wn6Vb1Hs5Jd0",
    "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlF",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AKIAZ4QW7TPLMN3X8KJD",
    "glpat-xY8zQ2mK7pL4vN9rT1wB",
    "xoxb-2048-4096-Kq8Zr2Lm9Xw3",
    "npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
    "s3cr3tPa55",
    TOKEN_NAME,
]
PLANTED = {
    "src/shop/api_client.py": (
        '"""Client for the billing API."""\n'
        "import urllib.request\n\n"
        'SERVICE_CREDS = "u9Fq2LxZ7mKp3VtR8wYs1NcB6hJd0gEa"\n'
        'AWS_ACCESS_KEY_ID = "AKIAZ4QW7TPLMN3X8KJD"\n\n\n'
        "def fetch_invoices(url):\n"
        "    request = urllib.request.Request(url)\n"
        '    request.add_header("Authorization", "Bearer 7f3kQ9zLx2VbN8mRt4YwPq1sDcE6hJ0a")\n'
        "    return urllib.request.urlopen(request)\n"
    ),
    "infra/prod.tfvars": (
        'region  = "eu-west-1"\n'
        'db_user = "billing"\n'
        'db_pass = "Xq7!mP2#vL9zR4tW"\n'
        'db_url  = "postgres://billing:s3cr3tPa55@db.internal/billing"\n'
    ),
    "deploy/kubeconfig.yaml": (
        "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n"
        "    token: kube7Yq2Lx9Mp4Zr8Kt3Wn6Vb1Hs5Jd0\n"
        "    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB\n"
    ),
    "docs/setup.md": (
        "# Setup\n\nPut this in `~/.npmrc`:\n\n"
        "    //registry.npmjs.org/:_authToken=npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5\n\n"
        "and this in `~/.aws/credentials`:\n\n"
        "    aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n\n"
        "CI pushes with `glpat-xY8zQ2mK7pL4vN9rT1wB` and posts to Slack as `xoxb-2048-4096-Kq8Zr2Lm9Xw3`.\n"
    ),
    TOKEN_FILE: '"""Loads the signing keys for webhooks."""\n\n\ndef load_keys():\n    return []\n',
}


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def model_options(fake: FakeOpenAI) -> dict:
    return {"model": {"model": "test-model", "baseUrl": fake.base_url, "apiKey": "test-key", "timeout": 5}}


async def wait_for_model(client, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = as_dict(await execute(client, "filescout.status"))["model"]
        if status["state"] != "active" and status["queuedFiles"] == 0:
            return status
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.1)


async def test_planted_secrets_never_leave_and_a_token_named_file_is_annotated(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    root = make_workspace(tmp_path / "ws", git=False)
    for relative, text in PLANTED.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    fake.judge_score = lambda path: 9.0 if "[REDACTED]" in path or "api_client" in path else 1.0
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake))
    try:
        await wait_for_indexing(client)
        status = await wait_for_model(client)
        assert status["state"] == "idle"
        text = "".join(r.text for r in fake.requests)
        for relative in PLANTED:
            if relative != TOKEN_FILE:
                assert f"### {relative} (" in text, relative  # every planted file was sent
        assert "### keys/[REDACTED].py (" in text

        item = await file_item(client, TOKEN_FILE)
        assert item["summary"] == "Model summary of keys/[REDACTED].py."
        assert item["status"] == "annotated" and item["annotator"].startswith("model:")
        for relative in PLANTED:
            assert (await file_item(client, relative))["annotator"].startswith("model:"), relative

        deadline = time.monotonic() + 30
        found = {}
        while TOKEN_FILE not in found and time.monotonic() < deadline:
            result = as_dict(
                await client.protocol.send_request_async(
                    "files/findRelevant",
                    {"query": "which module loads the webhook signing keys", "limit": 5},
                )
            )
            found = {entry["path"]: entry for entry in result["items"]}
        assert TOKEN_FILE in found, found  # judged under its shown name, matched back
        assert found[TOKEN_FILE]["stage"] in ("judge", "final")
        assert {r.kind for r in fake.requests} >= {"annotate", "judge"}

        bodies = [request.raw for request in fake.requests]
        for secret in SECRETS:
            assert not any(secret in body for body in bodies), secret
    finally:
        await stop_client(client)
