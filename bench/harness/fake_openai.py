"""A small OpenAI-compatible chat server on 127.0.0.1 for tests, which can misbehave on
purpose: status codes with Retry-After, delays, malformed answers, refusing JSON schemas, and
faults of the connection itself (a call that is never answered, a connection closed without an
answer or in the middle of one).

It answers annotation requests (files listed as `### path (...)`) with one summary per file,
and records every request body so tests can check what left the machine. It can also play a
gullible model (`gullible`, see gullible_model.py) that obeys instructions planted in the data.

It sees pictures: a request whose message content is a list of parts (text and `image_url`) is
of kind "image", answered like an annotation request from its text parts and counted at
`image_tokens` per picture; `pictures_of(request)` decodes what it carried, for tests to check.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from harness.gullible_model import Gullibility, Obeyed, obey

FILE_HEADER = re.compile(r"^### (\S+) \(", re.MULTILINE)
LISTED_FILE = re.compile(r"^- (\S+): ", re.MULTILINE)
TAGS_LINE = re.compile(r"^Tags: (.*)$", re.MULTILINE)
TAGS_BLOCK = re.compile(r"<tags>\n(.*?)\n</tags>", re.DOTALL)
Fault = Literal["hang", "drop", "truncate", "drip"]
DRIP_SECONDS = 0.2


@dataclass
class Action:
    """What to do with one request instead of answering normally."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: str | None = None
    fault: Fault | None = None
    """hang: read the request and never answer; drop: close the connection without an answer;
    truncate: send the headers and half of the answer, then close; drip: send the answer a byte
    every DRIP_SECONDS (each read succeeds, the whole takes minutes)."""


