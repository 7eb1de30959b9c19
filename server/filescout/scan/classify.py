"""What a file is, from its name and a peek at its bytes: language, kind, sensitivity.

Cheap by design: it runs once per new or changed file during a scan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from filescout.core.records import FileKind, SkipReason
from filescout.core.words import is_utf16

LANGUAGE_BY_EXTENSION: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".scala": "scala",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".clj": "clojure",
    ".r": "r",
    ".jl": "julia",
    ".pl": "perl",
    ".pm": "perl",
    ".zig": "zig",
    ".nim": "nim",
    ".vue": "vue",
    ".svelte": "svelte",
    ".sql": "sql",
    ".proto": "proto",
    ".graphql": "graphql",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".less": "css",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".adoc": "asciidoc",
    ".json": "json",
    ".jsonc": "json",
    ".json5": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".xml": "xml",
    ".csv": "csv",
    ".tsv": "csv",
    ".jsonl": "json",
    ".ndjson": "json",
    ".tf": "hcl",
    ".hcl": "hcl",
    ".gradle": "groovy",
    ".groovy": "groovy",
    ".cmake": "cmake",
    ".mk": "make",
    ".bat": "batch",
    ".ps1": "powershell",
    ".vim": "vim",
    ".el": "elisp",
}
LANGUAGE_BY_NAME: dict[str, str] = {
    "Makefile": "make",
    "GNUmakefile": "make",
    "Dockerfile": "dockerfile",
    "CMakeLists.txt": "cmake",
    "Rakefile": "ruby",
    "Gemfile": "ruby",
    "Vagrantfile": "ruby",
    "BUILD": "starlark",
    "WORKSPACE": "starlark",
    "Justfile": "make",
    "justfile": "make",
}
SHEBANG_LANGUAGES: dict[str, str] = {
    "python": "python",
    "node": "javascript",
    "bash": "bash",
    "sh": "bash",
    "zsh": "bash",
    "ruby": "ruby",
    "perl": "perl",
    "lua": "lua",
    "php": "php",
    "deno": "typescript",
}

SOURCE_LANGUAGES = frozenset(
    {
        "python",
        "javascript",
        "typescript",
        "tsx",
        "go",
        "rust",
        "java",
        "c",
        "cpp",
        "csharp",
        "ruby",
        "php",
        "kotlin",
        "swift",
        "lua",
        "bash",
        "scala",
        "dart",
        "elixir",
        "erlang",
        "haskell",
        "ocaml",
        "clojure",
        "r",
        "julia",
        "perl",
        "zig",
        "nim",
        "vue",
        "svelte",
        "sql",
        "proto",
        "graphql",
        "html",
        "css",
        "scss",
        "groovy",
        "starlark",
        "batch",
        "powershell",
        "vim",
        "elisp",
        "dockerfile",
        "make",
        "cmake",
        "hcl",
    }
)
DOC_LANGUAGES = frozenset({"markdown", "rst", "text", "asciidoc"})
CONFIG_LANGUAGES = frozenset({"yaml", "toml", "ini"})
DATA_LANGUAGES = frozenset({"csv", "xml"})

DOC_NAMES = re.compile(
    r"^(readme|changelog|changes|history|news|license|licence|copying|authors|contributors|"
    r"contributing|code_of_conduct|security|notice|todo)(\.[a-z0-9]+)?$",
    re.IGNORECASE,
)
CONFIG_NAMES = frozenset(
    {
        "package.json",
        "tsconfig.json",
        "jsconfig.json",
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "tox.ini",
        "pytest.ini",
        "mypy.ini",
        ".editorconfig",
        ".gitignore",
        ".gitattributes",
        ".dockerignore",
        ".eslintrc",
        ".eslintrc.json",
        ".eslintrc.js",
        ".prettierrc",
        ".babelrc",
        "babel.config.js",
        "webpack.config.js",
        "vite.config.ts",
        "vite.config.js",
        "rollup.config.js",
        "jest.config.js",
        "karma.conf.js",
        ".npmignore",
        "cargo.toml",
        "go.mod",
        "go.work",
        "pom.xml",
        "build.gradle",
        "settings.gradle",
        "composer.json",
        "gemfile",
        "makefile",
        "dockerfile",
        "docker-compose.yml",
        "docker-compose.yaml",
        "manifest.in",
        ".pre-commit-config.yaml",
        ".filescoutignore",
        "filescout.toml",
        "requirements.txt",
        ".travis.yml",
        "codecov.yml",
        ".coveragerc",
    }
)
GENERATED_NAMES = frozenset(
    {
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "cargo.lock",
        "composer.lock",
        "gemfile.lock",
        "go.sum",
        "pipfile.lock",
        "uv.lock",
        "bun.lockb",
        "npm-shrinkwrap.json",
        "flake.lock",
        "pdm.lock",
    }
)
GENERATED_SUFFIXES = (
    ".min.js",
    ".min.css",
    ".map",
    "_pb2.py",
    "_pb2_grpc.py",
    ".pb.go",
    ".pb.cc",
    ".pb.h",
    ".generated.ts",
    ".generated.js",
    ".generated.cs",
    ".g.dart",
    ".designer.cs",
)
BINARY_EXTENSIONS = frozenset(
    {
        ".psd",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".7z",
        ".rar",
        ".tar",
        ".jar",
        ".war",
        ".whl",
        ".so",
        ".dylib",
        ".dll",
        ".exe",
        ".o",
        ".a",
        ".lib",
        ".class",
        ".pyc",
        ".pyo",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".wav",
        ".ogg",
        ".mov",
        ".avi",
        ".webm",
        ".sqlite",
        ".db",
        ".bin",
        ".dat",
        ".wasm",
        ".parquet",
        ".npy",
        ".pkl",
    }
)
DATA_EXTENSIONS = frozenset({".csv", ".tsv", ".jsonl", ".ndjson", ".xml", ".geojson"})
DOCUMENT_FORMATS = {".pdf": "pdf", ".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx"}
"""Documents whose text scan/extract.py reads: their format is their language."""
IMAGE_FORMATS = {
    ".png": "png",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".gif": "gif",
    ".webp": "webp",
    ".bmp": "bmp",
    ".tif": "tiff",
    ".tiff": "tiff",
    ".ico": "ico",
    ".svg": "svg",
}
"""Images whose facts (and an SVG's text) scan/extract.py reads: their format is their language."""

TEST_DIRS = frozenset(
    {
        "test",
        "tests",
        "__tests__",
        "spec",
        "specs",
        "testing",
        "e2e",
        "test_data",
        "testdata",
        "fixtures",
        "__mocks__",
    }
)
DOC_DIRS = frozenset({"docs", "doc", "documentation", "man"})
VENDORED_DIRS = frozenset(
    {
        "vendor",
        "vendors",
        "third_party",
        "third-party",
        "thirdparty",
        "3rdparty",
        "node_modules",
        "bower_components",
    }
)
"""Directories that hold other projects' code copied in (Go's and PHP's `vendor/`, C and C++'s
`third_party/`), as GitHub's Linguist names them: source by kind, but rarely what a question
about the workspace is after."""
TEST_FILE = re.compile(
    r"(^test_.*\.py$|.*_test\.py$|^conftest\.py$|.*_test\.go$|.*\.(test|spec)\.[cm]?[jt]sx?$|"
    r".*Tests?\.(java|kt|cs|swift|scala)$|.*_spec\.rb$|.*_test\.rb$|.*_test\.exs?$|"
    r"^test_.*\.(c|cc|cpp)$|.*_test\.(c|cc|cpp|rs)$)"
)

SENSITIVE_NAME = re.compile(
    r"^(\.env(\..*)?|.*\.env|.*\.pem|.*\.key|.*\.p12|.*\.pfx|.*\.jks|.*\.keystore|.*\.kdbx|"
    r"id_(rsa|dsa|ecdsa|ed25519)(\.pub)?|\.netrc|_netrc|\.npmrc|\.pypirc|\.git-credentials|"
    r"\.htpasswd|credentials(\.json|\.yml|\.yaml|\.xml)?|client_secrets?\.json|"
    r"service[-_]account.*\.json|secrets?\.(json|ya?ml|toml|env)|.*\.tfstate(\.backup)?|"
    r"\.pgpass|\.my\.cnf|known_hosts|authorized_keys)$",
    re.IGNORECASE,
)
SENSITIVE_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".docker"})

BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class Classification:
    language: str | None
    kind: FileKind
    sensitive: bool

    def skip_reason(self, *, oversized: bool = False) -> SkipReason | None:
        """Why the content must not be read for an annotation, if it must not."""
        if self.sensitive:
            return "sensitive"
        if self.kind in ("binary", "generated"):
            return self.kind
        return "oversized" if oversized else None


def _split(path: str) -> tuple[str, str, list[str]]:
    """(name, lower-case suffix, lower-case parent directories), without pathlib's cost."""
    slash = path.rfind("/")
    name = path[slash + 1 :]
    dot = name.rfind(".")
    suffix = name[dot:].lower() if dot > 0 else ""
    dirs = path[:slash].lower().split("/") if slash > 0 else []
    return name, suffix, dirs


def language_of(path: str, head: bytes = b"") -> str | None:
    name, suffix, _ = _split(path)
    if suffix in DOCUMENT_FORMATS or suffix in IMAGE_FORMATS:
        return DOCUMENT_FORMATS.get(suffix) or IMAGE_FORMATS[suffix]
    if name in LANGUAGE_BY_NAME:
        return LANGUAGE_BY_NAME[name]
    if suffix in LANGUAGE_BY_EXTENSION:
        return LANGUAGE_BY_EXTENSION[suffix]
    if name.lower().startswith("dockerfile"):
        return "dockerfile"
    if head.startswith(b"#!"):
        end = head.find(b"\n")
        interpreter = head[2 : end if end > 0 else 120].decode("latin-1")
        for word in reversed(interpreter.replace("/", " ").split()):
            base = re.sub(r"[\d.]+$", "", word)
            if base in SHEBANG_LANGUAGES:
                return SHEBANG_LANGUAGES[base]
    return None


