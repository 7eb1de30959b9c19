"""The model-free stage in-process: general rules of the ranking, on a small real index."""

from __future__ import annotations

from pathlib import Path

import pytest_asyncio

from filescout.annotate.structural import ANNOTATOR_ID
from filescout.index import Index
from filescout.relevance.evidence import TextMatches, find_named_files, telling_terms
from filescout.relevance.filters import PathFilter
from filescout.relevance.prefilter import prefilter
from filescout.relevance.query import analyse
from filescout.relevance.signals import Signals
from filescout.scan.classify import is_declaration, is_vendored
from small_index import indexed

FILES = {
    "app/routing.py": "class Router:\n    def add_route(self, path, handler):\n        pass\n\n"
    "def url_for(name):\n    return name\n",
    "app/templating.py": "def render_template(name):\n    return name  # routing helpers are elsewhere\n",
    "tests/test_routing.py": "from app.routing import Router\n\ndef test_add_route():\n    Router().add_route('/', None)\n",
    "docs/routing.md": "# Routing\n\nHow routes are matched and how url_for builds a route.\n",
    "app/links.py": "from app.routing import url_for\n\ndef home():\n    return url_for('home')\n\n"
    "def about():\n    return url_for('about') or url_for('home') or url_for('index')\n",
    "app/template.py": "def pick(names):\n    return names[0]\n",
}


@pytest_asyncio.fixture
async def index(tmp_path: Path):
    opened = await indexed(tmp_path, FILES)
    yield opened
    await opened.close()


async def ranking(index: Index, question: str, scope: PathFilter = PathFilter()) -> list[str]:
    found = await prefilter(index, analyse(question), limit=10, scope=scope, current=ANNOTATOR_ID)
    return [candidate.item.path for candidate in found]


async def test_source_comes_before_its_tests_and_docs_unless_asked(index: Index) -> None:
    assert (await ranking(index, "how are routes added to the router"))[0] == "app/routing.py"
    asked = await ranking(index, "which tests cover adding a route to the router")
    assert asked.index("tests/test_routing.py") < asked.index("docs/routing.md")


async def test_a_named_symbol_lifts_the_file_that_defines_it(index: Index) -> None:
    found = await prefilter(
        index, analyse("`url_for` returns the wrong name"), limit=5, scope=PathFilter(), current=ANNOTATOR_ID
    )
    assert found[0].item.path == "app/routing.py"
    assert "defines `url_for` the question mentions" in found[0].reasons
    users = [candidate for candidate in found if candidate.item.path == "app/links.py"]
    assert users and not any("defines" in reason for reason in users[0].reasons)


async def test_the_file_defining_a_mentioned_symbol_comes_before_its_busier_users(index: Index) -> None:
    ranked = await ranking(index, "url_for builds the wrong links")
    assert ranked.index("app/routing.py") < ranked.index("app/links.py")


async def test_a_named_file_is_said_to_be_named_and_an_ordinary_word_is_not(index: Index) -> None:
    plain = await prefilter(
        index, analyse("which template do we pick"), limit=5, scope=PathFilter(), current=ANNOTATOR_ID
    )
    assert not any("names this file" in reason for candidate in plain for reason in candidate.reasons)
    named = await prefilter(
        index, analyse("which names does template.py pick"), limit=5, scope=PathFilter(), current=ANNOTATOR_ID
    )
    assert named[0].item.path == "app/template.py"
    assert "the question names this file" in named[0].reasons


async def test_scope_limits_the_candidates(index: Index) -> None:
    assert await ranking(index, "routing", PathFilter(prefixes=("docs",))) == ["docs/routing.md"]


def test_common_terms_are_dropped_only_in_large_indexes() -> None:
    terms = ["route", "the", "handler"]
    assert telling_terms(terms, {"the": 900, "route": 3}, total=1000) == terms  # small: keep all
    frequency = {"the": 50_000, "route": 30, "handler": 400}
    assert telling_terms(terms, frequency, total=100_000) == ["route", "handler"]


async def test_a_named_file_the_searches_missed_is_looked_up_by_its_name(index: Index) -> None:
    matches = TextMatches()  # as if the full-text searches had not ranked it among the best
    await find_named_files(index, analyse("crash in `template.py` and in missing.py"), matches)
    assert list(matches.hits) == ["app/template.py"]  # not app/templating.py, whose words stem alike
    assert matches.scores["app/template.py"][0] > 0
    found = TextMatches()
    await find_named_files(index, analyse("how is a template picked"), found)
    assert not found.hits


async def test_without_mentions_a_mentioned_symbol_lifts_no_one(index: Index) -> None:
    question = analyse("`url_for` returns the wrong name")
    found = await prefilter(
        index, question, limit=5, scope=PathFilter(), current=ANNOTATOR_ID, signals=Signals(mentions=False)
    )
    assert not any("the question mentions" in reason for candidate in found for reason in candidate.reasons)