@dataclass
class Request:
    at: float
    body: dict[str, Any]
    raw: str
    headers: dict[str, str]

    @property
    def text(self) -> str:
        """The messages' text (of a list of parts, the text parts)."""
        return "\n".join(_text_of(message.get("content", "")) for message in self.body.get("messages", []))

    @property
    def picture_parts(self) -> list[dict[str, Any]]:
        """The `image_url` parts of the request's messages."""
        return [
            part
            for message in self.body.get("messages", [])
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if isinstance(part, dict) and part.get("type") == "image_url"
        ]

    def prompt_tokens(self, per_picture: int) -> int:
        """A quarter of the request's characters, each picture counted at `per_picture` instead
        of its encoded length."""
        urls = sum(len(str(part.get("image_url", {}).get("url", ""))) for part in self.picture_parts)
        return (len(self.raw) - urls) // 4 + per_picture * len(self.picture_parts)

    @property
    def kind(self) -> str:
        if self.picture_parts:
            return "image"
        system = self.body["messages"][0]["content"]
        if "rate how likely" in system:
            return "judge"
        if "Order them" in system:
            return "final"
        if "Pick the tags" in system:
            return "tags"
        return "annotate"


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.script: deque[Action] = deque()
        self.reject_json_schema = False
        self.default: Action | None = None
        """Applied to every request once the script is empty (e.g. a dead endpoint)."""
        self.per_kind: dict[str, Action] = {}
        """Applied to every request of a kind ("annotate", "judge", "final", "tags")."""
        self.answer: Callable[[list[str], Request], dict[str, Any] | str] = self.annotate
        """How to answer annotation requests: a JSON object, or text sent as it is."""
        self.judge_score: Callable[[str], float] = lambda path: 7.0
        """The score the judge gives each listed file."""
        self.final_order: Callable[[list[str]], list[str]] = lambda paths: paths
        """How the final ranking orders the files it gets."""
        self.pick_tags: Callable[[list[str]], list[str]] = lambda tags: []
        self.edit: Callable[[str, Any], Any] = lambda kind, answer: answer
        """A last change to each answer (by request kind) before it is sent."""
        self.judge_line: Callable[[str, str, Request], float] | None = None
        """When set, the judge's score from (path, the file's listed line, the request)."""
        self.gullible: Gullibility | None = None
        """Obey instructions found in the request: "outside" the data blocks only, or "anywhere"."""
        self.gullible_kinds: set[str] = {"annotate", "tags", "judge", "final"}
        """The request kinds the gullible model obeys in."""
        self.obeyed: list[Obeyed] = []
        """Every instruction the gullible model followed, and whether it stood outside the data."""
        self.image_tokens = 85
        """The prompt tokens counted for each picture a request carries (OpenAI's low detail)."""
        self.usage = True
        """False: answers carry no token counts (some servers send none)."""
        self.lock = threading.Lock()
        self.released = threading.Event()
        """Set on stop: a hung call ends then (the client has long given up on it)."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=lambda: self._server.serve_forever(poll_interval=0.05), daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()

    def calls(self, kind: str | None = None) -> int:
        """Requests so far; `kind` ("annotate", "judge", "final", "tags") counts one kind."""
        with self.lock:
            return sum(1 for request in self.requests if kind is None or request.kind == kind)

    @staticmethod
    def annotate(paths: list[str], request: Request) -> dict[str, Any]:
        return {
            "files": [
                {"path": path, "summary": f"Model summary of {path}.", "tags": ["model", "Summarized"]}
                for path in paths
            ]
        }

    def _respond(self, request: Request) -> tuple[int, dict[str, str], str, Action]:
        with self.lock:
            action = self.per_kind.get(request.kind) or (
                self.script.popleft() if self.script else self.default
            )
        if action is None:
            action = Action()
        if action.status != 200 or action.body is not None:
            body = (
                action.body
                if action.body is not None
                else json.dumps({"error": {"message": f"scripted {action.status}", "type": "server_error"}})
            )
            return action.status, action.headers, body, action
        response_format = request.body.get("response_format") or {}
        if self.reject_json_schema and response_format.get("type") == "json_schema":
            return (
                400,
                {},
                json.dumps(
                    {
                        "error": {
                            "message": "response_format json_schema is not supported by this server",
                            "type": "invalid_request_error",
                        }
                    }
                ),
                action,
            )
        system = request.body["messages"][0]["content"]
        paths = FILE_HEADER.findall(request.text)
        if "rate how likely" in system:
            listed = LISTED_FILE.findall(request.text)
            answer: Any = {
                "files": [
                    {"path": path, "score": self._score(path, request), "reason": f"judged {path}"}
                    for path in listed
                ]
            }
        elif "Order them" in system:
            listed = LISTED_FILE.findall(request.text)
            answer = {
                "files": [{"path": path, "reason": f"placed {path}"} for path in self.final_order(listed)]
            }
        elif "Pick the tags" in system:
            found = TAGS_BLOCK.search(request.text) or TAGS_LINE.search(request.text)
            offered = [item.rsplit(" (", 1)[0] for item in found.group(1).split(", ")] if found else []
            answer = {"tags": self.pick_tags(offered)}
        else:
            answer = self.answer(paths, request)
        if self.gullible is not None and request.kind in self.gullible_kinds:
            answer, obeyed = obey(self.gullible, request.kind, request.body["messages"], answer)
            with self.lock:
                self.obeyed += obeyed
        answer = self.edit(request.kind, answer)
        content = answer if isinstance(answer, str) else json.dumps(answer)
        completion = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.body.get("model"),
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
            ],
            "usage": {
                "prompt_tokens": request.prompt_tokens(self.image_tokens),
                "completion_tokens": 40 * max(len(paths), 1),
                "total_tokens": request.prompt_tokens(self.image_tokens) + 40 * max(len(paths), 1),
            },
        }
        if not self.usage:
            del completion["usage"]
        return 200, action.headers, json.dumps(completion), action

    def _score(self, path: str, request: Request) -> float:
        if self.judge_line is None:
            return self.judge_score(path)
        line = next((line for line in request.text.splitlines() if line.startswith(f"- {path}: ")), "")
        return self.judge_line(path, line, request)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length).decode("utf-8")
                request = Request(
                    at=time.monotonic(),
                    body=json.loads(raw),
                    raw=raw,
                    headers={k.lower(): v for k, v in self.headers.items()},
                )
                with fake.lock:
                    fake.requests.append(request)
                status, headers, body, action = fake._respond(request)
                if action.fault == "hang":
                    fake.released.wait()
                    return
                if action.delay:
                    time.sleep(action.delay)
                payload = body.encode()
                try:
                    if action.fault == "drop":
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if action.fault == "drip":
                        for byte in payload:
                            if fake.released.wait(DRIP_SECONDS):
                                return
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                        return
                    if action.fault == "truncate":
                        self.wfile.write(payload[: len(payload) // 2])
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up waiting (a timeout test), or the socket is gone

        return Handler


@dataclass
class SeenPicture:
    """A picture a request carried, as the fake decoded it."""

    media_type: str
    """From the data URL: image/png, image/jpeg, ..."""
    format: str
    """What Pillow found the bytes to be: PNG, JPEG, ..."""
    width: int
    height: int
    detail: str | None
    encoded_bytes: int


DATA_URL = re.compile(r"data:(image/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=]+)")


def pictures_of(request: Request) -> list[SeenPicture]:
    """Every picture in `request`, decoded; AssertionError names what is malformed (a URL that
    is no base64 data URL of an image, bytes Pillow cannot decode, a media type the bytes belie)."""
    import base64
    import io

    from PIL import Image

    seen = []
    for part in request.picture_parts:
        image_url = part.get("image_url")
        assert isinstance(image_url, dict), f"image_url is not an object: {image_url!r}"
        url = image_url.get("url", "")
        match = DATA_URL.fullmatch(url)
        assert match, f"not a base64 data URL of an image: {url[:60]!r}"
        data = base64.b64decode(match.group(2), validate=True)
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            found = image.format or ""
            width, height = image.size
        assert match.group(1) == Image.MIME.get(found), f"{match.group(1)} holds {found}"
        seen.append(SeenPicture(match.group(1), found, width, height, image_url.get("detail"), len(data)))
    return seen
