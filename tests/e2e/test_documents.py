"""Documents and images through the real server, the CLI and the MCP face: every PDF, Word,
PowerPoint, Excel, PNG and SVG file of a workspace is listed with a summary of its own, found by
its words, filtered by kind and format, ranked above code for a question about documents and
below it for a question about code; broken and hostile files say why; planted secrets reach
neither a client nor the model. The files are real formats, written by bench/harness/documents.py."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from harness import documents, launch
from harness.fake_openai import FakeOpenAI
from harness.mcp_client import mcp_session
from harness.support import as_dict, execute, start_client, stop_client, wait_for_indexing

SAME_CODE = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
RETRY_PAGES = [
    "Retry policy specification.\nEvery outgoing call is retried with exponential backoff and jitter.",
    "Backoff starts at 200 milliseconds and doubles up to 30 seconds; five attempts at most.",
    "Idempotent requests only: a payment capture is never retried without its idempotency key.",
]


def write_workspace(root: Path) -> Path:
    files: dict[str, bytes] = {
        "src/payments/retry.py": (
            b'"""Retry outgoing calls with exponential backoff and jitter."""\n\n'
            b"import random\nimport time\n\n\n"
            b"def retry_with_backoff(call, attempts=5, first_delay=0.2):\n"
            b'    """Call again after a failure, waiting twice as long each time."""\n'
            b"    for attempt in range(attempts):\n"
            b"        try:\n            return call()\n"
            b"        except ConnectionError:\n"
            b"            time.sleep(first_delay * 2**attempt * random.random())\n"
            b"    return call()\n"
        ),
        "src/payments/capture.py": b'"""Capture an authorised payment."""\n\ndef capture(payment):\n    return payment\n',
        "docs/retry-policy.pdf": documents.pdf(
            RETRY_PAGES, title="Retry policy specification", author="Ada Lovelace"
        ),
        "docs/design-review.docx": documents.docx(
            ["Design review: the ledger", "The ledger keeps every balance change.", [["Owner", "Team"]]],
            title="Ledger design review",
            author="Grace Hopper",
        ),
        "docs/architecture.pptx": documents.pptx(
            [
                documents.Slide("Architecture", ["Gateway", "Ledger"]),
                documents.Slide("Rollout plan", ["Canary"]),
            ],
            title="Architecture overview",
        ),
        "data/budget.xlsx": documents.xlsx(
            {"Costs": [["Item", "Amount"], ["Servers", 1200]], "Forecast": [["Q1", 3]]}
        ),
        "design/architecture-diagram.svg": documents.svg(
            title="Architecture diagram", texts=["API gateway", "Billing service"]
        ),
        "design/screenshot.png": documents.png(64, 48, exif=documents.Exif()),
        "docs/runbook.pdf": documents.secret_pdf(),
        "docs/accounts.docx": documents.secret_docx(),
        "docs/locked.pdf": documents.encrypted_pdf(),
        "docs/broken.pdf": documents.truncated_pdf(),
        "docs/bomb.docx": documents.zip_bomb_docx(),
    }
    files.update({f"hostile/{name}": data for name, data in documents.adversarial().items()})
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


DOCUMENTS = {
    "docs/retry-policy.pdf",
    "docs/design-review.docx",
    "docs/architecture.pptx",
    "data/budget.xlsx",
    "docs/runbook.pdf",
    "docs/accounts.docx",
    "docs/locked.pdf",
    "docs/broken.pdf",
    "docs/bomb.docx",
}
IMAGES = {"design/architecture-diagram.svg", "design/screenshot.png"}
PROBLEMS = ("encrypted", "damaged", "too large", "refused", "timed out", "text read from the first")


def plain(paths: Iterable[str]) -> set[str]:
    """The paths, but the hostile files'."""
    return {path for path in paths if not path.startswith("hostile/")}


def leaked(text: str) -> list[str]:
    return [secret for secret in documents.PLANTED_SECRETS if secret in text]


async def get_files(client: Any, **params: Any) -> dict[str, dict[str, Any]]:
    page = as_dict(await client.protocol.send_request_async("files/getFiles", {"limit": 1000, **params}))
    return {item["path"]: item for item in page["items"]}


async def find(client: Any, query: str) -> list[str]:
    result = as_dict(
        await client.protocol.send_request_async("files/findRelevant", {"query": query, "limit": 10})
    )
    return [item["path"] for item in result["items"]]


