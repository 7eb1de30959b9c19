"""Images for a model that can see, through the real server and the real openai client against
the fake endpoint: with `model.images` on, an image's summary is the model's, written from a
downscaled picture sent as a data URL at low detail; a corrupt image, or one whose name looks
secret, is never sent and keeps its structural annotation; an SVG goes as text. With the setting
off (and a workspace file cannot turn it on), or in privacy mode, no picture leaves.

The picture's preparation, its price and the request's budget in process:
tests/unit/test_model_images.py."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from PIL import Image, ImageDraw

from harness.fake_openai import FakeOpenAI, pictures_of
from harness.support import (
    as_dict,
    execute,
    file_item,
    make_workspace,
    query_db,
    start_client,
    stop_client,
    wait_for_indexing,
)

GITHUB_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
SECRET_IMAGE = f"assets/{GITHUB_TOKEN}.png"


def png(width: int, height: int) -> bytes:
    """A diagram: boxes and a line on white, as a PNG."""
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((width // 10, height // 5, width // 3, height // 2), outline="navy", width=8)
    draw.rectangle((width // 2, height // 5, width - width // 10, height // 2), fill="orange")
    draw.line((width // 3, height // 3, width // 2, height // 3), fill="black", width=6)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def images_workspace(root: Path) -> Path:
    make_workspace(root, git=False)
    (root / "assets").mkdir(exist_ok=True)
    (root / "assets/diagram.png").write_bytes(png(1600, 900))
    (root / "assets/broken.png").write_bytes(png(400, 300)[:300])  # cut short: does not decode
    (root / SECRET_IMAGE).write_bytes(png(64, 64))
    (root / "assets/logo.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64">'
        "<title>Shop logo</title><circle cx='32' cy='32' r='30'/></svg>\n"
    )
    return root


@pytest.fixture
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def model_options(fake: FakeOpenAI, **model: Any) -> dict[str, Any]:
    return {
        "model": {"model": "test-model", "baseUrl": fake.base_url, "maxRetries": 1, "timeout": 10, **model}
    }


async def wait_for_model(client, timeout: float = 60.0) -> dict[str, Any]:
    """Wait until model annotation has nothing left to do; return the model status."""
    deadline = time.monotonic() + timeout
    while True:
        status = as_dict(await execute(client, "filescout.status"))["model"]
        if status["state"] != "active" and status["queuedFiles"] == 0:
            return status
        assert time.monotonic() < deadline, status
        await asyncio.sleep(0.1)


@pytest_asyncio.fixture
async def seeing(tmp_path: Path, fake: FakeOpenAI):
    root = images_workspace(tmp_path / "ws")
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake, images=True))
    await wait_for_indexing(client)
    await wait_for_model(client)
    yield client
    await stop_client(client)


def sent_text(fake: FakeOpenAI) -> str:
    return "\n".join(request.raw for request in fake.requests) + "\n".join(r.text for r in fake.requests)


async def assert_structural(client, path: str) -> None:
    item = await file_item(client, path)
    assert item is not None, path
    assert item["annotator"].startswith("structural/") and item["summary"], item
    assert item["kind"] == "image"


async def test_an_image_is_described_by_the_model_from_its_picture(seeing, fake: FakeOpenAI) -> None:
    client = seeing
    image_requests = [request for request in fake.requests if request.kind == "image"]
    assert len(image_requests) == 1, [r.text for r in image_requests]
    (request,) = image_requests
    system, user = request.body["messages"]
    assert system["role"] == "system" and isinstance(system["content"], str)
    text, picture = user["content"]
    assert text["type"] == "text" and picture["type"] == "image_url"
    assert "<files>\n### assets/diagram.png (png, image)\n" in text["text"]
    assert "1600 × 900 pixels, sent as 512 × 288" in text["text"]
    assert text["text"].rstrip().endswith("</files>")
    (seen,) = pictures_of(request)
    assert seen.format in ("PNG", "JPEG") and seen.detail == "low"
    assert (seen.width, seen.height) == (512, 288)

    item = await file_item(client, "assets/diagram.png")
    assert item["summary"] == "Model summary of assets/diagram.png."
    assert item["annotator"].startswith("model:") and item["status"] == "annotated"
    assert item["kind"] == "image" and item["language"] == "png"

    db = as_dict(await execute(client, "filescout.status"))["dbPath"]
    ((tokens,),) = query_db(db, "SELECT sum(input_tokens) FROM usage")
    assert tokens >= request.prompt_tokens(fake.image_tokens)


async def test_a_corrupt_or_secret_looking_image_is_never_sent(seeing, fake: FakeOpenAI) -> None:
    client = seeing
    sent = sent_text(fake)
    assert "broken.png" not in sent
    assert GITHUB_TOKEN not in sent and "[REDACTED].png" not in sent
    await assert_structural(client, "assets/broken.png")
    await assert_structural(client, SECRET_IMAGE)
    status = as_dict(await execute(client, "filescout.status"))
    assert status["model"]["state"] == "idle" and status["phase"] == "idle"
    # The server carries on: the rest got the model's summaries.
    assert (await file_item(client, "src/shop/cart.py"))["summary"] == "Model summary of src/shop/cart.py."


async def test_an_svg_goes_as_text(seeing, fake: FakeOpenAI) -> None:
    client = seeing
    (request,) = [r for r in fake.requests if "### assets/logo.svg (svg, image)" in r.text]
    assert request.kind == "annotate" and not request.picture_parts
    assert "Shop logo" in request.text
    item = await file_item(client, "assets/logo.svg")
    assert item["summary"] == "Model summary of assets/logo.svg."


async def test_images_off_and_a_workspace_file_cannot_turn_them_on(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = images_workspace(tmp_path / "ws")
    (root / "filescout.toml").write_text("[model]\nimages = true\n")
    client = await start_client(root, tmp_path / "cache", init_options=model_options(fake))
    try:
        await wait_for_indexing(client)
        await wait_for_model(client)
        assert fake.calls() > 0 and fake.calls("image") == 0
        sent = sent_text(fake)
        assert "assets/diagram.png" not in sent and "assets/logo.svg" not in sent
        for path in ("assets/diagram.png", "assets/logo.svg", "assets/broken.png"):
            await assert_structural(client, path)
        assert (await file_item(client, "src/shop/cart.py"))[
            "summary"
        ] == "Model summary of src/shop/cart.py."
        assert any("model.images ignored" in message.message for message in client.messages)
    finally:
        await stop_client(client)


async def test_privacy_mode_sends_no_picture(tmp_path: Path, fake: FakeOpenAI) -> None:
    root = images_workspace(tmp_path / "ws")
    options = {**model_options(fake, images=True), "privacyMode": True}
    client = await start_client(root, tmp_path / "cache", init_options=options)
    try:
        await wait_for_indexing(client)
        await asyncio.sleep(0.5)
        status = as_dict(await execute(client, "filescout.status"))
        assert status["model"]["state"] == "privacy"
        assert fake.calls() == 0
        await assert_structural(client, "assets/diagram.png")
    finally:
        await stop_client(client)
