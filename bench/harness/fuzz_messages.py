"""Generated JSON-RPC traffic for both faces of the server, each message with what the server
must answer to it. Shared by the fuzzing test (tests/e2e/test_fuzz.py) and the fuzzing benchmark
(bench/fuzz_bench.py), so both send the same kinds of messages and judge them alike.

A message is a `Case`: a JSON value (with slots the sender fills in: a fresh request id, the id
of the request before it, a path inside the workspace) or raw bytes, and an `Expect`ation for a
server that is initialized and serving. `expected` adapts it to the other moments of the LSP
lifecycle. `RawFrames` are LSP stdio byte sequences that break the framing itself.

What is generated: parameters of every method and tool that are well-formed JSON but wrong
(wrong types, missing or unknown fields, numbers out of range or beyond 64 bits, lone
surrogates, NUL, deep nesting, huge arrays and strings, paths outside the root, absolute paths,
globs), broken JSON-RPC envelopes (ids, versions, methods, params of the wrong kind, batches),
bodies that are not JSON, and requests sent as notifications and the other way round."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Literal

from hypothesis import strategies as st

from harness.support import SAMPLE_FILES

Face = Literal["lsp", "mcp"]
Stage = Literal["parse", "envelope", "surrogate", "method"]
"""Where the server's checks stop a message: it cannot be read (parse), it is not a valid
request or notification (envelope), its params hold a lone surrogate (surrogate), or it reaches
its method (method), whose answer depends on the lifecycle."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800
ENGINE_ERRORS = frozenset({-32010, -32011})  # workspace unavailable, read-only


# -- what a message carries -------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """JSON text put into the message as it is (numbers Python would not write, deep nesting)."""

    text: str


@dataclass(frozen=True)
class Pairs:
    """An object written with these members in order, duplicate names included."""

    members: tuple[tuple[str, Any], ...]


class IdKind(Enum):
    INT = "int"
    STR = "str"
    BIG = "big"  # beyond 64 bits: still an integer
    NEGATIVE = "negative"
    ODD_STR = "odd-str"  # a fresh string with NUL, emoji or a lone surrogate in it


@dataclass(frozen=True)
class IdSlot:
    """A fresh, valid request id, unique over the session."""

    kind: IdKind
    suffix: str = ""


@dataclass(frozen=True)
class PreviousId:
    """The id of the request sent just before (for cancellation)."""


@dataclass(frozen=True)
class InRoot:
    """A path inside the workspace, absolute or as a file URI."""

    relative: str
    uri: bool = False


@dataclass(frozen=True)
class Expect:
    """What the server must answer. `reply`: one (exactly one reply), none, or maybe (at most
    one: a cancelled MCP request). A reply is a result (accepted if `results` holds "result",
    or "tool-error" for an MCP tool result with isError) or an error with a code in `errors`."""

    reply: Literal["one", "none", "maybe"]
    null_id: bool = False
    results: frozenset[str] = frozenset()
    errors: frozenset[int] = frozenset()

    @property
    def malformed(self) -> bool:
        """A reply is due and nothing but an error will do."""
        return self.reply == "one" and not self.results


NO_REPLY = Expect("none")


def error(*codes: int, null_id: bool = False) -> Expect:
    return Expect("one", null_id=null_id, errors=frozenset(codes))


def result(*codes: int, tool_error: bool = False) -> Expect:
    results = frozenset({"result", "tool-error"} if tool_error else {"result"})
    return Expect("one", results=results, errors=frozenset(codes))


@dataclass(frozen=True)
class Case:
    label: str
    body: Any  # a JSON value with slots, or bytes sent as they are
    expect: Expect
    stage: Stage = "method"
    request: bool = False  # carries a valid id (an IdSlot)
    targets_previous: bool = False  # cancels the request sent before it


def expected(case: Case, state: Literal["uninitialized", "ready", "shut down"], face: Face) -> Expect:
    """The case's expectation at this point of LSP's lifecycle (MCP is always ready)."""
    if state == "ready" or face == "mcp" or case.stage != "method":
        return case.expect
    if not case.request:
        return NO_REPLY
    return error(SERVER_NOT_INITIALIZED if state == "uninitialized" else INVALID_REQUEST)


# -- writing it -------------------------------------------------------------------------------


Fill = Callable[[Any], Any]


