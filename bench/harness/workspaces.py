"""Synthetic workspaces for benchmarks and tests, deterministic for a given seed.

Nested package directories, a mix of languages and sizes that follows what real monorepos hold
(mostly small source files, some tests and docs, a few large data files and binaries), a
.gitignore with ignored build output, and vendored dependencies under node_modules/ that must be
skipped. `bench/make_workspace.py` makes one from the command line.

Words follow real code's distribution (`vocabulary="realistic"`, the default): a few generic words
(get, value, error, ...) everywhere, each package's own domain words mostly in that package, and
a long tail of project-specific names, all Zipf-distributed. `"uniform"` draws every identifier
from 350 domain words with equal odds, so each word is in about a third of all files: a stress
case for full-text search, not something real code looks like.
"""

from __future__ import annotations

import random
from pathlib import Path

WORDS = [
    "account",
    "address",
    "adapter",
    "admin",
    "alert",
    "api",
    "app",
    "archive",
    "asset",
    "audit",
    "auth",
    "backup",
    "badge",
    "balance",
    "batch",
    "billing",
    "blob",
    "bookmark",
    "browser",
    "buffer",
    "build",
    "bundle",
    "cache",
    "calendar",
    "campaign",
    "card",
    "cart",
    "catalog",
    "channel",
    "chart",
    "chat",
    "checkout",
    "client",
    "cluster",
    "code",
    "collection",
    "comment",
    "config",
    "connection",
    "contact",
    "content",
    "context",
    "cookie",
    "coupon",
    "course",
    "credential",
    "cron",
    "csv",
    "customer",
    "dashboard",
    "data",
    "database",
    "date",
    "debug",
    "decoder",
    "delivery",
    "deploy",
    "device",
    "diff",
    "discount",
    "dispatch",
    "document",
    "domain",
    "draft",
    "editor",
    "email",
    "embed",
    "encoder",
    "engine",
    "entry",
    "event",
    "export",
    "feature",
    "feed",
    "field",
    "file",
    "filter",
    "flag",
    "folder",
    "form",
    "format",
    "gateway",
    "geo",
    "grid",
    "group",
    "handler",
    "hash",
    "header",
    "health",
    "history",
    "hook",
    "host",
    "image",
    "import",
    "index",
    "inventory",
    "invoice",
    "item",
    "job",
    "journal",
    "key",
    "label",
    "layout",
    "ledger",
    "limit",
    "link",
    "list",
    "loader",
    "locale",
    "lock",
    "log",
    "login",
    "mailer",
    "manifest",
    "map",
    "market",
    "media",
    "member",
    "menu",
    "merge",
    "message",
    "metric",
    "middleware",
    "migration",
    "model",
    "module",
    "monitor",
    "network",
    "node",
    "notification",
    "order",
    "organization",
    "owner",
    "package",
    "page",
    "parser",
    "password",
    "payment",
    "peer",
    "permission",
    "pipeline",
    "plan",
    "plugin",
    "policy",
    "pool",
    "portal",
    "post",
    "preview",
    "price",
    "printer",
    "product",
    "profile",
    "project",
    "prompt",
    "provider",
    "proxy",
    "query",
    "queue",
    "quota",
    "rate",
    "reader",
    "receipt",
    "record",
    "redirect",
    "registry",
    "release",
    "report",
    "repository",
    "request",
    "resolver",
    "resource",
    "response",
    "review",
    "role",
    "route",
    "rule",
    "runner",
    "schedule",
    "schema",
    "scope",
    "search",
    "secret",
    "segment",
    "sender",
    "server",
    "service",
    "session",
    "setting",
    "share",
    "shipment",
    "signal",
    "sitemap",
    "slot",
    "snapshot",
    "socket",
    "source",
    "span",
    "stage",
    "state",
    "storage",
    "store",
    "stream",
    "subscription",
    "summary",
    "supplier",
    "survey",
    "sync",
    "table",
    "tag",
    "task",
    "team",
    "template",
    "tenant",
    "theme",
    "thread",
    "ticket",
    "timer",
    "token",
    "topic",
    "trace",
    "tracker",
    "transaction",
    "transform",
    "translation",
    "upload",
    "user",
    "validator",
    "vault",
    "vendor",
    "version",
    "video",
    "view",
    "visitor",
    "voucher",
    "wallet",
    "webhook",
    "widget",
    "worker",
    "workflow",
    "zone",
]

