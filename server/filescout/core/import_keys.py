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


# -- the import graph's keys ---------------------------------------------------------------
#
# An import and the file it names meet on a key: the importer's imports are turned into keys
# when its annotation is shown (`import_keys`), a file's keys come from its path alone
# (`provided_keys`). Stored keys need no other file to exist yet, so an edge appears as soon as
# both ends are in the index, whatever order they came in.

FAMILIES = {
    "python": "py",
    "javascript": "js",
    "typescript": "js",
    "tsx": "js",
    "vue": "js",
    "svelte": "js",
    "c": "c",
    "cpp": "c",
    "go": "go",
    "rust": "rs",
    "java": "jvm",
    "kotlin": "jvm",
    "scala": "jvm",
}
EXTENSION_FAMILIES = {
    ".py": "py",
    ".pyi": "py",
    ".js": "js",
    ".jsx": "js",
    ".mjs": "js",
    ".cjs": "js",
    ".ts": "js",
    ".tsx": "js",
    ".mts": "js",
    ".cts": "js",
    ".vue": "js",
    ".svelte": "js",
    ".c": "c",
    ".h": "c",
    ".cc": "c",
    ".cpp": "c",
    ".cxx": "c",
    ".hh": "c",
    ".hpp": "c",
    ".hxx": "c",
    ".go": "go",
    ".rs": "rs",
    ".java": "jvm",
    ".kt": "jvm",
    ".scala": "jvm",
}
PACKAGE_FILES = {"py": "__init__", "js": "index", "rs": "mod"}
"""A file that stands for its directory when the directory is imported."""
JS_SPECIFIER_EXTENSION = re.compile(r"\.(?:js|jsx|mjs|cjs|ts|tsx|mts|cts|vue|svelte)$")
RUST_PATH = re.compile(r"^(?:crate|super|self)::([\w:]+)")


def _python_keys(path: str, name: str) -> list[str]:
    dots = len(name) - len(name.lstrip("."))
    module = name[dots:].split(" ")[0]
    if not dots:
        return [module] if module else []
    package = posixpath.dirname(path).split("/") if "/" in path else []
    package = package[: len(package) - (dots - 1)] if dots > 1 else package
    parts = [part for part in package if part] + [part for part in module.split(".") if part]
    return [".".join(parts)] if parts else []


def _javascript_keys(path: str, name: str) -> list[str]:
    if not name.startswith("."):
        return []  # a package, not a workspace file
    joined = _join(posixpath.dirname(path), name)
    return [JS_SPECIFIER_EXTENSION.sub("", joined)] if joined else []


def _c_keys(path: str, name: str) -> list[str]:
    if name.startswith("."):
        joined = _join(posixpath.dirname(path), name)
        return [joined] if joined else []
    return [name]


def _go_keys(name: str) -> list[str]:
    parts = name.split("/")
    if "." not in parts[0]:
        return []  # the standard library
    return ["/".join(parts[-2:]), parts[-1]] if len(parts) > 1 else []


def _rust_keys(name: str) -> list[str]:
    found = RUST_PATH.match(name)
    if found is None:
        return []
    parts = [part for part in found.group(1).split("::") if part]
    return ["/".join(parts[:length]) for length in (len(parts), len(parts) - 1) if length > 0]


def _jvm_keys(name: str) -> list[str]:
    return [] if name.endswith("*") else [name.replace(".", "/")]


def import_keys(path: str, language: str | None, imports: list[str]) -> list[str]:
    """The keys of what `path` imports, as its annotation records the imports."""
    family = FAMILIES.get(language or "")
    if family is None:
        return []
    keys: list[str] = []
    for name in imports:
        name = name.strip()
        if family == "py":
            found = _python_keys(path, name)
        elif family == "js":
            found = _javascript_keys(path, name)
        elif family == "c":
            found = _c_keys(path, name)
        elif family == "go":
            found = _go_keys(name)
        elif family == "rs":
            found = _rust_keys(name)
        else:
            found = _jvm_keys(name)
        keys += [f"{family}:{key}" for key in found]
    return list(dict.fromkeys(keys))


def provided_keys(path: str) -> list[str]:
    """The keys under which other files import `path`: every tail of its module path (an
    absolute import names the module from its package root, which may lie deeper than the
    workspace's), or for Go its package directory."""
    directory, _, name = path.rpartition("/")
    stem, dot, extension = name.rpartition(".")
    family = EXTENSION_FAMILIES.get(dot + extension)
    if family is None or not stem:
        return []
    folders = directory.split("/") if directory else []
    if family == "go":
        tails = [folders[-length:] for length in (1, 2) if len(folders) >= length]
        return [f"go:{'/'.join(tail)}" for tail in tails]
    if family == "c":
        parts = [*folders, name]  # headers are included by name
    elif PACKAGE_FILES.get(family) == stem:
        parts = folders
    else:
        parts = [*folders, stem]
    if not parts:
        return []
    if family == "js":
        return [f"js:{'/'.join(parts)}"]  # relative imports name the whole path
    separator = "." if family == "py" else "/"
    return [f"{family}:{separator.join(parts[start:])}" for start in range(len(parts))]