async def test_the_files_of_a_named_folder_the_searches_missed_are_looked_up(tmp_path: Path) -> None:
    """`internal/testutil/daemon: …` begins a subject as Go's commits do: the files directly in
    that folder are candidates even when the searches ranked none of them (their words too
    common in a large workspace), not its subfolders' files."""
    opened = await indexed(
        tmp_path,
        {
            "internal/testutil/daemon/daemon.go": "package daemon\n\nfunc New() *Daemon { return nil }\n",
            "internal/testutil/daemon/ops.go": "package daemon\n\nfunc WithInit() {}\n",
            "internal/testutil/daemon/swarm/swarm.go": "package swarm\n\nfunc Join() {}\n",
            "daemon/daemon.go": "package daemon\n\nfunc Start() {}\n",
        },
    )
    try:
        matches = TextMatches()  # as if the full-text searches had not ranked them among the best
        await find_named_files(opened, analyse("internal/testutil/daemon: fix minor linting issues"), matches)
        assert {"internal/testutil/daemon/daemon.go", "internal/testutil/daemon/ops.go"} <= set(matches.hits)
        assert "internal/testutil/daemon/swarm/swarm.go" not in matches.hits
        ranked = await ranking(opened, "internal/testutil/daemon: fix minor linting issues")
        assert ranked[0] == "internal/testutil/daemon/daemon.go"  # named as the folder
        nothing = TextMatches()
        await find_named_files(opened, analyse("read/write errors are swallowed"), nothing)
        assert not nothing.hits
    finally:
        await opened.close()


VENDORED = {
    "vendor/github.com/acme/retry/backoff.go": "package retry\n\n// Backoff retries with exponential backoff.\n"
    "func Backoff(retries int) int {\n\t// retry, backoff, retry again with backoff\n\treturn retries * 2\n}\n",
    "internal/client/retry.go": "package client\n\n// Do sends a request and retries it.\nfunc Do(retries int) int {\n"
    "\treturn retries\n}\n",
}


async def test_code_copied_in_from_other_projects_sits_below_the_workspaces_own(tmp_path: Path) -> None:
    """`vendor/` holds another project's code: a question about the workspace wants its own
    client first, however well the vendored module's words match; a question about the
    dependency does not push the vendored module down."""
    opened = await indexed(tmp_path, VENDORED)
    try:
        assert (await ranking(opened, "how does the client retry with backoff"))[
            0
        ] == "internal/client/retry.go"
        assert (await ranking(opened, "bump the retry backoff dependency to v2"))[0] == (
            "vendor/github.com/acme/retry/backoff.go"
        )
    finally:
        await opened.close()


DECLARED = {
    "index.d.ts": "/** How a request retries on a timeout. */\nexport interface RequestConfig {\n"
    "  timeout?: number;\n  retries?: number;\n  retryOnTimeout?: boolean;\n}\n"
    "/** Sends a request; retries it on a timeout, as the config says. */\n"
    "export declare function request(config: RequestConfig): Promise<Response>;\n"
    "export declare function retryRequest(config: RequestConfig, retries: number): Promise<Response>;\n",
    "lib/core/dispatch.js": "// Sends a request; on a timeout, retries it.\n"
    "export function request(config) {\n  return send(config.timeout, config.retries);\n}\n",
    **{
        f"lib/format{n}.js": f"// Formats value number {n}.\nexport function format{n}(value) {{\n  return String(value);\n}}\n"
        for n in range(8)
    },
}


async def test_a_declaration_file_sits_below_the_code_it_declares_unless_types_are_asked(
    tmp_path: Path,
) -> None:
    """`index.d.ts` restates every name the library defines, so its words match any question
    about the code; the code comes first, and the declarations when the question is about types."""
    opened = await indexed(tmp_path, DECLARED)
    try:
        assert (await ranking(opened, "request retries on timeout config"))[0] == "lib/core/dispatch.js"
        assert (await ranking(opened, "fix the request config types for retries on timeout"))[
            0
        ] == "index.d.ts"
    finally:
        await opened.close()


def test_declaration_files_are_told_by_their_names() -> None:
    assert is_declaration("index.d.ts") and is_declaration("types/index.d.cts")
    assert is_declaration("mypy/typeshed/stdlib/os/__init__.pyi")
    assert not is_declaration("lib/index.ts") and not is_declaration("src/d.ts.py")


def test_vendored_directories_are_told_by_their_names() -> None:
    assert is_vendored("vendor/github.com/acme/retry/backoff.go")
    assert is_vendored("src/third_party/zlib/inflate.c")
    assert not is_vendored("internal/vendoring/plan.go")  # a word in a name is not the directory
    assert not is_vendored("vendor.go")
