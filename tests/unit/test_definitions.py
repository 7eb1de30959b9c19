"""Definitions: what the outline says each one is, how the index keeps them by content, and
how their scores roll up to files in the prefilter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from filescout.annotate.jobs import with_index_words
from filescout.annotate.outline import MAX_SYMBOLS, outline_code
from filescout.annotate.structural import ANNOTATOR_ID, annotate_structure
from filescout.core.packing import ORDINALS
from filescout.core.records import Annotation, Definition, DefinitionHit, FileRecord, FileToAnnotate
from filescout.index import Index
from filescout.relevance.definitions import roll_up
from filescout.relevance.filters import PathFilter
from filescout.relevance.prefilter import prefilter
from filescout.relevance.query import analyse
from filescout.relevance.signals import Signals
from filescout.scan.classify import classify


def described(source: str, language: str) -> dict[str, Definition]:
    """The definitions by name (an `impl` by `impl Name`)."""
    outline = outline_code(source.encode(), language)
    assert outline is not None
    return {(f"impl {item.name}" if item.kind == "impl" else item.name): item for item in outline.definitions}


def test_python_signatures_docstrings_and_comments() -> None:
    found = described(
        "import functools\n\n"
        "# Builds links.\n"
        "@functools.cache\n"
        "def url_for(\n    endpoint,\n    *,\n    _anchor=None,\n):\n"
        '    """Generate a URL to the given endpoint. It honours anchors. And more.\n\n'
        '    Details nobody needs here.\n    """\n'
        "    return endpoint\n\n\n"
        "class Router(Base):\n"
        "    def add(self, path: str) -> None:  # not a doc\n"
        "        pass\n",
        "python",
    )
    url_for = found["url_for"]
    assert url_for.signature == "def url_for(endpoint, *, _anchor=None)"
    assert url_for.doc == "Generate a URL to the given endpoint. It honours anchors."
    assert url_for.line == 5 and url_for.kind == "function"
    assert found["add"].signature == "def add(self, path: str) -> None"
    assert (found["add"].container, found["add"].doc) == ("Router", "")
    assert found["Router"].signature == "class Router(Base)"


def test_doc_comments_above_javascript_and_typescript_definitions() -> None:
    found = described(
        "/**\n * Build a URL by appending params.\n * @param {string} url\n */\n"
        "export function buildURL(url, params) {\n  return url;\n}\n\n"
        "// Merge two configs.\nconst mergeConfig = (a, b) => ({ ...a, ...b });\n\n"
        "// A comment with a blank line after it.\n\nfunction lonely() {}\n",
        "javascript",
    )
    assert (found["buildURL"].signature, found["buildURL"].doc) == (
        "function buildURL(url, params)",
        "Build a URL by appending params.",
    )
    assert (found["mergeConfig"].signature, found["mergeConfig"].doc) == (
        "const mergeConfig = (a, b) =>",
        "Merge two configs.",
    )
    assert found["lonely"].doc == ""
    typed = described(
        "/** Create the client. */\nexport async function create(opts: Props): Promise<Client> {\n"
        "  return make(opts);\n}\n",
        "typescript",
    )
    assert typed["create"].signature == "async function create(opts: Props): Promise<Client>"
    assert typed["create"].doc == "Create the client."


def test_doc_comments_in_go_and_rust() -> None:
    go = described(
        "package web\n\n// Handle registers a handler. It replaces any before.\n"
        "func (r *Router) Handle(p string) error {\n\treturn nil\n}\n",
        "go",
    )
    assert go["Handle"].signature == "func (r *Router) Handle(p string) error"
    assert go["Handle"].doc == "Handle registers a handler. It replaces any before."
    rust = described(
        "/// A parsed header.\n#[derive(Debug)]\npub struct Header { name: String }\n\n"
        "impl Header {\n    /// Parse one line.\n    pub fn parse(line: &str) -> Self { todo!() }\n}\n",
        "rust",
    )
    assert (rust["Header"].signature, rust["Header"].doc) == ("pub struct Header", "A parsed header.")
    assert (rust["parse"].signature, rust["parse"].doc) == (
        "pub fn parse(line: &str) -> Self",
        "Parse one line.",
    )
    assert rust["parse"].container == "Header"


def record(path: str, text: str, digest: str) -> tuple[FileRecord, FileToAnnotate]:
    kind = classify(path, text.encode()[:100])
    return (
        FileRecord(path, len(text), 1, digest, kind.language, kind.kind, None),
        FileToAnnotate(path, digest, kind.language, kind.kind, text),
    )