async def wait_for(done: Callable[[], Awaitable[bool]], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not await done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def all_annotated(client: Any) -> None:
    async def done() -> bool:
        status = as_dict(await execute(client, "filescout.status"))
        return status["byStatus"].get("pending", 0) == 0 and status["phase"] == "idle"

    await wait_for(done, "every file annotated")


async def test_documents_and_images_are_listed_found_and_filtered(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    client = await start_client(root, tmp_path / "cache")
    try:
        await wait_for_indexing(client)
        await all_annotated(client)
        every = await get_files(client)
        assert set(every) >= DOCUMENTS | IMAGES
        assert plain(path for path, item in every.items() if item["kind"] == "document") == DOCUMENTS
        assert plain(path for path, item in every.items() if item["kind"] == "image") == IMAGES
        assert plain(await get_files(client, kinds=["document"])) == DOCUMENTS
        assert plain(await get_files(client, kinds=["image"])) == IMAGES
        pdfs = await get_files(client, languages=["pdf"])
        assert plain(pdfs) == {p for p in DOCUMENTS if p.endswith(".pdf")} and all(
            p.endswith(".pdf") for p in pdfs
        )

        spec = every["docs/retry-policy.pdf"]
        assert spec["language"] == "pdf" and spec["status"] == "annotated"
        assert "PDF document" in spec["summary"] and "Retry policy specification" in spec["summary"]
        assert "3 pages" in spec["summary"] and "Ada Lovelace" in spec["summary"]
        assert "Word document" in every["docs/design-review.docx"]["summary"]
        assert "Rollout plan" in every["docs/architecture.pptx"]["summary"]  # a slide title
        assert "Forecast" in every["data/budget.xlsx"]["summary"]  # a sheet name
        assert "Architecture diagram" in every["design/architecture-diagram.svg"]["summary"]
        shot = every["design/screenshot.png"]["summary"]
        assert "64×48" in shot and "2023-06-01" in shot and "Canon" in shot
        assert "48" not in shot.replace("64×48", "") and "51" not in shot  # no GPS position
        assert "encrypted" in every["docs/locked.pdf"]["summary"]
        assert "damaged" in every["docs/broken.pdf"]["summary"]
        assert "too large" in every["docs/bomb.docx"]["summary"]
        assert leaked(json.dumps(every)) == []
        hostile = {path: item for path, item in every.items() if path.startswith("hostile/")}
        assert len(hostile) == len(documents.adversarial())
        for path, item in hostile.items():  # each read within its bounds, and says what stopped it
            assert item["status"] == "annotated"
            assert any(word in item["summary"] for word in PROBLEMS), (path, item["summary"])

        assert (await find(client, "which document specifies the retry policy"))[0] == "docs/retry-policy.pdf"
        code = await find(client, "where is the exponential backoff of retries implemented")
        assert code[0] == "src/payments/retry.py"
        assert "docs/retry-policy.pdf" not in code[:1]
        assert (await find(client, "where is the architecture diagram"))[
            0
        ] == "design/architecture-diagram.svg"
        assert (await find(client, "the ledger design review document"))[0] == "docs/design-review.docx"
        answer = as_dict(
            await client.protocol.send_request_async(
                "files/findRelevant", {"query": "service account runbook", "limit": 10}
            )
        )
        assert leaked(json.dumps(answer)) == []
    finally:
        await stop_client(client)


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


async def test_a_documents_text_reaches_the_model_as_redacted_data(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = write_workspace(tmp_path / "ws")
    model = {"model": {"model": "test-model", "baseUrl": fake.base_url, "apiKey": "k", "timeout": 5}}
    client = await start_client(root, tmp_path / "cache", init_options=model)
    try:
        await wait_for_indexing(client)

        async def model_done() -> bool:
            status = as_dict(await execute(client, "filescout.status"))["model"]
            return status["state"] != "active" and status["queuedFiles"] == 0

        await wait_for(model_done, "the model to finish")
        item = (await get_files(client, paths=["docs/retry-policy.pdf"]))["docs/retry-policy.pdf"]
        assert item["summary"] == "Model summary of docs/retry-policy.pdf."
    finally:
        await stop_client(client)
    sent = "\n".join(request.raw for request in fake.requests)
    assert "### docs/retry-policy.pdf (pdf, document)" in sent
    assert "exponential backoff and jitter" in sent  # the PDF's text, inside the files block
    assert "### docs/runbook.pdf (pdf, document)" in sent
    assert leaked(sent) == []
    assert "design/screenshot.png" not in sent or '"image_url"' not in sent  # no image without the setting


def cli(cache: Path, *args: str) -> str:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "FILESCOUT_CACHE_DIR": ""}
    result = subprocess.run(launch.command(*args), env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    return result.stdout


async def test_the_cli_and_mcp_filter_by_kind_and_format(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws")
    cache = tmp_path / "cache"
    cli(cache, "index", str(root))
    listed = cli(cache, "files", str(root), "--kind", "document", "--no-refresh")
    assert plain(line.split("\t")[0] for line in listed.splitlines()) == DOCUMENTS
    listed = cli(cache, "files", str(root), "--kind", "image", "--language", "svg", "--no-refresh", "--json")
    assert plain(json.loads(line)["path"] for line in listed.splitlines()) == {
        "design/architecture-diagram.svg"
    }
    assert leaked(cli(cache, "files", str(root), "--no-refresh")) == []
    async with mcp_session(root, cache, tmp_path / "stderr", **SAME_CODE) as session:
        result = await session.call_tool("list_files", {"kinds": ["image"], "limit": 100})
        assert not result.is_error
        assert plain(item["path"] for item in result.structured_content["items"]) == IMAGES
