"""What a client is shown carries no secret from the workspace: the engine in process, on a real
index of the planted corpus (bench/harness/secrets_corpus.py), through every operation a face calls, and
every text field of the answers' Structs redacted, whichever field it is. Paths stay as they are:
a client must be able to open the file."""

from __future__ import annotations

import hashlib
import io
import tokenize
from pathlib import Path
from typing import Any

import msgspec
import pytest

from filescout.annotate.structural import ANNOTATOR_ID as STRUCTURAL
from filescout.annotate.structural import annotate_safely
from filescout.core.records import FileToAnnotate
from filescout.engine import Hooks, Workspace
from filescout.engine.prompt import Listed, render
from filescout.engine.shown import KEPT, shown
from filescout.llm import detect_secrets_catalogue as catalogue
from filescout.llm import redact as redact_module
from filescout.llm.redact import PLACEHOLDER
from filescout_protocol.types import (
    FileItem,
    FindRelevantParams,
    GetFilesParams,
    PromptOptions,
    RelevantItem,
    StatusResult,
)
from harness import secrets_corpus

SECRET = "xoxb-2048-4096-Kq8Zr2Lm9Xw3Tq7Yb"


def encoded(value: Any) -> str:
    return msgspec.json.encode(value).decode()


async def test_no_answer_a_face_sends_holds_a_planted_secret(tmp_path: Path) -> None:
    root = secrets_corpus.write_workspace(tmp_path / "ws")
    engine = await Workspace.open(root, env={"FILESCOUT_CACHE_DIR": str(tmp_path / "cache")}, hooks=Hooks())
    try:
        engine.start_indexing("index")
        await engine.wait_idle()
        prompt = PromptOptions(tokens=200_000)
        answers = []
        page = await engine.files_page(GetFilesParams(limit=10_000, prompt=prompt))
        answers.append(encoded(page))
        answers += [encoded(batch) async for batch in engine.stream_files(GetFilesParams(batch_size=50))]
        answers.append(encoded((await engine.files_page(GetFilesParams(query="token password key"))).items))
        for question in secrets_corpus.QUESTIONS:
            params = FindRelevantParams(query=question, limit=60, prompt=PromptOptions(tokens=50_000))
            async for update in engine.find_relevant_stream(params):
                answers.append(encoded(update.result()))
        readable = sorted(set(secrets_corpus.files()) - secrets_corpus.sensitive_files())
        answers.append(encoded(await engine.annotate_now(readable, timeout=30)))
        answers.append(encoded(await engine.status()))
    finally:
        await engine.close()

    assert {item.path for item in page.items} == set(secrets_corpus.files())  # names as they are
    shown_text = "\n".join(answers)
    assert secrets_corpus.leaked_to_client(shown_text) == []
    assert PLACEHOLDER in shown_text  # the corpus's summaries and reasons did quote secrets
    for survivor in ("ShoppingCart", "apply_discount", "reset_password", "refresh_access_token"):
        assert survivor in shown_text


def example(kind: Any) -> Any:
    """A value of the type msgspec describes as `kind`, every text in it a planted secret."""
    name = type(kind).__name__
    if name == "Metadata":  # Annotated[...]
        return example(kind.type)
    if name == "StrType":
        return f"see {SECRET} here"
    if name == "LiteralType":
        return kind.values[0]
    if name in ("IntType", "FloatType"):
        return 1
    if name == "BoolType":
        return False
    if name == "ListType":
        return [example(kind.item_type)]
    if name == "DictType":
        return {example(kind.key_type): example(kind.value_type)}
    if name == "UnionType":
        return example(next(t for t in kind.types if type(t).__name__ not in ("NoneType", "UnsetType")))
    if name == "StructType":
        return kind.cls(**{field.name: example(field.type) for field in kind.fields})
    raise AssertionError(f"a field of a type this test does not know: {kind}")


def texts(value: Any, name: str = "") -> list[tuple[str, str]]:
    """(field name, text) for every text in `value`, nested Structs and lists included."""
    if isinstance(value, str):
        return [(name, value)]
    if isinstance(value, list):
        return [pair for item in value for pair in texts(item, name)]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in [*texts(key, name), *texts(item, name)]]
    if isinstance(value, msgspec.Struct):
        return [pair for field in value.__struct_fields__ for pair in texts(getattr(value, field), field)]
    return []