async def build(tmp_path: Path, files: dict[str, tuple[str, str]]) -> Index:
    """An index of `files` (path -> (text, content hash)), annotated structurally."""
    index = await Index.open(tmp_path / "index.sqlite3")
    pairs = [record(path, text, digest) for path, (text, digest) in files.items()]
    await index.files.apply_changes([file for file, _ in pairs], [], current=ANNOTATOR_ID)
    annotations = {item.hash: annotate_structure(item) for _, item in pairs}
    await index.annotations.save(ANNOTATOR_ID, list(annotations.items()))
    return index


CHECKSUMS = (
    'def verify_checksum(data):\n    """Verify the checksum of a downloaded archive."""\n    return data\n'
)


async def test_definitions_are_kept_by_content_and_go_with_it(tmp_path: Path) -> None:
    index = await build(tmp_path, {"a/checks.py": (CHECKSUMS, "h1"), "b/copy.py": (CHECKSUMS, "h1")})
    try:
        assert [item.name for item in await index.definitions.of("h1")] == ["verify_checksum"]
        hits = await index.definitions.search('"checksum"', limit=10, weights=(4.0, 1.0, 1.0, 2.0))
        assert sorted(hit.path for hit in hits) == ["a/checks.py", "b/copy.py"]  # copies share them
        await index.files.apply_changes([], ["a/checks.py"], current=ANNOTATOR_ID)
        assert await index.annotations.drop_orphans() == 0  # the copy still has the content
        assert await index.definitions.of("h1")
        await index.files.apply_changes([], ["b/copy.py"], current=ANNOTATOR_ID)
        assert await index.annotations.drop_orphans() == 1
        assert await index.definitions.of("h1") == []
        assert await index.definitions.search('"checksum"', limit=10, weights=(4.0, 1.0, 1.0, 2.0)) == []
    finally:
        await index.close()


def unrelated_functions(count: int) -> str:
    topics = ["render", "layout", "colour", "palette", "widget", "button", "scroll", "cursor"]
    return "".join(
        f"def {topics[n % 8]}_{topics[(n * 3 + 1) % 8]}_{n}(frame, {topics[(n + 5) % 8]}):\n"
        f"    return frame.{topics[(n + 2) % 8]}({topics[(n + 5) % 8]}, {n})\n\n"
        for n in range(count)
    )


async def test_a_large_file_with_one_matching_function_beats_its_bulk(tmp_path: Path) -> None:
    small = "def fetch(url):\n    # verify the archive checksum: a verified archive with a checksum\n    return url\n"
    files = {
        "ui/screen.py": (unrelated_functions(20) + CHECKSUMS + unrelated_functions(90), "big"),
        "net/fetch.py": (small, "small"),
        # Words are worth something only against files without them.
        **{f"misc/m{n}.py": (f"def helper_{n}(x):\n    return x + {n}\n", f"m{n}") for n in range(8)},
    }
    index = await build(tmp_path, files)
    question = analyse("verify the checksum of an archive")
    try:
        found = await prefilter(index, question, limit=5, scope=PathFilter(), current=ANNOTATOR_ID)
        without = await prefilter(
            index,
            question,
            limit=5,
            scope=PathFilter(),
            current=ANNOTATOR_ID,
            signals=Signals(definitions=False),
        )
    finally:
        await index.close()
    assert [item.item.path for item in without][0] == "net/fetch.py"  # the bulk drowns the function
    assert [item.item.path for item in found][0] == "ui/screen.py"
    assert "defines `verify_checksum` (def verify_checksum(data)), which matches" in found[0].reason
    assert not any("defines" in reason for item in without for reason in item.reasons)


def hit(path: str, name: str, rank: float) -> DefinitionHit:
    return DefinitionHit(path, rank, Definition(name, "function", None, f"def {name}()", "", 1))


def test_more_matching_definitions_add_a_bounded_bonus() -> None:
    many = [hit("getters.py", f"get_{n}", 1.0) for n in range(10)]
    rolled = roll_up(
        [*many, hit("one.py", "the_one", 1.9), hit("pair.py", "a", 1.0), hit("pair.py", "b", 1.0)]
    )
    assert rolled["getters.py"].score == 1.0 + 0.5 + 0.25  # ten matches count as three, discounted
    assert rolled["pair.py"].score == 1.5 > rolled["one.py"].score * 0.75
    assert rolled["one.py"].score > rolled["getters.py"].score
    assert rolled["one.py"].best.name == "the_one"


WEIGHTS = (4.0, 1.0, 1.0, 2.0)
THREE = (
    "def render_frame(frame):\n    return frame\n\n\n"
    'def verify_checksum(data):\n    """Verify the checksum of a downloaded archive."""\n    return data\n\n\n'
    "class Palette:\n    def blend_colours(self, other):\n        return other\n"
)


