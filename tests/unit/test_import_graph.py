"""The import graph: edges found by key whatever order files arrive in, kept current as files
change and go, and the small lift the prefilter gives a leader's neighbours."""

from __future__ import annotations

from pathlib import Path

from filescout.annotate.structural import ANNOTATOR_ID
from filescout.core.import_keys import import_keys, provided_keys
from filescout.index import Index
from filescout.relevance.filters import PathFilter
from filescout.relevance.graph import Links, read_links, spread
from filescout.relevance.prefilter import prefilter
from filescout.relevance.query import analyse
from filescout.relevance.signals import Signals
from small_index import put

PARSER = "from .lexer import Lexer\nfrom . import nodes\n\nclass Parser:\n    pass\n"
POOL = ["pkg/lexer.py", "pkg/nodes.py", "pkg/parser.py", "pkg/other.py"]


def test_keys_meet_across_languages_and_package_files() -> None:
    assert "py:pkg.lexer" in import_keys("pkg/parser.py", "python", [".lexer"])
    assert "py:pkg.lexer" in provided_keys("pkg/lexer.py")
    assert "py:werkzeug.routing" in provided_keys("src/werkzeug/routing.py")  # an absolute import
    assert import_keys("lib/axios.js", "javascript", ["./core/Axios.js", "follow-redirects"]) == [
        "js:lib/core/Axios"
    ]
    assert provided_keys("lib/helpers/index.ts") == ["js:lib/helpers"]
    assert import_keys("cmd/main.go", "go", ["fmt", "example.com/app/internal/store"]) == [
        "go:internal/store",
        "go:store",
    ]


async def test_edges_appear_in_any_order_and_follow_changes(tmp_path: Path) -> None:
    index = await Index.open(tmp_path / "index.sqlite3")
    try:
        await put(index, {"pkg/parser.py": PARSER})  # before what it imports is indexed
        await put(
            index, {"pkg/lexer.py": "class Lexer:\n    pass\n", "pkg/nodes.py": "class Node:\n    pass\n"}
        )
        await put(index, {"pkg/other.py": "import os\n"})
        links = await read_links(index, ["pkg/lexer.py", "pkg/parser.py"], POOL)
        assert links.imported_by["pkg/lexer.py"] == {"pkg/parser.py"}
        assert links.imports["pkg/parser.py"] == {"pkg/lexer.py", "pkg/nodes.py"}

        await put(index, {"pkg/parser.py": "from . import nodes\n"})  # no longer uses the lexer
        links = await read_links(index, ["pkg/lexer.py", "pkg/parser.py"], POOL)
        assert not links.imported_by.get("pkg/lexer.py")
        assert links.imports["pkg/parser.py"] == {"pkg/nodes.py"}

        await index.files.apply_changes([], ["pkg/parser.py"], current=ANNOTATOR_ID)
        assert await index.graph.keys_of("pkg/parser.py") == []
        links = await read_links(index, ["pkg/nodes.py"], POOL)
        assert not links.imported_by.get("pkg/nodes.py")
    finally:
        await index.close()


def test_a_neighbour_wins_a_near_tie_but_not_over_a_clearly_better_file() -> None:
    ranked = [(10.0, "leader.py"), (6.0, "better.py"), (4.02, "rival.py"), (4.0, "neighbour.py")]
    lifts = spread(ranked, Links(imports={"leader.py": {"neighbour.py"}}))
    assert set(lifts) == {"neighbour.py"} and lifts["neighbour.py"].imported
    lifted = 4.0 + lifts["neighbour.py"].amount
    assert 4.02 < lifted < 6.0


def test_a_neighbour_stays_below_the_leader_that_lifted_it() -> None:
    ranked = [(10.0, "first.py"), (5.0, "leader.py"), (4.99, "neighbour.py")]
    lifts = spread(ranked, Links(imported_by={"leader.py": {"neighbour.py"}}))
    assert 4.99 + lifts["neighbour.py"].amount < 5.0
    assert not lifts["neighbour.py"].imported  # it imports the leader


async def test_the_prefilter_says_which_leader_lifted_a_file_and_honours_scope(tmp_path: Path) -> None:
    index = await Index.open(tmp_path / "index.sqlite3")
    try:
        await put(
            index,
            {
                "pkg/parser.py": "from .lexer import Lexer\n\ndef parse_template_blocks(source):\n"
                "    return [block for block in Lexer().tokens(source) if block]\n",
                "pkg/lexer.py": "class Lexer:\n    def tokens(self, source):\n        return source.split()  # blocks\n",
                "other/tokens.py": "def split_words(source):\n    return source.split()  # blocks\n",
                **{f"misc/m{n}.py": f"def helper_{n}(x):\n    return x + {n}\n" for n in range(6)},
            },
        )
        question = analyse("parse template blocks")
        found = await prefilter(index, question, limit=5, scope=PathFilter(), current=ANNOTATOR_ID)
        alone = await prefilter(
            index, question, limit=5, scope=PathFilter(), current=ANNOTATOR_ID, signals=Signals(imports=False)
        )
        scoped = await prefilter(
            index,
            question,
            limit=5,
            scope=PathFilter(prefixes=("pkg/lexer.py", "other")),
            current=ANNOTATOR_ID,
        )
    finally:
        await index.close()
    paths = [item.item.path for item in found]
    assert paths[:2] == ["pkg/parser.py", "pkg/lexer.py"]
    assert "imported by parser.py, a leading match" in found[1].reasons
    assert [item.item.path for item in alone][:3] == ["pkg/parser.py", "other/tokens.py", "pkg/lexer.py"]
    assert not any("leading match" in reason for item in alone for reason in item.reasons)
    # Out of scope, the parser neither shows nor lifts what it imports.
    assert "pkg/parser.py" not in [item.item.path for item in scoped]
    assert not any("leading match" in reason for item in scoped for reason in item.reasons)
