"""The files a file imports, resolved to workspace paths without a parser.

Used to give a touched file's dependencies a head start in the annotation queue, so precision
matters less than speed: each import yields candidate paths, and the index says which exist.
"""

from __future__ import annotations

import posixpath
import re

PYTHON_IMPORT = re.compile(
    r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+([\w., ()*]+)|import\s+([\w., ]+))", re.MULTILINE
)
JS_IMPORT = re.compile(
    r"""(?:import\s[^'"]*?from\s*|import\s*\(?\s*|require\s*\(\s*|export\s[^'"]*?from\s*)['"]([^'"]+)['"]"""
)
C_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
GO_IMPORT = re.compile(r'"([\w.\-/]+)"')
GO_IMPORT_BLOCK = re.compile(r"^import\s*(?:\(([^)]*)\)|(\"[^\"]+\"))", re.MULTILINE)
RUST_MOD = re.compile(r"^\s*(?:pub\s+)?mod\s+(\w+)\s*;", re.MULTILINE)
RUST_USE = re.compile(r"^\s*(?:pub\s+)?use\s+(?:crate|super|self)::([\w:]+)", re.MULTILINE)
JVM_IMPORT = re.compile(r"^\s*import\s+(?:static\s+)?([\w.]+)", re.MULTILINE)
RUBY_REQUIRE = re.compile(r"""^\s*require(?:_relative)?\s+['"]([^'"]+)['"]""", re.MULTILINE)
JS_EXTENSIONS = (
    "",
    ".ts",
    ".tsx",
    ".js",
    ".jsx",
    ".mjs",
    ".cjs",
    "/index.ts",
    "/index.tsx",
    "/index.js",
    "/index.jsx",
)


def _ancestors(path: str) -> list[str]:
    """The directories containing `path`, deepest first, ending with the root ("")."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:depth]) for depth in range(len(parts), -1, -1)]


def _join(directory: str, relative: str) -> str | None:
    joined = (
        posixpath.normpath(posixpath.join(directory, relative)) if directory else posixpath.normpath(relative)
    )
    return None if joined.startswith("..") or joined.startswith("/") else joined


def _python(path: str, text: str) -> list[str]:
    candidates: list[str] = []
    directory = posixpath.dirname(path)
    for match in PYTHON_IMPORT.finditer(text):
        source, names, plain = match.groups()
        modules: list[str] = []
        if plain:
            modules = [item.strip().split(" ")[0] for item in plain.split(",")]
        elif source is not None:
            dots = len(source) - len(source.lstrip("."))
            module = source.lstrip(".")
            if dots:
                base = directory
                for _ in range(dots - 1):
                    base = posixpath.dirname(base)
                targets = [module] if module else [n.strip(" ()") for n in names.split(",")]
                for target in targets:
                    if target and target != "*":
                        relative = _join(base, target.replace(".", "/"))
                        if relative:
                            candidates += [relative + ".py", relative + "/__init__.py"]
                continue
            modules = [module] + [
                f"{module}.{n.strip(' ()')}"
                for n in names.split(",")
                if n.strip(" ()") and n.strip(" ()") != "*"
            ]
        for module in modules:
            stem = module.replace(".", "/")
            for root in _ancestors(path):
                prefix = f"{root}/" if root else ""
                candidates += [f"{prefix}{stem}.py", f"{prefix}{stem}/__init__.py"]
    return candidates


def _javascript(path: str, text: str) -> list[str]:
    directory = posixpath.dirname(path)
    candidates: list[str] = []
    for match in JS_IMPORT.finditer(text):
        specifier = match.group(1)
        if not specifier.startswith("."):
            continue  # a package, not a workspace file
        relative = _join(directory, specifier)
        if relative:
            stem = re.sub(r"\.(js|jsx|mjs|cjs)$", "", relative)
            candidates += [relative] + [stem + extension for extension in JS_EXTENSIONS]
    return candidates


def _by_ancestor(path: str, stems: list[str], extensions: tuple[str, ...]) -> list[str]:
    candidates = []
    for stem in stems:
        for root in _ancestors(path):
            prefix = f"{root}/" if root else ""
            candidates += [f"{prefix}{stem}{extension}" for extension in extensions]
    return candidates


def import_candidates(path: str, language: str | None, text: str) -> list[str]:
    """Workspace paths that `path` might import, most specific first."""
    if language == "python":
        return _python(path, text)
    if language in ("javascript", "typescript", "tsx", "vue", "svelte"):
        return _javascript(path, text)
    if language in ("c", "cpp"):
        directory = posixpath.dirname(path)
        found = [item for item in (_join(directory, m.group(1)) for m in C_INCLUDE.finditer(text)) if item]
        return found + _by_ancestor(path, [m.group(1) for m in C_INCLUDE.finditer(text)], ("",))
    if language in ("java", "kotlin", "scala"):
        stems = [m.group(1).replace(".", "/") for m in JVM_IMPORT.finditer(text)]
        return _by_ancestor(path, stems, (".java", ".kt", ".scala"))
    if language == "rust":
        directory = posixpath.dirname(path)
        candidates = []
        for match in RUST_MOD.finditer(text):
            candidates += [
                f"{directory}/{match.group(1)}.rs" if directory else f"{match.group(1)}.rs",
                f"{directory}/{match.group(1)}/mod.rs" if directory else f"{match.group(1)}/mod.rs",
            ]
        stems = [m.group(1).replace("::", "/") for m in RUST_USE.finditer(text)]
        stems += [stem.rsplit("/", 1)[0] for stem in stems if "/" in stem]
        return candidates + _by_ancestor(path, stems, (".rs", "/mod.rs"))
    if language == "go":
        specs: list[str] = []
        for block, single in GO_IMPORT_BLOCK.findall(text):
            specs += GO_IMPORT.findall(block or single)
        stems = ["/".join(spec.split("/")[-depth:]) for spec in specs for depth in (1, 2)]
        return _by_ancestor(path, stems, ("",))
    if language == "ruby":
        directory = posixpath.dirname(path)
        return [
            item
            for item in (_join(directory, m.group(1) + ".rb") for m in RUBY_REQUIRE.finditer(text))
            if item
        ] + _by_ancestor(path, [m.group(1) for m in RUBY_REQUIRE.finditer(text)], (".rb",))
    return []