def encode(value: Any, fill: Fill) -> str:
    """JSON text of `value` with its slots filled; strings keep lone surrogates as escapes."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, (IdSlot, PreviousId, InRoot)):
        return encode(fill(value), fill)
    if isinstance(value, Pairs):
        members = (f"{json.dumps(name)}:{encode(item, fill)}" for name, item in value.members)
        return "{" + ",".join(members) + "}"
    if isinstance(value, dict):
        return encode(Pairs(tuple(value.items())), fill)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(encode(item, fill) for item in value) + "]"
    return json.dumps(value)


def render(case: Case, fill: Fill) -> bytes:
    if isinstance(case.body, bytes):
        return case.body
    return encode(case.body, fill).encode("utf-8")


# -- values -----------------------------------------------------------------------------------

SAMPLE_PATHS = sorted(SAMPLE_FILES)
DIRECTORIES = ["src", "src/shop", "src/shop/payments", "web", "docs", "docs/guide", "tests", "scripts"]
INT64_MAX = 2**63 - 1

HUGE_NUMBERS = [
    2**31,
    2**53 + 1,
    INT64_MAX,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    Raw("1" + "0" * 400),
    Raw("1e999"),
    Raw("-1e999"),
    Raw("1e-999"),
    Raw("123456789012345678901234567890.5"),
]
NON_STANDARD_NUMBERS = [Raw("NaN"), Raw("Infinity"), Raw("-Infinity")]
ODD_STRINGS = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\udc80\ud800",
    "\ufeff",
    "\u202eevil",
    "\U0001f642",
    "\r\n",
    "\\",
    "%00",
    "${HOME}",
    "'; DROP TABLE files; --",
    "NaN",
    "\u0085\u2028\u2029",
]


def deep(depth: int, inner: str = "1") -> Raw:
    return Raw("[" * depth + inner + "]" * depth)


def deep_object(depth: int) -> Raw:
    return Raw('{"a":' * depth + "1" + "}" * depth)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
ANY_JSON = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def text_with_surrogate() -> st.SearchStrategy[str]:
    lone = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
    return st.tuples(st.text(max_size=8), lone, st.text(max_size=8)).map("".join)


def huge_string() -> st.SearchStrategy[str]:
    return st.sampled_from([1_000, 30_000, 300_000]).map(lambda size: "x" * size)


def odd_text() -> st.SearchStrategy[Any]:
    """Strings a server may take or refuse (never with a traceback)."""
    return st.one_of(
        st.sampled_from(ODD_STRINGS),
        st.text(st.characters(codec="utf-8"), max_size=40),
        huge_string(),
    )


# -- fields: what each parameter accepts and what it must refuse ------------------------------

Verdict = Literal["valid", "maybe", "invalid"]


@dataclass(frozen=True)
class Field:
    valid: st.SearchStrategy[Any]
    invalid: st.SearchStrategy[Any]
    odd: st.SearchStrategy[Any] | None = None
    required: bool = False


def fixed_params(fields: Mapping[str, Field]) -> st.SearchStrategy[dict[str, Any]]:
    """Valid params: every required field, some optional ones."""
    required = {name: spec.valid for name, spec in fields.items() if spec.required}
    optional = {name: spec.valid for name, spec in fields.items() if not spec.required}
    return st.fixed_dictionaries(required, optional=optional)


@st.composite
def params(draw: st.DrawFn, fields: Mapping[str, Field], verdict: Verdict) -> dict[str, Any]:
    """Params as valid as `verdict` says: valid ones, then one odd change (maybe), or one change
    that makes them wrong (invalid)."""
    value = draw(fixed_params(fields))
    if verdict == "valid":
        return value
    if verdict == "maybe":
        odd = {name: spec.odd for name, spec in fields.items() if spec.odd is not None}
        if odd:
            name = draw(st.sampled_from(sorted(odd)))
            value[name] = draw(odd[name])
        return value
    changes = ["unknown field"]
    if fields:
        changes.append("wrong value")
    if any(spec.required for spec in fields.values()):
        changes.append("missing field")
    change = draw(st.sampled_from(changes))
    if change == "unknown field":
        name = draw(
            st.sampled_from(
                ["colour", "Limit", "path", "", "\x00", "\ud800", "\U0001f642", "__proto__", "a" * 300]
            )
        )
        value[name] = draw(SCALARS)
    elif change == "missing field":
        del value[draw(st.sampled_from(sorted(name for name, spec in fields.items() if spec.required)))]
    else:
        name = draw(st.sampled_from(sorted(fields)))
        value[name] = draw(fields[name].invalid)
    return value


WRONG_FOR = {
    "int": st.one_of(
        st.text(max_size=5),
        st.booleans(),
        st.sampled_from([1.5, -0.5, 3.0]),
        st.just([]),
        st.just({}),
        st.just(deep(50)),
    ),
    "float": st.one_of(st.text(max_size=5), st.booleans(), st.just([]), st.just({"a": 1})),
    "str": st.one_of(
        st.integers(), st.booleans(), st.just([]), st.just({"a": "b"}), st.just(["x"]), st.just(deep(50))
    ),
    "bool": st.one_of(st.integers(), st.text(max_size=5), st.just([]), st.just({})),
    "list": st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.just({"0": "x"})),
    "object": st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.just([1])),
}


def wrong(kind: str, nullable: bool) -> st.SearchStrategy[Any]:
    wrong_values = WRONG_FOR[kind]
    return wrong_values if nullable else st.one_of(wrong_values, st.none())


def integer(low: int, high: int | None, *, nullable: bool = False, required: bool = False) -> Field:
    top = high if high is not None else low + 1000
    beyond = [
        value for value in HUGE_NUMBERS if isinstance(value, int) and (high is not None and value > high)
    ]
    out_of_range = st.one_of(
        st.integers(max_value=low - 1, min_value=low - 10**6),
        st.sampled_from([*beyond, Raw("1" + "0" * 400)]) if high is not None else st.just(low - 1),
    )
    return Field(
        valid=st.integers(low, min(top, low + 50)) | st.just(top),
        invalid=st.one_of(out_of_range, wrong("int", nullable), st.sampled_from(NON_STANDARD_NUMBERS)),
        required=required,
    )


def number(low_exclusive: float, high: float) -> Field:
    return Field(
        valid=st.floats(min_value=0.5, max_value=5.0),
        invalid=st.one_of(
            st.sampled_from([low_exclusive, -1.0, high + 0.5, Raw("1e999"), *NON_STANDARD_NUMBERS]),
            wrong("float", False),
        ),
    )


def text(
    low: int, high: int, *, valid: st.SearchStrategy[str], required: bool = False, nullable: bool = False
) -> Field:
    too_long = st.just("q" * (high + 1))
    return Field(
        valid=valid,
        invalid=st.one_of(
            too_long, text_with_surrogate(), wrong("str", nullable), *([st.just("")] if low else [])
        ),
        odd=odd_text(),
        required=required,
    )


def boolean() -> Field:
    return Field(valid=st.booleans(), invalid=wrong("bool", False))


def enum(values: list[str], *, nullable: bool = False, odd: list[str] | None = None) -> Field:
    return Field(
        valid=st.sampled_from(values),
        invalid=st.one_of(st.sampled_from(["", "PATH", "unknown", "\ud800"]), wrong("str", nullable)),
        odd=st.sampled_from(odd) if odd else None,
    )


def token() -> Field:
    """A progress token: an integer or a string."""
    return Field(
        valid=st.one_of(
            st.integers(0, 2**31), st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
        ),
        invalid=st.one_of(st.sampled_from([1.5, True, [], {}]), text_with_surrogate()),
    )


def listing(
    item: Field, *, max_items: int | None = None, min_items: int = 0, required: bool = False
) -> Field:
    """A list of `item`s. Huge lists are odd where the list has no limit, invalid past one."""
    bound = max_items if max_items is not None else 20_000
    valid = st.lists(item.valid, min_size=min_items, max_size=min(4, bound))
    huge = st.sampled_from([1_000, 20_000]).flatmap(lambda size: item.valid.map(lambda value: [value] * size))
    invalid_items = st.lists(item.valid, max_size=3).flatmap(
        lambda good: item.invalid.map(lambda bad: [*good, bad])
    )
    invalid = [invalid_items, wrong("list", False)]
    if max_items is not None:
        invalid.append(st.integers(max_items + 1, max_items + 50).map(lambda size: ["README.md"] * size))
    if min_items:
        invalid.append(st.just([]))
    odd = [st.lists(item.odd, min_size=1, max_size=3)] if item.odd is not None else []
    if max_items is None:
        odd.append(huge)
    return Field(
        valid=valid, invalid=st.one_of(*invalid), odd=st.one_of(*odd) if odd else None, required=required
    )


def obj(fields: Mapping[str, Field], *, nullable: bool = True) -> Field:
    """A nested Struct: valid when every member is; invalid when a member, or the whole, is wrong."""
    return Field(
        valid=fixed_params(fields),
        invalid=st.one_of(
            wrong("object", nullable),
            params(fields, "invalid"),
        ),
        odd=params(fields, "maybe"),
    )


PATH = Field(
    valid=st.one_of(
        st.sampled_from(SAMPLE_PATHS + DIRECTORIES),
        st.sampled_from(SAMPLE_PATHS + DIRECTORIES).map(InRoot),
        st.sampled_from(SAMPLE_PATHS).map(lambda path: InRoot(path, uri=True)),
        st.sampled_from(["nowhere/x.py", "src/shop/missing.py"]),
    ),
    invalid=st.one_of(
        st.sampled_from(
            [
                "",
                "../outside",
                "src/../../outside",
                "..",
                "..\\outside",
                "/",
                "/etc/passwd",
                "file:///etc/passwd",
                "file:///",
                "a\x00b",
                "\x00",
                "x" * 4097,
                "http://example.invalid/x",
            ]
        ),
        text_with_surrogate(),
        wrong("str", False),
    ),
    odd=st.one_of(
        st.sampled_from(
            [
                ".",
                "./src",
                "src//shop",
                "src/./shop/",
                "src/..",
                "~",
                "C:\\Windows",
                "%2e%2e/x",
                "*",
                "**/*.py",
                "file:",
                "file://host/x",
                "file:///%00",
                " src",
                "src/shop/cart.py ",
                "caf\u00e9/\U0001f642.py",
            ]
        ),
        odd_text(),
    ),
)
GLOB = Field(
    valid=st.sampled_from(
        ["*.py", "src/**/*.ts", "!tests/", "docs/", "*.md", "/src/", "**/cart.py", "!*.sh"]
    ),
    invalid=st.one_of(
        st.sampled_from(["", "../*.py", "src/../../*", "/", "!", "!/", "x" * 1025, "a/../b"]),
        text_with_surrogate(),
        wrong("str", False),
    ),
    odd=st.one_of(
        st.sampled_from(
            ["[", "[!", "[]", "\\", "**/**/**", "{a,b}", "*" * 500, "\x00", "/etc/*", "***", "!!x", "#x", " "]
        ),
        odd_text(),
    ),
)
QUERY_WORDS = st.sampled_from(
    ["cart", "shopping cart discount", "refund a charge", "checkout form", "deploy"]
)
STATUSES = ["pending", "annotated", "stale", "skipped"]
KINDS = ["source", "test", "docs", "config", "data", "document", "image", "generated", "binary", "other"]
PROMPT = obj({"tokens": integer(200, 200_000)})


ORDERS = ["path", "recent", "frecency", "rank"]
POSITION_VALUES = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 2**63 - 1, 2**63, -(2**63) - 1, 10**30]),
    st.text(max_size=6),
    st.floats(allow_nan=False),
    st.none(),
    st.booleans(),
    st.sampled_from([[], {}, ["a"]]),
)


def cursor_for(order: str, position: list[Any]) -> str:
    """A cursor as the server writes one: base64 of [order, position]."""
    return base64.urlsafe_b64encode(json.dumps([order, position]).encode()).decode().rstrip("=")


def forged_cursors(order: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Cursors of the server's own form whose positions have any shape: too short, too long,
    the wrong types, integers beyond 64 bits."""
    return st.builds(cursor_for, order, st.lists(POSITION_VALUES, max_size=4))


