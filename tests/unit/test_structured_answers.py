"""The structured-answer path in-process: `ask` and the model annotator driving the real
openai client against the local fake server, so what is sent and what is charged is what a
real endpoint would see."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

import msgspec
import pytest

from filescout.annotate.base import FileToAnnotate
from filescout.annotate.llm import ASK_AGAIN as ASK_AGAIN_FOR_FILES
from filescout.annotate.llm import AnswerBatch, ModelAnnotator, ModelInput
from filescout.annotate.structural import annotate_structure
from filescout.llm.client import (
    ASK_AGAIN,
    Budget,
    MalformedAnswer,
    ModelClient,
    ModelError,
    ModelRefused,
    ask,
    strict_schema,
)
from filescout_protocol.types import BudgetSettings, ModelSettings
from harness.fake_openai import FILE_HEADER, Action, FakeOpenAI, Request

# The schema the annotator sent before it was derived from AnswerBatch.
ANNOTATION_SCHEMA_BEFORE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["files"],
    "properties": {
        "files": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["path", "summary", "tags"],
                "properties": {
                    "path": {"type": "string"},
                    "summary": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}


class Pick(msgspec.Struct):
    path: str
    score: Annotated[float, msgspec.Meta(ge=0, le=10)]


class Picks(msgspec.Struct):
    files: list[Pick]


class Limits(msgspec.Struct):
    minimum: Annotated[int, msgspec.Meta(ge=1)]
    weights: list[Annotated[float, msgspec.Meta(gt=0)]]


GOOD = {"files": [{"path": "src/a.py", "score": 7}]}
QUESTION = [{"role": "system", "content": "You rate files."}, {"role": "user", "content": "Rate src/a.py."}]


def inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    """The schema with every `$ref` replaced by what it names, and without `$defs` or
    descriptions: its shape, whatever way it is spelled."""
    if isinstance(node, list):
        return [inline_refs(part, defs) for part in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return inline_refs(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    return {
        key: inline_refs(value, defs) for key, value in node.items() if key not in ("$defs", "description")
    }


def shape(schema: dict[str, Any]) -> Any:
    return inline_refs(schema, schema.get("$defs", {}))


class Usage:
    """The budget's sink: every (calls, failures, input, output) it was told about."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, int]] = []

    async def __call__(self, day: str, calls: int, failures: int, tokens_in: int, tokens_out: int) -> None:
        self.rows.append((calls, failures, tokens_in, tokens_out))

    @property
    def calls(self) -> int:
        return sum(row[0] for row in self.rows)

    @property
    def tokens(self) -> tuple[int, int]:
        return sum(row[2] for row in self.rows), sum(row[3] for row in self.rows)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def usage() -> Usage:
    return Usage()


@pytest.fixture
async def client(fake: FakeOpenAI, usage: Usage) -> AsyncIterator[ModelClient]:
    settings = ModelSettings(model="test-model", base_url=fake.base_url, max_retries=0)
    model = ModelClient(settings, Budget(BudgetSettings(), [], usage))
    yield model
    await model.close()


def answer_with(fake: FakeOpenAI, *replies: Any) -> None:
    """Answer the next requests with `replies` in order (objects as JSON, text as it is)."""
    queue = list(replies)
    fake.answer = lambda paths, request: queue.pop(0)


def charged(request: Request) -> tuple[int, int]:
    """What the fake server reports a request cost (its usage block)."""
    return len(request.raw) // 4, 40 * max(len(FILE_HEADER.findall(request.text)), 1)


# -- the schema ---------------------------------------------------------------------------------


def test_derived_annotation_schema_has_the_shape_of_the_hand_written_one() -> None:
    derived = strict_schema(AnswerBatch)
    assert shape(derived) == ANNOTATION_SCHEMA_BEFORE
    assert derived["properties"]["files"]["items"] == {"$ref": "#/$defs/FileNote"}
    assert set(derived["$defs"]) == {"FileNote"}


def test_strict_schema_requires_everything_and_drops_numeric_bounds() -> None:
    schema = strict_schema(Picks)
    pick = schema["$defs"]["Pick"]
    assert pick["required"] == ["path", "score"] and pick["additionalProperties"] is False
    assert pick["properties"]["score"] == {"type": "number"}
    assert "title" not in pick and "title" not in schema
    assert strict_schema(Picks) is schema  # derived once per type

    limits = strict_schema(Limits)
    assert set(limits["properties"]) == {"minimum", "weights"}  # a field may be named like a bound
    assert limits["properties"]["minimum"] == {"type": "integer"}
    assert limits["properties"]["weights"] == {"type": "array", "items": {"type": "number"}}


# -- ask ----------------------------------------------------------------------------------------


async def test_a_good_answer_takes_one_call(client: ModelClient, fake: FakeOpenAI, usage: Usage) -> None:
    answer_with(fake, GOOD)
    answer = await ask(client, QUESTION, Picks, name="picks", max_output_tokens=100)
    assert answer.value == Picks([Pick("src/a.py", 7.0)])
    assert answer.calls == 1 and fake.calls() == 1
    sent = fake.requests[0].body
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "picks", "strict": True, "schema": strict_schema(Picks)},
    }
    assert sent["messages"] == QUESTION
    assert (answer.input_tokens, answer.output_tokens) == charged(fake.requests[0]) == usage.tokens