LANGUAGES = [  # extension, weight, size range in lines
    (".py", 26, (20, 600)),
    (".ts", 18, (15, 500)),
    (".tsx", 8, (20, 300)),
    (".js", 8, (10, 400)),
    (".go", 9, (30, 700)),
    (".rs", 5, (30, 600)),
    (".java", 6, (30, 500)),
    (".md", 6, (5, 200)),
    (".json", 4, (5, 300)),
    (".yaml", 3, (5, 120)),
    (".css", 2, (10, 300)),
    (".sh", 1, (5, 80)),
    (".c", 2, (40, 800)),
    (".rb", 2, (15, 300)),
]


COMMON = [
    "get",
    "set",
    "value",
    "data",
    "name",
    "error",
    "result",
    "config",
    "item",
    "list",
    "key",
    "type",
    "id",
    "index",
    "update",
    "create",
    "delete",
    "init",
    "handle",
    "request",
    "response",
    "user",
    "file",
    "path",
    "load",
    "save",
    "read",
    "write",
    "parse",
    "format",
    "check",
    "build",
    "run",
    "start",
    "stop",
    "open",
    "close",
    "add",
    "remove",
    "find",
    "count",
    "size",
    "count",
    "time",
    "date",
    "text",
    "message",
    "event",
    "state",
    "context",
    "options",
    "params",
    "args",
    "info",
    "status",
    "node",
    "element",
    "object",
    "field",
    "entry",
    "record",
]
SYLLABLES = [
    "ba",
    "be",
    "bi",
    "bo",
    "bu",
    "da",
    "de",
    "di",
    "do",
    "ka",
    "ke",
    "ki",
    "ko",
    "la",
    "le",
    "li",
    "lo",
    "ma",
    "me",
    "mi",
    "mo",
    "na",
    "ne",
    "ni",
    "no",
    "ra",
    "re",
    "ri",
    "ro",
    "sa",
    "se",
    "si",
    "so",
    "ta",
    "te",
    "ti",
    "to",
    "va",
    "ve",
    "vi",
    "vo",
    "za",
    "ze",
    "zi",
    "zo",
]


class Vocabulary:
    """Picks words the way code uses them: Zipf-distributed within generic words, the current
    package's domain words, and a long tail of project-specific names."""

    def __init__(self, rng: random.Random, mode: str) -> None:
        self.rng = rng
        self.mode = mode
        self.tail = list(
            dict.fromkeys(
                "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(24_000)
            )
        )
        self.everything = WORDS + self.tail
        self.topics: dict[str, list[str]] = {}
        self.topic: list[str] = WORDS

    def enter(self, package: str) -> None:
        if package not in self.topics:
            self.topics[package] = self.rng.sample(WORDS, 24) + self.rng.sample(self.tail, 300)
        self.topic = self.topics[package]

    def zipf(self, words: list[str]) -> str:
        # rank ~ 1/u: the first words are common, the rest a long tail
        return words[min(int(len(words) ** self.rng.random()) - 1, len(words) - 1)]

    def word(self) -> str:
        if self.mode == "uniform":
            return self.rng.choice(WORDS)
        roll = self.rng.random()
        if roll < 0.3:
            return self.zipf(COMMON)
        if roll < 0.8:
            return self.zipf(self.topic)
        return self.zipf(self.everything)


VOCABULARY: Vocabulary | None = None


def pick(rng: random.Random) -> str:
    return VOCABULARY.word() if VOCABULARY is not None else rng.choice(WORDS)


def identifier(rng: random.Random, parts: int = 2, style: str = "snake") -> str:
    words = [pick(rng) for _ in range(parts)]
    if style == "camel":
        return words[0] + "".join(word.title() for word in words[1:])
    if style == "pascal":
        return "".join(word.title() for word in words)
    return "_".join(words)