def cursors() -> st.SearchStrategy[str]:
    """Forged cursors, and strings that are no cursor at all."""
    return st.one_of(
        forged_cursors(st.sampled_from([*ORDERS, "other"])),
        st.text(max_size=20),
        st.sampled_from(["", "=", "!!!", "AAAA", "bnVsbA"]),
    )


GET_FILES = {
    "globs": listing(GLOB),
    "paths": listing(PATH),
    "tags": listing(text(1, 100, valid=st.sampled_from(["payments", "cli", "test", "nothing"]))),
    "tagsMatch": enum(["any", "all"]),
    "query": text(1, 2000, valid=QUERY_WORDS, nullable=True),
    "changedSince": integer(0, INT64_MAX // 1_000_000, nullable=True),
    "status": listing(enum(STATUSES)),
    "kinds": listing(enum(KINDS)),
    "languages": listing(text(1, 50, valid=st.sampled_from(["python", "typescript", "markdown"]))),
    "orderBy": enum(["path", "recent", "frecency"], nullable=True, odd=["rank"]),
    "limit": integer(1, 10_000, nullable=True),
    "cursor": Field(valid=st.none(), invalid=wrong("str", True), odd=cursors()),
    "batchSize": integer(1, 10_000),
    "prompt": PROMPT,
    "partialResultToken": token(),
    "workDoneToken": token(),
}
FIND_RELEVANT = {
    "query": text(1, 20_000, valid=QUERY_WORDS, required=True),
    "limit": integer(1, 500),
    "scope": obj({"globs": listing(GLOB), "paths": listing(PATH)}),
    "options": obj(
        {
            "useModel": boolean(),
            "maxModelCalls": integer(1, 50),
            "maxTokens": integer(100, None, nullable=True),
            "candidates": integer(1, 300),
            "selectTags": boolean(),
        }
    ),
    "prompt": PROMPT,
    "partialResultToken": token(),
    "workDoneToken": token(),
}
ANNOTATE = {
    "paths": listing(
        replace(PATH, valid=st.sampled_from(SAMPLE_PATHS)), min_items=1, max_items=200, required=True
    ),
    "timeout": number(0, 600),
}
DID_ACCESS = {"paths": listing(PATH, min_items=1, max_items=1000, required=True)}

FIND_RELEVANT_FILES = {
    "query": text(1, 20_000, valid=QUERY_WORDS, required=True),
    "limit": integer(1, 100),
    "globs": listing(GLOB),
    "paths": listing(PATH),
    "use_model": boolean(),
    "prompt_tokens": integer(200, 200_000),
}
LIST_FILES = {
    "globs": listing(GLOB),
    "paths": listing(PATH),
    "query": text(1, 2000, valid=QUERY_WORDS, nullable=True),
    "tags": listing(text(1, 100, valid=st.sampled_from(["payments", "cli"]))),
    "kinds": listing(enum(KINDS)),
    "languages": listing(text(1, 50, valid=st.sampled_from(["python", "markdown"]))),
    "status": listing(enum(STATUSES)),
    "changed_since": integer(0, INT64_MAX // 1_000_000, nullable=True),
    "order_by": enum(["path", "recent", "frecency"], nullable=True, odd=["rank"]),
    "limit": integer(1, 1000),
    "cursor": Field(valid=st.none(), invalid=wrong("str", True), odd=cursors()),
    "prompt_tokens": integer(200, 200_000),
}
TOOL_ARGUMENTS: dict[str, dict[str, Field]] = {
    "find_relevant_files": FIND_RELEVANT_FILES,
    "list_files": LIST_FILES,
    "index_status": {},
    "reindex_workspace": {},
    "annotate_files": ANNOTATE,
}


VERDICTS: st.SearchStrategy[Verdict] = st.sampled_from(["valid", "maybe", "invalid", "invalid"])


@dataclass(frozen=True)
class Params:
    value: Any
    verdict: Verdict
    surrogate: bool = False


def has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(has_surrogate(key) or has_surrogate(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(has_surrogate(item) for item in value)
    return False


def field_params(fields: Mapping[str, Field]) -> st.SearchStrategy[Params]:
    def judged(verdict: Verdict) -> st.SearchStrategy[Params]:
        return params(fields, verdict).map(lambda value: Params(value, verdict, has_surrogate(value)))

    return VERDICTS.flatmap(judged)


def wrong_shape() -> st.SearchStrategy[Params]:
    """Params of the wrong JSON kind altogether, or nested past what anyone reads."""
    return st.one_of(
        st.sampled_from([[], [1, 2], ["x"], [{}]]).map(lambda value: Params(value, "invalid")),
        st.sampled_from([deep_object(30), deep_object(400)]).map(
            lambda value: Params({"x": value}, "invalid")
        ),
    )


# -- messages ---------------------------------------------------------------------------------

Shape = Literal["request", "notification"]
ID_KINDS = st.one_of(
    st.sampled_from([IdKind.INT, IdKind.INT, IdKind.STR, IdKind.BIG, IdKind.NEGATIVE]).map(IdSlot),
    st.sampled_from(["\x00", "\U0001f642", " ", "\ud800", "\\\"'"]).map(
        lambda suffix: IdSlot(IdKind.ODD_STR, suffix)
    ),
)
INVALID_IDS = st.sampled_from([1.5, 2.0, -0.0, True, False, None, {"a": 1}, [1], [], Raw("1e999")])


def envelope(method: Any, params: Any, msg_id: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if msg_id is not None:
        message["id"] = msg_id
    message["method"] = method
    if params is not None:
        message["params"] = params
    return message


def call(
    label: str, method: str, shape: Shape, params_value: Params | None, on_method: Expect
) -> st.SearchStrategy[Case]:
    """A request or notification of `method`; a lone surrogate in its params is refused before
    the method sees them."""
    value = params_value.value if params_value is not None else None
    if shape == "notification":
        stage: Stage = "surrogate" if params_value is not None and params_value.surrogate else "method"
        return st.just(Case(f"{label} (notification)", envelope(method, value, None), NO_REPLY, stage))

    def build(slot: IdSlot) -> Case:
        if params_value is not None and params_value.surrogate:
            return Case(
                label, envelope(method, value, slot), error(INVALID_PARAMS), "surrogate", request=True
            )
        return Case(label, envelope(method, value, slot), on_method, request=True)

    return ID_KINDS.map(build)


def by_verdict(verdict: Verdict, *, errors: frozenset[int], tool_error: bool = False) -> Expect:
    """Valid params get a result; invalid ones an error (for an MCP tool, a tool error will do);
    odd ones either, but never an internal error."""
    if verdict == "invalid":
        return Expect("one", results=frozenset({"tool-error"}) if tool_error else frozenset(), errors=errors)
    return result(*errors, tool_error=tool_error) if verdict == "maybe" else result()


SHAPES: st.SearchStrategy[Shape] = st.sampled_from(["request", "request", "request", "notification"])


def streamed_with_prompt(value: Any) -> bool:
    """getFiles refuses a prompt-ready block for a streamed listing (documented)."""
    return isinstance(value, dict) and "prompt" in value and "partialResultToken" in value


def lsp_method(
    label: str, method: str, fields: Mapping[str, Field], refused: Callable[[Any], bool] | None = None
) -> st.SearchStrategy[Case]:
    """Requests and notifications of one method; `refused` tells valid-looking params the method
    refuses all the same."""
    cancellable = frozenset({INVALID_PARAMS, REQUEST_CANCELLED})

    def build(shape: Shape, given: Params) -> st.SearchStrategy[Case]:
        if given.verdict == "valid" and refused is not None and refused(given.value):
            given = replace(given, verdict="invalid")
        expect = by_verdict(given.verdict, errors=cancellable)
        return call(label, method, shape, given, expect)

    chosen = st.one_of(field_params(fields), field_params(fields), wrong_shape())
    return st.tuples(SHAPES, chosen).flatmap(lambda pair: build(*pair))


def execute_command() -> st.SearchStrategy[Case]:
    """workspace/executeCommand with every filescout command, and some that do not exist."""
    no_args = st.sampled_from(["filescout.reindex", "filescout.status"])
    some_args = st.lists(ANY_JSON, min_size=1, max_size=3)
    annotate_args = field_params(ANNOTATE).map(lambda given: replace(given, value=[given.value]))
    cases = st.one_of(
        st.tuples(no_args, st.sampled_from([None, []])).map(
            lambda pair: (
                pair[0],
                Params({"command": pair[0], **({} if pair[1] is None else {"arguments": pair[1]})}, "valid"),
            )
        ),
        st.tuples(no_args, some_args).map(
            lambda pair: (
                pair[0],
                Params({"command": pair[0], "arguments": pair[1]}, "invalid", has_surrogate(pair[1])),
            )
        ),
        annotate_args.map(
            lambda given: (
                "filescout.annotate",
                Params(
                    {"command": "filescout.annotate", "arguments": given.value},
                    given.verdict,
                    given.surrogate,
                ),
            )
        ),
        st.sampled_from([[], [{"paths": ["README.md"]}, {}], None]).map(
            lambda arguments: (
                "filescout.annotate",
                Params({"command": "filescout.annotate", "arguments": arguments}, "invalid"),
            )
        ),
        st.sampled_from(["filescout.nothing", "", "FILESCOUT.STATUS", "editor.action", "\x00"]).map(
            lambda name: (name, Params({"command": name}, "invalid"))
        ),
        st.sampled_from(
            [
                {},
                {"command": 5},
                {"command": None},
                {"arguments": []},
                {"command": "filescout.status", "arguments": {}},
            ]
        ).map(lambda value: ("malformed", Params(value, "invalid"))),
    )
    known_errors = frozenset({INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_CANCELLED})

    def build(shape: Shape, pair: tuple[str, Params]) -> st.SearchStrategy[Case]:
        command, given = pair
        return call(
            f"executeCommand {command}",
            "workspace/executeCommand",
            shape,
            given,
            by_verdict(given.verdict, errors=known_errors),
        )

    return st.tuples(SHAPES, cases).flatmap(lambda pair: build(*pair))


def document(uri: Any) -> dict[str, Any]:
    return {"uri": uri, "languageId": "python", "version": 1, "text": "print('x')\n"}


URIS = st.one_of(
    st.sampled_from(SAMPLE_PATHS).map(lambda path: InRoot(path, uri=True)),
    st.sampled_from(
        [
            "file:///etc/passwd",
            "file:///",
            "untitled:Untitled-1",
            "file:///nowhere/x.py",
            "file://host/share/x",
            "file:///%00",
            "not a uri",
            "",
        ]
    ),
    st.sampled_from(SAMPLE_PATHS).map(InRoot),
    st.just("file:///\ud800"),
    st.integers(),
    st.none(),
)


def document_sync() -> st.SearchStrategy[Case]:
    """Notifications the editor sends as files open, change, save and close, and as watched
    files change: whatever they hold, they get no reply. Sent as requests, they get one."""
    notifications = st.one_of(
        URIS.map(lambda uri: ("textDocument/didOpen", {"textDocument": document(uri)})),
        URIS.map(lambda uri: ("textDocument/didSave", {"textDocument": {"uri": uri}})),
        URIS.map(lambda uri: ("textDocument/didClose", {"textDocument": {"uri": uri}})),
        URIS.map(
            lambda uri: (
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "x"}]},
            )
        ),
        st.lists(st.tuples(URIS, st.sampled_from([1, 2, 3, 0, 99, "x", None])), max_size=5).map(
            lambda changes: (
                "workspace/didChangeWatchedFiles",
                {"changes": [{"uri": uri, "type": kind} for uri, kind in changes]},
            )
        ),
        st.sampled_from(
            ["textDocument/didOpen", "textDocument/didSave", "workspace/didChangeWatchedFiles"]
        ).flatmap(
            lambda method: ANY_JSON.map(lambda value: (method, {"textDocument": value, "changes": value}))
        ),
        field_params(DID_ACCESS).map(lambda given: ("files/didAccess", given.value)),
    )

    def build(shape: Shape, pair: tuple[str, Any]) -> st.SearchStrategy[Case]:
        method, value = pair
        given = Params(value, "maybe", has_surrogate(value))
        return call(method, method, shape, given, result(INVALID_PARAMS, METHOD_NOT_FOUND, INVALID_REQUEST))

    return st.tuples(
        st.sampled_from(["notification", "notification", "notification", "request"]), notifications
    ).flatmap(lambda pair: build(*pair))


def cancellations() -> st.SearchStrategy[Case]:
    """$/cancelRequest for the request before it, for ids never sent, and with bad params."""
    targeted = st.just(
        Case(
            "$/cancelRequest (previous)",
            envelope("$/cancelRequest", {"id": PreviousId()}, None),
            NO_REPLY,
            targets_previous=True,
        )
    )
    other = st.one_of(
        st.integers(), st.text(max_size=5), st.none(), st.just([]), st.just({}), st.just(1.5)
    ).map(
        lambda value: Case(
            "$/cancelRequest (other)", envelope("$/cancelRequest", {"id": value}, None), NO_REPLY
        )
    )
    malformed = st.sampled_from([{}, [], {"id": "\ud800"}]).map(
        lambda value: Case(
            "$/cancelRequest (malformed)",
            envelope("$/cancelRequest", value, None),
            NO_REPLY,
            "surrogate" if has_surrogate(value) else "method",
        )
    )
    return st.one_of(targeted, targeted, other, malformed)


def unknown_methods(face: Face) -> st.SearchStrategy[Case]:
    """Methods nobody registered: -32601 for a request, silence for a notification (LSP's `$/`
    notifications included)."""
    names = st.one_of(
        st.sampled_from(
            [
                "files/unknown",
                "files/getfiles",
                "textDocument/hover",
                "$/unknown",
                "",
                " ",
                "rpc.discover",
                "\x00",
                "\U0001f642",
                "a" * 5000,
                "resources/list",
                "prompts/get",
                "tools/unknown",
            ]
        ),
        st.text(st.characters(codec="utf-8"), max_size=30),
    )

    def build(name: str, shape: Shape, value: Any) -> st.SearchStrategy[Case]:
        given = Params(value, "valid", has_surrogate(value)) if value is not None else None
        return call(
            f"unknown method {name[:20]!r}", name, shape, given, error(METHOD_NOT_FOUND, INVALID_PARAMS)
        )

    params_value = st.one_of(st.none(), st.dictionaries(st.text(max_size=5), SCALARS, max_size=3))
    return st.tuples(names.filter(lambda name: not known_method(name, face)), SHAPES, params_value).flatmap(
        lambda triple: build(*triple)
    )


LSP_KNOWN = {
    "initialize",
    "initialized",
    "shutdown",
    "exit",
    "files/getFiles",
    "files/findRelevant",
    "files/didAccess",
    "workspace/executeCommand",
    "workspace/didChangeConfiguration",
    "workspace/didChangeWatchedFiles",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didSave",
    "textDocument/didClose",
    "textDocument/willSave",
    "textDocument/willSaveWaitUntil",
    "notebookDocument/didOpen",
    "notebookDocument/didChange",
    "notebookDocument/didSave",
    "notebookDocument/didClose",
    "workspace/didChangeWorkspaceFolders",
    "window/workDoneProgress/cancel",
    "$/setTrace",
    "$/cancelRequest",
    "$/progress",
}
MCP_KNOWN = {
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "logging/setLevel",
    "completion/complete",
}


def known_method(name: str, face: Face) -> bool:
    return name in (LSP_KNOWN if face == "lsp" else MCP_KNOWN)


def lsp_initialize_again() -> st.SearchStrategy[Case]:
    """A second initialize is refused whatever its params say."""
    given = st.one_of(
        st.just({"processId": None, "capabilities": {}, "rootUri": None}),
        ANY_JSON.filter(lambda value: isinstance(value, (dict, list))),
    )
    return given.flatmap(
        lambda value: ID_KINDS.map(
            lambda slot: Case(
                "initialize again",
                envelope("initialize", value, slot),
                error(INVALID_PARAMS if has_surrogate(value) else INVALID_REQUEST),
                "surrogate" if has_surrogate(value) else "envelope",
                request=True,
            )
        )
    )


def paging(face: Face) -> st.SearchStrategy[Case]:
    """A listing resumed from a forged cursor of its own order: a result or a field-naming
    error, whatever the cursor holds."""
    method, order_field = ("files/getFiles", "orderBy") if face == "lsp" else ("tools/call", "order_by")

    def build(order: str, cursor: str, limit: int, slot: IdSlot) -> Case:
        arguments: dict[str, Any] = {"cursor": cursor, "limit": limit}
        if order != "path":
            arguments[order_field] = order
        if order == "rank":
            arguments["query"] = "cart"
        params = arguments if face == "lsp" else {"name": "list_files", "arguments": arguments}
        expect = result(INVALID_PARAMS, REQUEST_CANCELLED, tool_error=face == "mcp")
        return Case(f"paging by {order}", envelope(method, params, slot), expect, request=True)

    order = st.sampled_from(ORDERS)
    return order.flatmap(
        lambda chosen: st.builds(
            build, st.just(chosen), forged_cursors(st.just(chosen)), st.integers(1, 5), ID_KINDS
        )
    )


def lsp_methods(*, initialized: bool = True) -> st.SearchStrategy[Case]:
    """Every method and command of the LSP face but shutdown and exit (see `lsp_lifecycle`);
    initialize too once the server is initialized."""
    methods = [
        lsp_method("files/getFiles", "files/getFiles", GET_FILES, streamed_with_prompt),
        lsp_method("files/findRelevant", "files/findRelevant", FIND_RELEVANT),
        execute_command(),
        document_sync(),
        cancellations(),
        unknown_methods("lsp"),
        paging("lsp"),
    ]
    return st.one_of(*methods, *([lsp_initialize_again()] if initialized else []))


def mcp_tool_calls() -> st.SearchStrategy[Case]:
    """tools/call for every tool with generated arguments, and for tools that do not exist."""

    def for_tool(name: str) -> st.SearchStrategy[tuple[str, Params]]:
        fields = TOOL_ARGUMENTS[name]
        return st.one_of(field_params(fields), wrong_shape()).map(lambda given: (name, given))

    known = st.sampled_from(sorted(TOOL_ARGUMENTS)).flatmap(for_tool)

    def build(pair: tuple[str, Params]) -> st.SearchStrategy[Case]:
        name, given = pair
        arguments = given.value
        expect = by_verdict(given.verdict, errors=frozenset({INVALID_PARAMS}), tool_error=True)
        if isinstance(arguments, list):  # not an object: the SDK refuses the request
            expect = error(INVALID_PARAMS)
        wrapped = Params({"name": name, "arguments": arguments}, given.verdict, given.surrogate)
        return call(f"tools/call {name}", "tools/call", "request", wrapped, expect)

    unknown = st.one_of(
        st.sampled_from(["nothing", "", "LIST_FILES", "list files", "\x00"]).map(lambda name: {"name": name}),
        st.sampled_from(
            [
                {},
                {"name": 5},
                {"name": None},
                {"arguments": {}},
                {"name": "list_files", "arguments": 5},
                {"name": "list_files", "arguments": "x"},
            ]
        ),
    ).flatmap(
        lambda value: call(
            "tools/call (malformed)", "tools/call", "request", Params(value, "invalid"), error(INVALID_PARAMS)
        )
    )
    return st.one_of(known.flatmap(build), known.flatmap(build), known.flatmap(build), unknown)


def mcp_others() -> st.SearchStrategy[Case]:
    """The rest of what an MCP client may send: listing tools, pings, notifications, another
    initialize, and features filescout does not offer."""
    listing_params = st.one_of(
        st.none(),
        st.just({}),
        st.just({"cursor": "x"}),
        st.dictionaries(st.text(max_size=5), SCALARS, max_size=2),
    )
    requests = st.one_of(
        st.tuples(st.sampled_from(["tools/list", "ping"]), listing_params),
        st.tuples(
            st.sampled_from(["logging/setLevel", "completion/complete"]),
            st.one_of(st.just({"level": "debug"}), listing_params),
        ),
        st.tuples(
            st.just("initialize"),
            st.one_of(
                st.just({}),
                st.just(
                    {
                        "protocolVersion": "1999-01-01",
                        "capabilities": {},
                        "clientInfo": {"name": "x", "version": "1"},
                    }
                ),
                listing_params,
            ),
        ),
    ).flatmap(
        lambda pair: call(
            pair[0],
            pair[0],
            "request",
            Params(pair[1], "maybe", has_surrogate(pair[1])) if pair[1] is not None else None,
            result(INVALID_PARAMS, METHOD_NOT_FOUND, INVALID_REQUEST),
        )
    )
    notifications = st.tuples(
        st.sampled_from(
            [
                "notifications/initialized",
                "notifications/progress",
                "notifications/roots/list_changed",
                "notifications/cancelled",
            ]
        ),
        st.one_of(
            st.none(),
            ANY_JSON.filter(lambda value: isinstance(value, dict)),
            st.just({"requestId": 10**30, "reason": 5}),
        ),
    ).flatmap(
        lambda pair: call(
            pair[0],
            pair[0],
            "notification",
            Params(pair[1], "maybe", has_surrogate(pair[1])) if pair[1] is not None else None,
            NO_REPLY,
        )
    )
    cancel = st.just(
        Case(
            "notifications/cancelled (previous)",
            envelope("notifications/cancelled", {"requestId": PreviousId()}, None),
            NO_REPLY,
            targets_previous=True,
        )
    )
    return st.one_of(requests, notifications, cancel, unknown_methods("mcp"), paging("mcp"))


# -- broken envelopes and bodies --------------------------------------------------------------


def broken_envelopes(face: Face) -> st.SearchStrategy[Case]:
    """Messages that are JSON but not JSON-RPC: -32600, with the id when it can be told."""
    method = "files/getFiles" if face == "lsp" else "tools/list"
    good_params: dict[str, Any] = {}
    id_errors = (
        frozenset({INVALID_REQUEST, INVALID_PARAMS}) if face == "mcp" else frozenset({INVALID_REQUEST})
    )

    def with_id(
        label: str, make: Callable[[IdSlot], Any], codes: frozenset[int] = id_errors
    ) -> st.SearchStrategy[Case]:
        return ID_KINDS.map(
            lambda slot: Case(label, make(slot), Expect("one", errors=codes), "envelope", request=True)
        )

    bad_version = st.sampled_from([None, "1.0", 2.0, 2, "2", ""]).flatmap(
        lambda version: with_id(
            f"jsonrpc {version!r}",
            lambda slot: {**({} if version is None else {"jsonrpc": version}), "id": slot, "method": method},
        )
    )
    bad_method = st.sampled_from([5, None, True, [], {"a": 1}]).flatmap(
        lambda name: with_id(f"method {name!r}", lambda slot: {"jsonrpc": "2.0", "id": slot, "method": name})
    )
    bad_params = st.sampled_from([3, "x", True, 1.5]).flatmap(
        lambda value: with_id(
            f"params {value!r}",
            lambda slot: {"jsonrpc": "2.0", "id": slot, "method": method, "params": value},
        )
    )
    only_id = with_id("no method", lambda slot: {"jsonrpc": "2.0", "id": slot})
    bad_id = INVALID_IDS.map(
        lambda value: Case(
            f"id {value!r}",
            {"jsonrpc": "2.0", "id": value, "method": method, "params": good_params},
            error(INVALID_REQUEST, null_id=True),
            "envelope",
        )
    )
    not_an_object = st.one_of(
        st.sampled_from([42, "files/getFiles", None, True, [], 1.5]),
        st.lists(st.just({"jsonrpc": "2.0", "id": 1, "method": method}), min_size=1, max_size=3),
    ).map(lambda value: Case("not an object", value, error(INVALID_REQUEST, null_id=True), "envelope"))
    stray_response = st.sampled_from(
        [
            {"result": 1},
            {"error": {"code": 1, "message": "x"}},
            {"error": "bad"},
            {"result": None, "error": None},
        ]
    ).map(
        lambda extra: Case(
            "stray response", {"jsonrpc": "2.0", "id": 987_654_321, **extra}, NO_REPLY, "envelope"
        )
    )
    bad_notification = st.sampled_from(
        [
            {"method": method},
            {"jsonrpc": "1.0", "method": method},
            {"jsonrpc": "2.0", "method": 5},
            {"jsonrpc": "2.0", "method": method, "params": 7},
        ]
    ).map(lambda value: Case("broken notification", value, NO_REPLY, "envelope"))
    duplicate_id = ID_KINDS.map(
        lambda slot: Case(
            "duplicate members",
            Pairs(
                (
                    ("jsonrpc", "2.0"),
                    ("id", "ignored"),
                    ("method", "nothing/at-all"),
                    ("id", slot),
                    ("method", method),
                )
            ),
            result(),
            request=True,
        )
    )
    return st.one_of(
        bad_version,
        bad_method,
        bad_params,
        only_id,
        bad_id,
        not_an_object,
        stray_response,
        bad_notification,
        duplicate_id,
    )


def valid_body(face: Face) -> str:
    method = "files/getFiles" if face == "lsp" else "tools/list"
    return json.dumps({"jsonrpc": "2.0", "id": 424_242, "method": method, "params": {}})


def unreadable_bodies(face: Face) -> st.SearchStrategy[Case]:
    """Bodies that are not JSON (or not UTF-8): -32700 with a null id."""
    body = valid_body(face)
    cut = st.integers(1, len(body) - 1).map(lambda at: body[:at].encode())
    garbage = st.binary(min_size=1, max_size=200).filter(
        lambda data: data.strip(b" \t\r\n") != b"" and not looks_like_json(data)
    )
    invalid_utf8 = st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"]).map(
        lambda bad: body.replace("{}", '{"query": "' + "\x00" + '"}').encode().replace(b"\x00", bad)
    )
    unreadable = st.one_of(
        cut,
        garbage,
        st.sampled_from(
            [
                b"{",
                b"}",
                b"[1,]",
                b'{"a":1,}',
                b"{'jsonrpc': '2.0'}",
                b"\xef\xbb\xbf" + body.encode(),
                body.encode() + b"xyz",
                body.encode() + body.encode(),
                b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\\ud800' + b"\\x" + b'"}}',
                ("[" * 100_000).encode(),
                deep(100_000).text.encode(),
                b'{"jsonrpc":"2.0","id":5,"method":"files/getFiles","params":{"x":'
                + deep(50_000).text.encode()
                + b"}}",
                b'{"jsonrpc":"2.0","id":5,"method":"files/getFiles","params":{"x":' + b"9" * 5000 + b"}}",
            ]
        ),
    )
    cases = unreadable.map(
        lambda data: Case("unreadable body", data, error(PARSE_ERROR, null_id=True), "parse")
    )
    if face == "lsp":
        utf8 = invalid_utf8.map(
            lambda data: Case("invalid UTF-8", data, error(PARSE_ERROR, null_id=True), "parse")
        )
        empty = st.sampled_from([b"", b" ", b"\t"]).map(
            lambda data: Case("empty body", data, error(PARSE_ERROR, null_id=True), "parse")
        )
        return st.one_of(cases, utf8, empty)
    # A line-delimited stream: a body cannot hold a line break, and blank lines are skipped.
    lines = cases.map(lambda case: replace(case, body=case.body.replace(b"\n", b" ").replace(b"\r", b" ")))
    blank = st.sampled_from([b"", b" ", b"\t"]).map(lambda data: Case("blank line", data, NO_REPLY, "parse"))
    return st.one_of(lines.filter(lambda case: case.body.strip(b" \t") != b""), blank)


def looks_like_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


def non_standard_json(face: Face) -> st.SearchStrategy[Case]:
    """NaN and Infinity, which Python's reader takes and JSON does not: refused as a parse
    error or as a wrong value, never served."""
    method, field_name = ("files/getFiles", "limit") if face == "lsp" else ("tools/call", "arguments")
    value: Callable[[Raw], Any] = (
        (lambda raw: raw)
        if face == "lsp"
        else (lambda raw: {"name": "list_files", "arguments": {"limit": raw}})
    )
    return st.tuples(st.sampled_from(NON_STANDARD_NUMBERS), ID_KINDS).map(
        lambda pair: Case(
            "non-standard number",
            {
                "jsonrpc": "2.0",
                "id": pair[1],
                "method": method,
                "params": {field_name: value(pair[0])} if face == "lsp" else value(pair[0]),
            },
            Expect(
                "one",
                results=frozenset({"tool-error"}) if face == "mcp" else frozenset(),
                errors=frozenset({PARSE_ERROR, INVALID_PARAMS, INVALID_REQUEST}),
            ),
            request=True,
        )
    )


def lsp_messages(*, initialized: bool = True) -> st.SearchStrategy[Case]:
    """One message of any kind to an LSP server (neither shutdown nor exit; no initialize
    before the server is initialized)."""
    methods = lsp_methods(initialized=initialized)
    return st.one_of(
        methods, methods, methods, broken_envelopes("lsp"), unreadable_bodies("lsp"), non_standard_json("lsp")
    )


def mcp_messages() -> st.SearchStrategy[Case]:
    """One line to an initialized MCP server."""
    return st.one_of(
        mcp_tool_calls(),
        mcp_tool_calls(),
        mcp_others(),
        broken_envelopes("mcp"),
        unreadable_bodies("mcp"),
        non_standard_json("mcp"),
    )


def batches(messages: st.SearchStrategy[Case], max_size: int = 8) -> st.SearchStrategy[list[Case]]:
    return st.lists(messages, min_size=1, max_size=max_size)


def lsp_lifecycle(method: Literal["shutdown", "exit"]) -> st.SearchStrategy[Case]:
    """shutdown and exit in envelopes broken enough that the server must not act on them."""
    shapes = st.one_of(
        ID_KINDS.map(
            lambda slot: Case(
                f"{method}: jsonrpc 1.0",
                {"jsonrpc": "1.0", "id": slot, "method": method},
                error(INVALID_REQUEST),
                "envelope",
                request=True,
            )
        ),
        ID_KINDS.map(
            lambda slot: Case(
                f"{method}: scalar params",
                {"jsonrpc": "2.0", "id": slot, "method": method, "params": 5},
                error(INVALID_REQUEST),
                "envelope",
                request=True,
            )
        ),
        INVALID_IDS.map(
            lambda value: Case(
                f"{method}: bad id",
                {"jsonrpc": "2.0", "id": value, "method": method},
                error(INVALID_REQUEST, null_id=True),
                "envelope",
            )
        ),
        st.just(Case(f"{method}: broken notification", {"method": method}, NO_REPLY, "envelope")),
        st.just(
            Case(
                f"{method}: surrogate",
                {"jsonrpc": "2.0", "method": method, "params": {"\ud800": 1}},
                NO_REPLY,
                "surrogate",
            )
        ),
        st.just(
            Case(
                f"{method}: cut short",
                json.dumps({"jsonrpc": "2.0", "method": method}).encode()[:-3],
                error(PARSE_ERROR, null_id=True),
                "parse",
            )
        ),
    )
    return shapes


# -- LSP framing ------------------------------------------------------------------------------

FRAME_LIMIT = 16 * 1024 * 1024


@dataclass(frozen=True)
class RawFrames:
    """Bytes that break LSP's framing. `fine` frames must be answered as usual; `maybe` ids may
    be swallowed by a bad frame before them; `bad` says at least one error (-32700/-32600, null
    id) is due. `make` builds the bytes from a fresh id per entry of `ids`."""

    label: str
    make: Callable[[list[str]], bytes]
    ids: int = 1
    bad: bool = True
    fine: bool = False  # every id must be answered


def probe_body(msg_id: str) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "method": "files/getFiles", "params": {"limit": 1}}
    ).encode()