@pytest.mark.parametrize("kind", [FileItem, RelevantItem, StatusResult])
def test_every_text_field_is_redacted_but_paths(kind: type[msgspec.Struct]) -> None:
    item = shown(example(msgspec.inspect.type_info(kind)))
    found = texts(item)
    for field, text in found:
        if field in KEPT:
            assert SECRET in text, field
        else:
            assert SECRET not in text, (field, text)
    assert sum(PLACEHOLDER in text for _, text in found) >= 3


def test_a_prompt_ready_block_redacts_what_it_is_given() -> None:
    block = render(
        "Files:", [Listed("notes.txt", f"Text document: {SECRET}.", f"quotes {SECRET}")], tokens=2000
    )
    assert SECRET not in block and "1. notes.txt" in block and PLACEHOLDER in block


def test_the_structural_annotator_redacts_what_it_writes() -> None:
    files = {
        "notes/handover.txt": f"{SECRET}\nRotate it after the review.\n",
        "ops/alerts.py": f'"""Posts alerts: token {SECRET}."""\n\ndef post():\n    return 1\n',
        "config/slack.yaml": f"slack:\n  {SECRET.replace('-', '_')}: true\n",
    }
    for path, text in files.items():
        item = FileToAnnotate(path, "h", None, "docs", text)
        annotation = annotate_safely(item, with_words=False)
        assert annotation is not None
        written = "\n".join([annotation.summary, *annotation.tags])
        assert "Kq8Zr2Lm9Xw3" not in written and "kq8zr2lm9xw3" not in written, written


def test_what_the_structural_annotator_wrote_is_not_looked_at_twice() -> None:
    """Its summaries and tags were redacted as it wrote them; the item's other texts, and
    everything another annotator wrote, are looked at on the way out."""
    fields = {"path": "a.txt", "kind": "docs", "size": 1, "mtime": 1, "status": "annotated"}
    trusted = FileItem(
        summary="Text document.", tags=["docs"], language=SECRET, annotator=STRUCTURAL, **fields
    )
    assert SECRET not in shown(trusted).language  # not written by the annotator: looked at
    for annotator in ("model:x/y/p1", "structural/3", None):
        item = shown(FileItem(summary=SECRET, tags=[SECRET], language=None, annotator=annotator, **fields))
        assert SECRET not in item.summary and SECRET not in item.tags[0], annotator


# The redaction rules as of the structural annotator's id: its stored summaries were redacted by
# these rules, and the faces show them as they are. A change to the rules needs a new id (which
# annotates every file again, with the new rules), then the new digest here.
RULES_OF_THE_STRUCTURAL_ANNOTATOR = ("structural/4", "097d87e9d8dace43")


def rules_digest() -> str:
    """The rules' code (redact.py up to its screen, which changes no outcome), comments and
    docstrings left out, and the detect-secrets detectors it uses (their catalogue's data)."""
    source = Path(redact_module.__file__).read_text(encoding="utf-8")
    rules = source[: source.index("# -- The screen")]
    kept: list[str] = [
        repr((catalogue.RELEASE, catalogue.REGEX_DETECTORS, catalogue.KEYWORDS, catalogue.HIGH_ENTROPY))
    ]
    tokens = list(tokenize.generate_tokens(io.StringIO(rules).readline))
    layout = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    for before, token, after in zip([None, *tokens[:-1]], tokens, [*tokens[1:], None], strict=True):
        if token.type in (*layout, tokenize.ENDMARKER):
            continue
        docstring = (
            token.type == tokenize.STRING
            and (before is None or before.type in layout)
            and (after is None or after.type in (tokenize.NEWLINE, tokenize.ENDMARKER))
        )
        if not docstring:
            kept.append(token.string)
    return hashlib.sha256("\x00".join(kept).encode()).hexdigest()[:16]


def test_a_change_to_the_redaction_rules_gives_the_structural_annotator_a_new_id() -> None:
    assert (STRUCTURAL, rules_digest()) == RULES_OF_THE_STRUCTURAL_ANNOTATOR, (
        "the redaction rules changed: give the structural annotator a new id "
        "(annotate/structural.py), then put the new digest here"
    )