def python_source(rng: random.Random, lines: int) -> str:
    out = [
        f'"""{identifier(rng, 3).replace("_", " ").capitalize()} utilities."""',
        "",
        "import os",
        f"from .{pick(rng)} import {identifier(rng, 2, 'pascal')}",
        "",
    ]
    while len(out) < lines:
        if rng.random() < 0.3:
            out += [f"class {identifier(rng, 2, 'pascal')}:", f'    """{pick(rng)} holder."""', ""]
            for _ in range(rng.randint(1, 4)):
                out += [
                    f"    def {identifier(rng)}(self, {pick(rng)}):",
                    f"        return {pick(rng)} * {rng.randint(1, 99)}",
                    "",
                ]
        else:
            out += [
                f"def {identifier(rng)}({pick(rng)}, {pick(rng)}=None):",
                f"    value = os.environ.get('{pick(rng).upper()}')",
                f"    return value or {pick(rng)}",
                "",
            ]
    return "\n".join(out[:lines]) + "\n"


def curly_source(rng: random.Random, lines: int, ext: str) -> str:
    keyword = {
        ".go": "func",
        ".rs": "pub fn",
        ".java": "public static int",
        ".c": "int",
        ".ts": "export function",
        ".tsx": "export function",
        ".js": "function",
    }.get(ext, "function")
    out = [f"// {identifier(rng, 3).replace('_', ' ')}: {pick(rng)} handling", ""]
    if ext == ".go":
        out = [f"// Package {pick(rng)} handles {pick(rng)}s.", f"package {pick(rng)}", ""]
    while len(out) < lines:
        name = identifier(rng, 2, "camel" if ext in (".ts", ".tsx", ".js", ".java") else "snake")
        out += [
            f"{keyword} {name}(a, b) {{",
            f"  // {pick(rng)} {pick(rng)}",
            f"  return a + b + {rng.randint(0, 1000)};",
            "}",
            "",
        ]
    return "\n".join(out[:lines]) + "\n"