@pytest.mark.parametrize(
    "malformed",
    [
        "I would rate src/a.py a seven.",  # prose, no JSON
        {"picks": [{"path": "src/a.py", "score": 7}]},  # JSON of another shape
        {"files": [{"path": "src/a.py", "score": 11}]},  # out of bounds: msgspec enforces them
    ],
)
async def test_a_malformed_answer_is_asked_for_once_more(
    client: ModelClient, fake: FakeOpenAI, usage: Usage, malformed: Any
) -> None:
    answer_with(fake, malformed, GOOD)
    answer = await ask(client, QUESTION, Picks, name="picks", max_output_tokens=100)
    assert answer.value.files[0].path == "src/a.py"
    assert answer.calls == 2 and fake.calls() == 2
    first, second = (request.body["messages"] for request in fake.requests)
    assert first == QUESTION
    assert second == [*QUESTION, {"role": "user", "content": ASK_AGAIN}]
    spent = [charged(request) for request in fake.requests]
    assert (answer.input_tokens, answer.output_tokens) == (
        spent[0][0] + spent[1][0],
        spent[0][1] + spent[1][1],
    )
    assert usage.calls == 2 and usage.tokens == (answer.input_tokens, answer.output_tokens)


async def test_malformed_twice_raises(client: ModelClient, fake: FakeOpenAI, usage: Usage) -> None:
    answer_with(fake, "no idea", '```json\n{"files": \n```')
    with pytest.raises(MalformedAnswer, match="picks answer was malformed twice") as raised:
        await ask(client, QUESTION, Picks, name="picks", max_output_tokens=100)
    assert isinstance(raised.value, ModelError)
    assert fake.calls() == 2 and usage.calls == 2  # both were paid for


async def test_one_attempt_means_one_call(client: ModelClient, fake: FakeOpenAI) -> None:
    answer_with(fake, "no idea", GOOD)
    with pytest.raises(MalformedAnswer, match="malformed once"):
        await ask(client, QUESTION, Picks, name="picks", max_output_tokens=100, attempts=1)
    assert fake.calls() == 1


async def test_json_schema_rejection_falls_back_to_json_mode(
    client: ModelClient, fake: FakeOpenAI, usage: Usage
) -> None:
    fake.reject_json_schema = True
    answer_with(fake, f"Here you are:\n```json\n{json.dumps(GOOD)}\n```\nAnything else?")
    answer = await ask(client, QUESTION, Picks, name="picks", max_output_tokens=100)
    assert answer.value == Picks([Pick("src/a.py", 7.0)])
    formats = [request.body.get("response_format", {}).get("type") for request in fake.requests]
    assert formats == ["json_schema", "json_object"]
    assert answer.calls == 1 and usage.calls == 1  # the rejected request cost nothing
    assert (answer.input_tokens, answer.output_tokens) == charged(fake.requests[1])

    answer_with(fake, GOOD)
    await ask(client, QUESTION, Picks, name="picks", max_output_tokens=100)
    assert fake.requests[-1].body["response_format"] == {"type": "json_object"}  # remembered


async def test_client_errors_pass_through_unretried(client: ModelClient, fake: FakeOpenAI) -> None:
    fake.default = Action(status=401)
    with pytest.raises(ModelRefused):
        await ask(client, QUESTION, Picks, name="picks", max_output_tokens=100)
    assert fake.calls() == 1


# -- the annotator on top of it -----------------------------------------------------------------


def model_input(path: str) -> ModelInput:
    text = f'"""The {path} module."""\n\ndef run():\n    pass\n'
    outline = annotate_structure(
        FileToAnnotate(path=path, hash=path, language="python", kind="source", text=text)
    )
    return ModelInput(path=path, hash=path, language="python", kind="source", text=text, outline=outline)


def notes(*paths: str) -> dict[str, Any]:
    return {
        "files": [{"path": path, "summary": f"Model summary of {path}.", "tags": ["model"]} for path in paths]
    }


async def test_annotator_malformed_then_incomplete_stops_at_two_calls(
    client: ModelClient, fake: FakeOpenAI
) -> None:
    answer_with(fake, "not JSON", notes("a.py"))
    annotations, error = await ModelAnnotator(client).annotate([model_input("a.py"), model_input("b.py")])
    assert error is None and fake.calls() == 2  # no third call for b.py
    assert annotations[0] is not None and annotations[0].summary == "Model summary of a.py."
    assert annotations[1] is None  # keeps its structural annotation
    assert fake.requests[1].body["messages"][-1] == {"role": "user", "content": ASK_AGAIN_FOR_FILES}
    # Both calls are what a.py's share was taken from: the malformed one was paid for too.
    spent = [charged(request) for request in fake.requests]
    assert annotations[0].input_tokens == (spent[0][0] + spent[1][0]) // 2
    assert annotations[0].output_tokens == (spent[0][1] + spent[1][1]) // 2


async def test_annotator_asks_again_for_missing_files_only(client: ModelClient, fake: FakeOpenAI) -> None:
    answer_with(fake, notes("a.py"), "still not JSON")
    annotations, error = await ModelAnnotator(client).annotate([model_input("a.py"), model_input("b.py")])
    assert error is None and fake.calls() == 2
    second = fake.requests[1].text
    assert "### b.py (" in second and "### a.py (" not in second
    assert fake.requests[1].body["messages"][-1] == {"role": "user", "content": ASK_AGAIN_FOR_FILES}
    assert annotations[0] is not None and annotations[1] is None  # the first answer is kept
    first = charged(fake.requests[0])
    assert (annotations[0].input_tokens, annotations[0].output_tokens) == (first[0] // 2, first[1] // 2)


async def test_annotator_returns_client_errors_with_what_it_got(
    client: ModelClient, fake: FakeOpenAI
) -> None:
    answer_with(fake, notes("a.py"))
    fake.script.extend([Action(), Action(status=401)])
    annotations, error = await ModelAnnotator(client).annotate([model_input("a.py"), model_input("b.py")])
    assert isinstance(error, ModelRefused) and fake.calls() == 2
    assert annotations[0] is not None and annotations[1] is None