def is_binary(head: bytes) -> bool:
    """Git's rule: a NUL byte in the first 8 KB."""
    return b"\x00" in head[:BINARY_SNIFF_BYTES]


def extracted_format(path: str) -> str | None:
    """The document or image format whose text and facts scan/extract.py reads, by the name."""
    _, suffix, _ = _split(path)
    return DOCUMENT_FORMATS.get(suffix) or IMAGE_FORMATS.get(suffix)


def is_sensitive(path: str) -> bool:
    name, _, dirs = _split(path)
    if SENSITIVE_NAME.match(name):
        return not name.lower().endswith((".example", ".sample", ".template", ".dist"))
    return any(part in SENSITIVE_DIRS for part in dirs)


def looks_generated(head: bytes) -> bool:
    """Machine-written files announce it near the top, or are minified into huge lines."""
    top = head[:2048]
    lowered = top.lower()
    if (
        b"@generated" in top
        or b"DO NOT EDIT" in top
        or b"Code generated" in top
        or b"auto-generated" in lowered
        or b"autogenerated" in lowered
    ):
        return True
    sample = head[:BINARY_SNIFF_BYTES]
    if len(sample) >= 4096:
        return len(sample) / (sample.count(b"\n") + 1) > 500
    return False


def is_vendored(path: str) -> bool:
    """Whether the file sits in a directory of code copied in from other projects."""
    return not VENDORED_DIRS.isdisjoint(_split(path)[2])


DECLARATION_SUFFIXES = (".d.ts", ".d.cts", ".d.mts", ".pyi")


def is_declaration(path: str) -> bool:
    """Whether the file declares an API implemented elsewhere: a TypeScript declaration file
    (`index.d.ts`) or a Python stub (`.pyi`)."""
    return path.lower().endswith(DECLARATION_SUFFIXES)


def kind_of(path: str, language: str | None, *, binary: bool, generated: bool) -> FileKind:
    name, suffix, dirs = _split(path)
    lower = name.lower()
    if suffix in DOCUMENT_FORMATS:
        return "document"
    if suffix in IMAGE_FORMATS:
        return "image"
    if binary or suffix in BINARY_EXTENSIONS:
        return "binary"
    if generated or lower in GENERATED_NAMES or lower.endswith(GENERATED_SUFFIXES):
        return "generated"
    if TEST_FILE.match(name) or not TEST_DIRS.isdisjoint(dirs):
        return "test"
    if lower in CONFIG_NAMES or (name.startswith(".") and language in (None, "json", "yaml", "ini", "toml")):
        return "config"
    if DOC_NAMES.match(name) or language in DOC_LANGUAGES:
        return "docs"
    if not DOC_DIRS.isdisjoint(dirs) and language not in SOURCE_LANGUAGES:
        return "docs"
    if language in SOURCE_LANGUAGES:
        return "source"
    if language in CONFIG_LANGUAGES:
        return "config"
    if suffix in DATA_EXTENSIONS or language in DATA_LANGUAGES:
        return "data"
    if language == "json":
        return "config" if len(dirs) <= 1 or "config" in lower else "data"
    return "other"


def classify(path: str, head: bytes) -> Classification:
    """Classify from the path and the first bytes of the file (a UTF-16 file's by its
    characters: its NUL bytes do not make it binary)."""
    if is_utf16(head):
        head = head.decode("utf-16", errors="replace").encode("utf-8")
    binary = is_binary(head)
    language = language_of(path, head) if not binary or extracted_format(path) else None
    kind = kind_of(path, language, binary=binary, generated=not binary and looks_generated(head))
    return Classification(language=language, kind=kind, sensitive=is_sensitive(path))