def text_file(rng: random.Random, lines: int, ext: str) -> str:
    if ext == ".md":
        out = [f"# {identifier(rng, 2).replace('_', ' ').title()}", ""]
        while len(out) < lines:
            out += [" ".join(pick(rng) for _ in range(rng.randint(6, 16))) + ".", ""]
        return "\n".join(out[:lines]) + "\n"
    if ext == ".json":
        body = ",\n".join(f'  "{identifier(rng)}": {rng.randint(0, 9999)}' for _ in range(lines))
        return "{\n" + body + "\n}\n"
    if ext == ".yaml":
        return "".join(f"{identifier(rng)}: {pick(rng)}\n" for _ in range(lines))
    if ext == ".css":
        return "".join(
            f".{identifier(rng, 2).replace('_', '-')} {{ color: #{rng.randint(0, 0xFFFFFF):06x}; }}\n"
            for _ in range(lines)
        )
    if ext == ".sh":
        return (
            "#!/bin/sh\n# "
            + identifier(rng, 3).replace("_", " ")
            + "\n"
            + "".join(f"echo {pick(rng)}\n" for _ in range(lines))
        )
    if ext == ".rb":
        return "".join(f"def {identifier(rng)}\n  :{pick(rng)}\nend\n" for _ in range(max(1, lines // 3)))
    return "\n".join(pick(rng) for _ in range(lines)) + "\n"


def content_for(rng: random.Random, ext: str, lines: int) -> str:
    if ext == ".py":
        return python_source(rng, lines)
    if ext in (".go", ".rs", ".java", ".c", ".ts", ".tsx", ".js"):
        return curly_source(rng, lines, ext)
    return text_file(rng, lines, ext)


def generate(root: Path, files: int, seed: int, vocabulary: str = "realistic") -> dict[str, int]:
    global VOCABULARY
    rng = random.Random(seed)
    VOCABULARY = Vocabulary(random.Random(seed + 1), vocabulary)
    root.mkdir(parents=True, exist_ok=True)
    (root / ".gitignore").write_text("dist/\n*.log\n.cache/\n", encoding="utf-8")
    counts = {"source": 0, "binary": 0, "ignored": 0, "vendored": 0}
    extensions = [ext for ext, weight, _ in LANGUAGES for _ in range(weight)]
    sizes = {ext: size for ext, _, size in LANGUAGES}
    packages = [f"packages/{identifier(rng, 1)}-{index}" for index in range(60)]
    made = 0
    directories: list[Path] = []
    while made < files:
        package = rng.choice(packages)
        assert VOCABULARY is not None
        VOCABULARY.enter(package)
        depth = rng.randint(1, 4)
        directory = root / package / "/".join(pick(rng) for _ in range(depth))
        directory.mkdir(parents=True, exist_ok=True)
        directories.append(directory)
        for _ in range(rng.randint(5, 40)):
            if made >= files:
                break
            roll = rng.random()
            if roll < 0.01:
                path = directory / f"{identifier(rng)}.png"
                path.write_bytes(b"\x89PNG\r\n\x1a\n\x00" + rng.randbytes(rng.randint(500, 60_000)))
                counts["binary"] += 1
            elif roll < 0.013:
                path = directory / f"{identifier(rng)}.csv"
                path.write_text(
                    "".join(
                        f"{rng.randint(0, 10**6)},{pick(rng)}\n" for _ in range(rng.randint(2_000, 20_000))
                    )
                )
                counts["source"] += 1
            else:
                ext = rng.choice(extensions)
                low, high = sizes[ext]
                lines = int(low + (high - low) * rng.random() ** 3)  # most files are small
                stem = identifier(rng, rng.randint(1, 3))
                if rng.random() < 0.12 and ext in (".py", ".ts", ".go", ".js"):
                    stem = {
                        ".py": f"test_{stem}",
                        ".ts": f"{stem}.test",
                        ".go": f"{stem}_test",
                        ".js": f"{stem}.spec",
                    }[ext]
                path = directory / f"{stem}{ext}"
                path.write_text(content_for(rng, ext, lines), encoding="utf-8")
                counts["source"] += 1
            made += 1
    # Ignored build output and vendored dependencies: present on disk, never indexed.
    for index in range(max(1, files // 100)):
        out = root / rng.choice(packages) / "dist" / f"bundle{index}.js"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("console.log(1)\n" * 50)
        counts["ignored"] += 1
    for index in range(max(1, files // 50)):
        dep = root / "node_modules" / f"dep{index % 40}" / f"index{index}.js"
        dep.parent.mkdir(parents=True, exist_ok=True)
        dep.write_text("module.exports = {}\n")
        counts["vendored"] += 1
    return counts


FILLER = [
    "how",
    "where",
    "does",
    "the",
    "handle",
    "for",
    "when",
    "with",
    "a",
    "which",
    "file",
    "should",
    "change",
    "fix",
]


def queries(count: int, seed: int = 11) -> list[str]:
    """Questions drawn, with a fixed seed, from the workspace's own vocabulary: three to eight
    words, as a chat message about the code would be."""
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 5))]
        words += rng.sample(FILLER, rng.randint(1, 3))
        rng.shuffle(words)
        if rng.random() < 0.3:  # sometimes an identifier, as written in code
            words.append(f"{rng.choice(WORDS)}_{rng.choice(WORDS)}")
        made.append(" ".join(words))
    return made


GET_FILES_FILTERS: list[dict[str, object]] = [
    {"kinds": ["source"], "languages": ["python"]},
    {"globs": ["*.ts", "!*.test.ts"]},
    {"kinds": ["test"], "orderBy": "recent"},
    {"languages": ["go", "rust"], "status": ["annotated"]},
    {"query": "payment cache"},
    {"tags": ["test"]},
    {"paths": ["packages"], "globs": ["**/*.md"]},
    {"orderBy": "frecency"},
    {"changedSince": 0, "kinds": ["docs", "config"]},
    {"status": ["pending"]},
]
"""getFiles filters of every kind a file picker sends, for load that mixes filtered pages in."""
