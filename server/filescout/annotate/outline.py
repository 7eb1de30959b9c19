"""A file's outline from its syntax tree: what it says about itself, what it defines, what it
uses. One generic walker covers every tree-sitter grammar; the per-language knowledge is a few
tables of node types.

Only the top level and the bodies of classes, modules and namespaces are visited, which keeps a
large file's outline at a fraction of a millisecond beyond the parse itself.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Node, Parser

from filescout.annotate.base import clip
from filescout.core.records import Definition

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

GRAMMARS = {
    "python": "python",
    "javascript": "javascript",
    "typescript": "typescript",
    "tsx": "tsx",
    "go": "go",
    "rust": "rust",
    "java": "java",
    "c": "c",
    "cpp": "cpp",
    "csharp": "csharp",
    "ruby": "ruby",
    "php": "php",
    "kotlin": "kotlin",
    "swift": "swift",
    "lua": "lua",
    "bash": "bash",
    "scala": "scala",
    "dart": "dart",
    "elixir": "elixir",
    "haskell": "haskell",
    "ocaml": "ocaml",
    "julia": "julia",
    "r": "r",
    "zig": "zig",
    "perl": "perl",
    "vue": None,
}
MAX_SOURCE_BYTES = 512 * 1024
MAX_SYMBOLS = 120
MAX_DEPTH = 3

# Node types that define something, and what to call it.
DEFINITIONS: dict[str, str] = {
    # classes and other types
    "class_definition": "class",
    "class_declaration": "class",
    "class_specifier": "class",
    "struct_specifier": "struct",
    "struct_item": "struct",
    "struct_declaration": "struct",
    "union_specifier": "struct",
    "enum_item": "enum",
    "enum_declaration": "enum",
    "enum_specifier": "enum",
    "interface_declaration": "interface",
    "trait_item": "trait",
    "trait_declaration": "trait",
    "record_declaration": "record",
    "object_declaration": "object",
    "protocol_declaration": "protocol",
    "type_alias_declaration": "type",
    "type_spec": "type",
    "type_item": "type",
    "type_definition": "type",
    "module": "module",
    "class": "class",
    "mod_item": "module",
    "namespace_definition": "namespace",
    "namespace_declaration": "namespace",
    "file_scoped_namespace_declaration": "namespace",
    "internal_module": "namespace",
    "impl_item": "impl",
    "singleton_class": "class",
    "object_definition": "object",
    "trait_definition": "trait",
    "enum_definition": "enum",
    # functions
    "function_definition": "function",
    "function_declaration": "function",
    "function_item": "function",
    "method_definition": "method",
    "method_declaration": "method",
    "method": "method",
    "singleton_method": "method",
    "constructor_declaration": "method",
    "generator_function_declaration": "function",
    "function_signature_item": "function",
    "macro_definition": "macro",
    "preproc_function_def": "macro",
    # constants
    "const_item": "constant",
    "static_item": "constant",
    "const_spec": "constant",
    "preproc_def": "constant",
}
CONTAINERS = frozenset(
    {
        "class",
        "struct",
        "interface",
        "trait",
        "record",
        "object",
        "protocol",
        "module",
        "namespace",
        "impl",
        "enum",
    }
)
# Nodes that only wrap definitions: look inside, at the same depth.
WRAPPERS = frozenset(
    {
        "decorated_definition",
        "export_statement",
        "template_declaration",
        "type_declaration",
        "const_declaration",
        "declaration_list",
        "expression_statement",
        "linkage_specification",
        "ambient_declaration",
        "module_declaration",
    }
)
BODY_TYPES = frozenset(
    {
        "block",
        "class_body",
        "declaration_list",
        "body_statement",
        "statement_block",
        "enum_body",
        "interface_body",
        "field_declaration_list",
        "enum_class_body",
        "protocol_body",
        "object_body",
        "enum_variant_list",
        "compound_statement",
    }
)
IMPORTS = frozenset(
    {
        "import_statement",
        "import_from_statement",
        "future_import_statement",
        "import_declaration",
        "use_declaration",
        "using_directive",
        "preproc_include",
        "namespace_use_declaration",
        "import_header",
        "import_list",
        "import_spec",
    }
)
NAMESPACES = frozenset({"namespace", "module"})
"""Containers whose members count as top level: `namespace Shop { class Cart }` defines Cart."""
IGNORED_IMPORTS = frozenset({"__future__"})
NAME_TYPES = frozenset(
    {
        "identifier",
        "type_identifier",
        "simple_identifier",
        "constant",
        "name",
        "field_identifier",
        "namespace_identifier",
        "word",
        "property_identifier",
        "qualified_identifier",
        "scoped_identifier",
        "user_type",
        "dot_index_expression",
        "scoped_type_identifier",
    }
)
REQUIRE_CALLS = frozenset({"require", "require_relative", "import", "source", "load", "dofile"})
COMMENT_MARKS = re.compile(r"^\s*(?:/\*+!?|\*+/|\*|//+[!/]?|#+!?|--+\[?\[?|;+|%+|\"\"\"|''')\s?")
LICENSE_WORDS = (
    "copyright",
    "license",
    "licence",
    "spdx",
    "all rights reserved",
    "-*-",
    "eslint-disable",
    "prettier-ignore",
    "@ts-",
    "noqa",
    "pylint:",
    "type: ignore",
    "vim:",
    "go:build",
    "+build",
    "#!/",
    "use strict",
)
QUOTED = re.compile(r"""["'`<]([^"'`<>]+)["'`>]""")
IMPORT_KEYWORDS = re.compile(
    r"^\s*(?:import|from|use|using|package|#\s*include|require|export)\b\s*"
    r"(?:static\s+|type\s+|namespace\s+)?"
)
LICENSE_TEXT = re.compile("|".join(re.escape(word) for word in LICENSE_WORDS), re.IGNORECASE)
SIGNATURE_LIMIT = 160
DOC_LIMIT = 200
DOC_SENTENCES = 2
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
TIGHT_BRACKETS = re.compile(r"([(\[])\s+|,?\s+([)\]])")
DOC_WRAPPERS = frozenset(
    {
        "decorated_definition",
        "export_statement",
        "template_declaration",
        "type_declaration",
        "const_declaration",
        "ambient_declaration",
    }
)
"""What stands between a definition and the comment above it (`export`, decorators)."""
BETWEEN_DOC_AND_DEFINITION = frozenset({"attribute_item", "decorator", "annotation", "marker_annotation"})
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
YAML_KEY = re.compile(r"^([A-Za-z0-9_][\w.\-/]*)\s*:", re.MULTILINE)


@dataclass(slots=True)
class Symbol:
    name: str
    kind: str
    depth: int
    container: str | None = None
    signature: str = ""
    doc: str = ""
    line: int = 0


@dataclass(slots=True)
class Outline:
    doc: str = ""
    symbols: list[Symbol] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    """Well-known fields of manifest files (package name, description)."""
    entry_point: bool = False
    parsed: bool = False

    @property
    def top_level(self) -> list[Symbol]:
        return [symbol for symbol in self.symbols if symbol.depth == 0]

    @property
    def definitions(self) -> list[Definition]:
        """What the code defines, described; nothing for headings and keys, which only code has."""
        return [
            Definition(symbol.name, symbol.kind, symbol.container, symbol.signature, symbol.doc, symbol.line)
            for symbol in self.symbols
        ]


_parsers = threading.local()


def _parser(grammar: str) -> Parser | None:
    """One parser per grammar per thread (parsers are not thread-safe)."""
    cache = getattr(_parsers, "cache", None)
    if cache is None:
        cache = _parsers.cache = {}
    if grammar not in cache:
        cache[grammar] = _load_parser(grammar)
    return cache[grammar]


def _load_parser(grammar: str) -> Parser | None:
    try:
        from tree_sitter_language_pack import get_parser

        return get_parser(grammar)  # type: ignore[arg-type]  # a name from GRAMMARS, which the pack has
    except Exception:  # a grammar missing from this build: fall back to text
        return None


@cache
def has_grammar(language: str | None) -> bool:
    grammar = GRAMMARS.get(language or "")
    return grammar is not None and _load_parser(grammar) is not None


def _text(node: Node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def _name_of(node: Node, source: bytes) -> str | None:
    named = node.child_by_field_name("name")
    if named is not None:
        return _text(named, source)
    declarator = node.child_by_field_name("declarator")
    while declarator is not None:  # C and C++: int *f(void) -> pointer -> function -> f
        if declarator.type in NAME_TYPES:
            return _text(declarator, source)
        inner = declarator.child_by_field_name("declarator")
        if inner is None:
            for child in declarator.named_children:
                if child.type in NAME_TYPES:
                    return _text(child, source)
        declarator = inner
    target = node.child_by_field_name("type")  # impl blocks, Go type specs
    if target is not None and node.type == "impl_item":
        trait = node.child_by_field_name("trait")
        return f"{_text(trait, source)} for {_text(target, source)}" if trait else _text(target, source)
    for child in node.named_children:
        if child.type in NAME_TYPES:
            return _text(child, source)
    return None


def _body_of(node: Node) -> Node | None:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.named_children:
        if child.type in BODY_TYPES:
            return child
    return None


def _assigned_symbol(node: Node, source: bytes, depth: int, comments: Sequence[Node]) -> Symbol | None:
    """Top-level `const handler = () => ...`, `X = 1` and friends."""
    if node.type in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            if declarator.type == "variable_declarator":
                name = declarator.child_by_field_name("name")
                value = declarator.child_by_field_name("value")
                if name is None or name.type != "identifier":
                    continue
                kind = (
                    "function"
                    if value is not None
                    and value.type in ("arrow_function", "function_expression", "function")
                    else "constant"
                )
                if (
                    kind == "constant"
                    and value is not None
                    and value.type == "call_expression"
                    and _text(value, source).startswith("require")
                ):
                    continue
                body = value.child_by_field_name("body") if value is not None and kind == "function" else None
                return _described(Symbol(_text(name, source), kind, depth), node, source, comments, body)
    if node.type == "assignment" and depth == 0:
        left = node.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            assigned = _text(left, source)
            if assigned.isupper() or assigned == "__all__":
                return _described(Symbol(assigned, "constant", depth), node, source, comments)
    return None


def _import_name(node: Node, source: bytes) -> list[str]:
    text = _text(node, source)
    if node.type == "import_from_statement":
        module = node.child_by_field_name("module_name")
        if module is None:
            return []
        package = _text(module, source)
        if package.strip("."):
            return [package]
        # `from . import nodes` imports the module `.nodes` (or a name of the package).
        names = [name.child_by_field_name("name") or name for name in node.children_by_field_name("name")]
        return [package, *(package + _text(name, source) for name in names)]
    source_node = node.child_by_field_name("source") if node.type == "import_statement" else None
    if source_node is not None:
        return [_text(source_node, source).strip("'\"`")]
    quoted = QUOTED.findall(text)
    if quoted:
        return quoted
    stripped = IMPORT_KEYWORDS.sub("", text).strip().rstrip(";")
    return [part.strip().split(" ")[0] for part in stripped.split(",") if part.strip()][:4]


def _call_import(node: Node, source: bytes) -> list[str]:
    """`require("x")`, `require_relative "y"`, `source lib.sh`."""
    call = node
    if node.type in ("lexical_declaration", "variable_declaration", "expression_statement"):
        calls = [
            descendant
            for descendant in _shallow(node, 3)
            if descendant.type in ("call_expression", "call", "function_call")
        ]
        if not calls:
            return []
        call = calls[0]
    head = (
        call.child_by_field_name("function")
        or call.child_by_field_name("method")
        or call.child_by_field_name("name")
    )
    if node.type == "command":
        head = node.child_by_field_name("name")
    if head is None or _text(head, source).strip() not in REQUIRE_CALLS:
        return []
    quoted = QUOTED.findall(_text(call, source))
    if quoted:
        return quoted[:1]
    words = _text(call, source).split()
    return words[1:2]


def _shallow(node: Node, depth: int) -> list[Node]:
    found = []
    frontier = [node]
    for _ in range(depth):
        frontier = [child for parent in frontier for child in parent.named_children]
        found.extend(frontier)
    return found


def _clean_comment(text: str) -> str:
    lines = []
    for line in text.splitlines():
        line = COMMENT_MARKS.sub("", line).strip().rstrip("*/").strip()
        if line and not line.startswith("@") and not any(word in line.lower() for word in LICENSE_WORDS):
            lines.append(line)
    return " ".join(lines)


def _module_doc(root: Node, source: bytes, language: str) -> str:
    """The docstring or the leading comment block, licence boilerplate removed."""
    comments: list[str] = []
    for child in root.named_children:
        kind = child.type
        if language == "python" and kind in ("string", "expression_statement") and not comments:
            text = _text(child, source).strip()
            if text[:1] in "\"'rRuUbB":
                return _clean_comment(text.strip("rRuUbB").strip("\"'"))
        if "comment" in kind:
            text = _text(child, source)
            if not text.startswith("#!"):
                comments.append(text)
            continue
        if (
            kind in ("php_tag", "package_clause", "package_declaration", "package_header", "shebang")
            and not comments
        ):
            continue
        break
    doc = " ".join(filter(None, (_clean_comment(comment) for comment in comments)))
    if not doc and language == "rust":
        inner = [
            _text(child, source)
            for child in root.named_children
            if child.type == "line_comment" and _text(child, source).startswith("//!")
        ]
        doc = _clean_comment("\n".join(inner))
    return doc


def _lead(text: str) -> str:
    """The first sentences of a doc comment's first paragraph: what a reader sees first. Only
    that paragraph is cleaned (a long docstring costs no more than a short one)."""
    kept: list[str] = []
    size = 0
    for line in text.splitlines():
        line = COMMENT_MARKS.sub("", line).strip().rstrip("*/").strip()
        if not line:
            if kept:
                break
            continue
        if line.startswith("@"):  # JSDoc and Javadoc tags follow the description
            break
        if LICENSE_TEXT.search(line):
            continue
        kept.append(line)
        size += len(line)
        if size > 2 * DOC_LIMIT:
            break
    sentences = SENTENCE_END.split(" ".join(" ".join(kept).split()), maxsplit=DOC_SENTENCES)
    return clip(" ".join(sentences[:DOC_SENTENCES]), DOC_LIMIT)


def _signature(node: Node, source: bytes, body: Node | None = None) -> str:
    """The definition's header: up to its body (or a comment before it), or its first line."""
    body = body or _body_of(node)
    start = node.start_byte
    end = body.start_byte if body is not None and body.start_byte > start else node.end_byte
    for child in node.children:
        if child.start_byte >= end:
            break
        if "comment" in child.type and child.start_byte > start:
            end = child.start_byte
            break
    header = source[start : min(end, start + SIGNATURE_LIMIT * 4)].decode("utf-8", errors="replace")
    if body is None:
        header = header.split("\n", 1)[0]
    flat = " ".join(header.split())
    if "( " in flat or "[ " in flat or " )" in flat or " ]" in flat:
        flat = TIGHT_BRACKETS.sub(r"\1\2", flat)  # a group that did not match adds nothing
    return clip(flat.rstrip(" :{=").rstrip(), SIGNATURE_LIMIT)


def _docstring(node: Node, source: bytes) -> str:
    """A Python definition's docstring: the string its body starts with."""
    body = node.child_by_field_name("body")
    first = body.named_child(0) if body is not None and body.named_child_count else None
    if first is not None and first.type == "expression_statement" and first.named_child_count:
        first = first.named_child(0)
    if first is None or first.type != "string":
        return ""
    return _lead(_text(first, source).lstrip("rRuUbBfF").strip("\"'"))


def _adjacent(previous: Node, following: Node) -> bool:
    """No blank line between the two (a line comment's node may end at the next line's start)."""
    end = previous.end_point
    return following.start_point.row - (end.row - 1 if end.column == 0 else end.row) <= 1


def _described(
    symbol: Symbol, node: Node, source: bytes, comments: Sequence[Node], body: Node | None = None
) -> Symbol:
    """`comments`: those directly above the definition (or above its `export`, decorators,
    attributes), which the walker collects as it passes them: asking a node for its siblings
    or parent walks the tree again, which would cost more than the outline itself."""
    symbol.signature = _signature(node, source, body)
    doc = _docstring(node, source) if node.type in PYTHON_DEFINITIONS else ""
    if not doc and comments:
        doc = _lead("\n".join(_text(comment, source) for comment in comments))
    symbol.doc = doc
    symbol.line = node.start_point.row + 1
    return symbol


PYTHON_DEFINITIONS = frozenset({"function_definition", "class_definition"})


def _walk(
    node: Node,
    source: bytes,
    outline: Outline,
    depth: int,
    container: str | None,
    above: Sequence[Node] = (),
) -> None:
    """`above`: the comments directly above `node` when it wraps a definition (`export`,
    decorators), which belong to the first definition inside."""
    run: list[Node] = []  # the comments and attributes just passed, with no blank line between
    for child in node.named_children:
        if len(outline.symbols) >= MAX_SYMBOLS:
            return
        if "comment" in child.type or child.type in BETWEEN_DOC_AND_DEFINITION:
            run = [*run, child] if run and _adjacent(run[-1], child) else [child]
            continue
        comments = (
            [item for item in run if "comment" in item.type] if run and _adjacent(run[-1], child) else []
        )
        comments, above, run = comments or list(above), (), []
        kind = DEFINITIONS.get(child.type)
        if kind is not None:
            name = _name_of(child, source)
            if name:
                outline.symbols.append(
                    _described(
                        Symbol(
                            name, kind if depth == 0 or kind != "function" else "method", depth, container
                        ),
                        child,
                        source,
                        comments,
                    )
                )
                inner = depth if kind in NAMESPACES else depth + 1
                if kind in CONTAINERS and inner < MAX_DEPTH:
                    body = _body_of(child)
                    if body is not None:
                        _walk(body, source, outline, inner, name)
            continue
        if depth == 0 and child.type in IMPORTS:
            outline.imports.extend(_import_name(child, source))
            continue
        if depth == 0:
            required = _call_import(child, source)
            if required:
                outline.imports.extend(required)
                continue
            assigned = _assigned_symbol(child, source, depth, comments)
            if assigned is not None:
                outline.symbols.append(assigned)
                continue
            if (
                child.type == "if_statement"
                and b"__main__" in source[child.start_byte : child.start_byte + 60]
            ):
                outline.entry_point = True
        if child.type in WRAPPERS or (child.type in BODY_TYPES and depth == 0):
            _walk(child, source, outline, depth, container, comments if child.type in DOC_WRAPPERS else ())


def outline_code(source: bytes, language: str) -> Outline | None:
    """The outline of source code, or None when the language has no grammar here."""
    grammar = GRAMMARS.get(language)
    parser = _parser(grammar) if grammar else None
    if parser is None:
        return None
    tree = parser.parse(source[:MAX_SOURCE_BYTES])
    outline = Outline(parsed=True)
    outline.doc = _module_doc(tree.root_node, source, language)
    _walk(tree.root_node, source, outline, 0, None)
    outline.imports = list(
        dict.fromkeys(name for name in outline.imports if name and name not in IGNORED_IMPORTS)
    )[:60]
    names = {symbol.name for symbol in outline.top_level}
    if "main" in names and language in ("go", "rust", "c", "cpp", "java", "kotlin", "swift", "csharp"):
        outline.entry_point = True
    if source.startswith(b"#!"):
        outline.entry_point = True
    return outline


def outline_markdown(text: str) -> Outline:
    headings = [match.group(2).strip() for match in HEADING.finditer(text)]
    paragraph = ""
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if block and not block.startswith(("#", "[!", "<", "```", "|", "-", "*", "!", "=", ">")):
            paragraph = " ".join(block.split())
            break
    title = headings[0] if headings else ""
    doc = f"{title}: {paragraph}" if title and paragraph else title or paragraph
    return Outline(doc=doc, headings=headings[:MAX_SYMBOLS], parsed=True)


MANIFEST_FACTS = {
    "package.json": (("name",), ("description",)),
    "composer.json": (("name",), ("description",)),
    "pyproject.toml": (("project", "name"), ("project", "description")),
    "cargo.toml": (("package", "name"), ("package", "description")),
}


def _dig(data: object, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data if isinstance(data, str) else None


def outline_data(text: str, language: str, path: str) -> Outline:
    """Top-level keys of JSON, YAML and TOML files; name and description of manifests."""
    outline = Outline(parsed=True)
    data: object = None
    try:
        if language == "json" and len(text) < 2_000_000:
            data = json.loads(text)
        elif language == "toml":
            data = tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError):
        data = None
    if isinstance(data, dict):
        outline.keys = [str(key) for key in data][:MAX_SYMBOLS]
    elif language == "yaml" or data is None:
        outline.keys = list(dict.fromkeys(YAML_KEY.findall(text)))[:MAX_SYMBOLS]
    name = path.rsplit("/", 1)[-1].lower()
    if name in MANIFEST_FACTS and isinstance(data, dict):
        for label, keys in zip(("name", "description"), MANIFEST_FACTS[name], strict=True):
            value = _dig(data, keys)
            if value:
                outline.facts[label] = value
    return outline