def framed(
    body: bytes, *, length: int | None = None, newline: bytes = b"\r\n", headers: bytes = b""
) -> bytes:
    declared = len(body) if length is None else length
    return b"Content-Length: %d%s%s%s%s" % (declared, newline, headers, newline, body)


def with_header(value: bytes) -> Callable[[list[str]], bytes]:
    return lambda ids: b"Content-Length: " + value + b"\r\n\r\n" + probe_body(ids[0])


def too_long_then_frame(extra: int) -> Callable[[list[str]], bytes]:
    """A frame that declares more than it holds: the next frame (and padding) complete it."""

    def make(ids: list[str]) -> bytes:
        follower = framed(probe_body(ids[1]))
        return framed(probe_body(ids[0]), length=len(probe_body(ids[0])) + extra) + follower + b" " * extra

    return make


def raw_frames() -> st.SearchStrategy[RawFrames]:
    """Framing errors: bad, negative, huge and missing Content-Length, truncated bodies, garbage
    between frames, LF-only and odd headers, invalid UTF-8."""
    lengths = st.one_of(
        st.sampled_from(
            [b"-5", b"-0", b"five", b"12.5", b"0x10", b"+10", b"", b" ", b"1 2", b"\xff", b"10" * 20]
        ),
        st.sampled_from([FRAME_LIMIT + 1, 10**12, 2**64, 10**40]).map(lambda n: str(n).encode()),
        st.binary(max_size=12).filter(
            lambda data: b"\n" not in data and b"\r" not in data and not data.strip().isdigit()
        ),
    )
    bad_header = lengths.map(lambda value: RawFrames(f"Content-Length {value[:20]!r}", with_header(value)))
    short = st.integers(0, 40).map(
        lambda n: RawFrames(
            f"declared {n} bytes short",
            lambda ids, n=n: framed(probe_body(ids[0]), length=max(len(probe_body(ids[0])) - 1 - n, 0)),
        )
    )
    long = st.integers(1, 300).map(
        lambda extra: RawFrames(f"declared {extra} bytes long", too_long_then_frame(extra), ids=2)
    )
    truncated = st.integers(1, 40).map(
        lambda keep: RawFrames(
            f"body cut after {keep} bytes",
            lambda ids, keep=keep: (
                framed(probe_body(ids[0]), length=len(probe_body(ids[0])))[: -len(probe_body(ids[0])) + keep]
                + framed(probe_body(ids[1]))
                + b" " * len(probe_body(ids[0]))
            ),
            ids=2,
        )
    )
    missing = st.sampled_from(
        [b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n", b"\r\n\r\n", b"X: 1\r\n\r\n"]
    ).map(
        lambda headers: RawFrames(
            "no Content-Length", lambda ids, headers=headers: headers + probe_body(ids[0])
        )
    )
    garbage = (
        st.binary(min_size=1, max_size=300)
        .filter(lambda data: b"content-length:" not in data.lower() and data.strip() != b"")
        .map(
            lambda data: RawFrames(
                "garbage between frames",
                lambda ids, data=data: data + b"\r\n" + framed(probe_body(ids[0])),
                bad=False,
                fine=True,
            )
        )
    )
    lf_only = st.sampled_from([b"\n", b"\r\n"]).flatmap(
        lambda newline: st.sampled_from(
            [b"", b"Content-Type: application/vscode-jsonrpc; charset=utf-8\n", b"content-LENGTH-x: 1\r\n"]
        ).map(
            lambda headers: RawFrames(
                "LF-only or odd headers",
                lambda ids, headers=headers, newline=newline: framed(
                    probe_body(ids[0]), newline=newline, headers=headers
                ),
                bad=False,
                fine=True,
            )
        )
    )
    header_case = st.sampled_from([b"content-length", b"CONTENT-LENGTH", b"Content-length"]).map(
        lambda name: RawFrames(
            "header name case",
            lambda ids, name=name: name + b": %d\r\n\r\n" % len(probe_body(ids[0])) + probe_body(ids[0]),
            bad=False,
            fine=True,
        )
    )
    odd_headers = st.sampled_from(
        [
            b"Content-Length : %d\r\n\r\n",
            b"Content-Length: %d\r\nContent-Length: 1\r\n\r\n",
            b"Content-Length: %d\r\n" + b"".join(b"X-%d: b\r\n" % n for n in range(40)) + b"\r\n",
            b"Content-Length: %d\r\nX: " + b"y" * 9000 + b"\r\n\r\n",
            b"Content-Length: %d\r\nno colon here\r\n\r\n",
            b"Content-Length:%d\r\n\r\n",
            b"Content-Length: %d\r\r\n\r\n",
        ]
    ).map(
        lambda template: RawFrames(
            f"odd header {template[:24]!r}",
            lambda ids, template=template: template % len(probe_body(ids[0])) + probe_body(ids[0]),
            bad=not template.startswith(b"Content-Length:%d"),
            fine=template.startswith(b"Content-Length:%d"),
        )
    )
    invalid_utf8 = st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf"]).map(
        lambda bad: RawFrames(
            "invalid UTF-8 body",
            lambda ids, bad=bad: framed(probe_body(ids[0]).replace(b'"limit"', b'"li' + bad + b'mit"')),
        )
    )
    zero = st.just(
        RawFrames(
            "Content-Length 0",
            lambda ids: b"Content-Length: 0\r\n\r\n" + framed(probe_body(ids[0])),
            fine=True,
        )
    )
    return st.one_of(
        bad_header,
        short,
        long,
        truncated,
        missing,
        garbage,
        lf_only,
        header_case,
        odd_headers,
        invalid_utf8,
        zero,
    )