async def test_a_hit_names_its_own_file_and_definition(tmp_path: Path) -> None:
    index = await build(tmp_path, {"a/three.py": (THREE, "h3"), "b/checks.py": (CHECKSUMS, "h1")})
    try:
        found = {
            (hit.path, hit.definition.name, hit.definition.line, hit.definition.container)
            for hit in await index.definitions.search('"blend"', limit=10, weights=WEIGHTS)
        }
        assert found == {("a/three.py", "blend_colours", 11, "Palette")}
        checksum = await index.definitions.search('"checksum"', limit=10, weights=WEIGHTS)
        assert sorted((hit.path, hit.definition.name, hit.definition.line) for hit in checksum) == [
            ("a/three.py", "verify_checksum", 5),
            ("b/checks.py", "verify_checksum", 1),
        ]
        assert [item.name for item in await index.definitions.of("h3")] == [
            "render_frame",
            "verify_checksum",
            "Palette",
            "blend_colours",
        ]
    finally:
        await index.close()


async def test_a_forgotten_contents_words_leave_the_full_text_index(tmp_path: Path) -> None:
    """A new content may take the row id of one forgotten before it: the forgotten one's
    definitions must not be found as the new one's."""
    index = await build(tmp_path, {"old.py": (CHECKSUMS, "h1")})
    try:
        await index.files.apply_changes([], ["old.py"], current=ANNOTATOR_ID)
        assert await index.annotations.drop_orphans() == 1
        file, item = record("new.py", "def render_frame(frame):\n    return frame\n", "h2")
        await index.files.apply_changes([file], [], current=ANNOTATOR_ID)
        await index.annotations.save(ANNOTATOR_ID, [("h2", annotate_structure(item))])
        assert await index.definitions.search('"checksum"', limit=10, weights=WEIGHTS) == []
        assert [
            hit.definition.name
            for hit in await index.definitions.search('"render"', limit=10, weights=WEIGHTS)
        ] == ["render_frame"]
        ((rows,),) = await index.db.reader.execute_fetchall("SELECT count(*) FROM definitions_fts")
        assert rows == 1
    finally:
        await index.close()


async def test_annotating_a_content_again_replaces_its_definitions(tmp_path: Path) -> None:
    index = await build(tmp_path, {"a/three.py": (THREE, "h3")})
    try:
        _, item = record("a/three.py", THREE, "h3")
        await index.annotations.save(ANNOTATOR_ID, [("h3", annotate_structure(item))])
        hits = await index.definitions.search('"checksum"', limit=10, weights=WEIGHTS)
        assert [hit.definition.name for hit in hits] == ["verify_checksum"]
        ((rows,),) = await index.db.reader.execute_fetchall("SELECT count(*) FROM definitions_fts")
        assert rows == 4
    finally:
        await index.close()


async def test_words_found_in_a_worker_index_as_the_servers_own(tmp_path: Path) -> None:
    """The worker's answer carries the full-text words and packed definitions; the index they
    make must rank exactly as the one whose words the server found."""
    files = {
        "a/three.py": (THREE, "h3"),
        "b/checks.py": (CHECKSUMS, "h1"),
        "c/notes.md": ("# Checksum notes\n", "h4"),
    }
    scores = []
    makers: list[tuple[str, Callable[[FileToAnnotate], Annotation]]] = [
        ("server", annotate_structure),
        ("worker", lambda item: with_index_words(annotate_structure(item))),
    ]
    for name, prepare in makers:
        index = await Index.open(tmp_path / f"{name}.sqlite3")
        try:
            pairs = [record(path, text, digest) for path, (text, digest) in files.items()]
            await index.files.apply_changes([file for file, _ in pairs], [], current=ANNOTATOR_ID)
            await index.annotations.save(ANNOTATOR_ID, [(item.hash, prepare(item)) for _, item in pairs])
            described = await index.descriptions.search(
                '"checksum" OR "palette"', limit=10, weights=(1.0, 2.0, 1.0, 1.0)
            )
            defined = await index.definitions.search('"checksum" OR "blend"', limit=10, weights=WEIGHTS)
            scores.append(
                (
                    sorted((hit.path, round(hit.rank, 9)) for hit in described),
                    sorted(
                        (hit.path, hit.definition.name, hit.definition.line, round(hit.rank, 9))
                        for hit in defined
                    ),
                )
            )
        finally:
            await index.close()
    assert scores[0] == scores[1]
    assert len(scores[0][0]) == 3 and len(scores[0][1]) == 3


def test_every_definition_of_an_outline_has_a_row_id() -> None:
    assert MAX_SYMBOLS <= ORDINALS
