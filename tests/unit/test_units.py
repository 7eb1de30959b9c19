"""Small pure pieces: word splitting, classification, ignore rules, settings, paths."""

from __future__ import annotations

import gc
import random
import string
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest

from filescout.core.errors import InvalidParams
from filescout.core.paths import to_relative
from filescout.core.words import BODY_TERM_CAP, body_words, split_identifier, words
from filescout.engine.settings import default_db_path, load_settings
from filescout.scan.classify import classify, is_sensitive, kind_of, language_of
from filescout.scan.ignore import IgnoreRules
from filescout.scan.tree import walk


def test_identifier_splitting() -> None:
    assert split_identifier("parseHTTPHeader_v2") == ["parse", "http", "header", "v2"]
    assert split_identifier("XMLHttpRequest") == ["xml", "http", "request"]
    assert list(words("getUserName()")) == ["getusername", "get", "user", "name"]
    assert "the" not in list(words("the cart"))
    assert split_identifier("HTTP_SERVER_v2") == ["http", "server", "v2"]


def test_long_tokens_are_not_kept_after_they_are_split() -> None:
    """Words of identifiers are cached, 16,384 of them; a long token (a question of 20,000
    letters, a base64 blob in a file) used to be kept with all its parts, some 400 KB each,
    so distinct long questions could make the server hold gigabytes."""
    tokens = ["".join(random.Random(seed).choices(string.ascii_letters, k=20_000)) for seed in range(20)]
    list(words(tokens[0]))  # whatever a first call sets up
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for token in tokens[1:]:
            assert len(list(words(token))) > 1
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 200_000, f"{kept} bytes kept for 19 long tokens"
    assert list(words("getUserName")) == ["getusername", "get", "user", "name"]  # short ones: as before


def test_body_words_cap_each_word() -> None:
    text = "cart = Cart()\n" * 50 + "def add_item(cart, item): return cart_total(item)\n"
    body = body_words(text).split()
    assert body.count("cart") == BODY_TERM_CAP  # 150 occurrences, capped
    assert body.count("item") == BODY_TERM_CAP and body.count("add_item") == 1
    assert {"add", "total", "cart_total", "def", "return"} <= set(body)
    assert body_words("") == ""


def _body_words_by_definition(text: str) -> str:
    """What body_words means, written plainly: every word `words` finds, at most BODY_TERM_CAP
    times, a word's copies together, in the order words first appear."""
    counts = Counter(words(text))
    return " ".join(" ".join([word] * min(times, BODY_TERM_CAP)) for word, times in counts.items())


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a an the",
        "x = 0x1F + 2nd_place + 1e5 + 3D + 0xDeadBeef + 99 + 007bond",
        "foo_foo foo_foo foo_foo foo fooBar FOO_BAR __init__ _ __ ___x",
        "HTTPServer parseHTTPHeader_v2 getURLsFromHTML ABCdef aB1c2D",
        "naïve café déjà_vu straße Ünïcode_Name 日本語 ident_日本",
        "tab\tseparated\nlines\r\nand,commas;semi:colons.dots-dashes/slashes",
    ],
)
def test_body_words_are_what_they_are_defined_to_be(text: str) -> None:
    assert body_words(text) == _body_words_by_definition(text)


def test_body_words_of_real_sources_are_what_they_are_defined_to_be() -> None:
    sources = sorted((Path(__file__).parents[2] / "server" / "filescout").rglob("*.py"))
    assert len(sources) > 50
    for source in sources:
        text = source.read_text(encoding="utf-8")
        assert body_words(text) == _body_words_by_definition(text), source


@pytest.mark.parametrize(
    ("path", "language", "kind"),
    [
        ("src/app.py", "python", "source"),
        ("tests/test_app.py", "python", "test"),
        ("web/button.test.tsx", "tsx", "test"),
        ("pkg/server_test.go", "go", "test"),
        ("README.md", "markdown", "docs"),
        ("docs/api.rst", "rst", "docs"),
        ("package.json", "json", "config"),
        ("config/settings.yaml", "yaml", "config"),
        ("package-lock.json", "json", "generated"),
        ("dist/app.min.js", "javascript", "generated"),
        ("data/cities.csv", "csv", "data"),
        ("Makefile", "make", "config"),
    ],
)
def test_classification(path: str, language: str, kind: str) -> None:
    result = classify(path, b"x = 1\n")
    assert (result.language, result.kind) == (language, kind)


def test_shebang_and_binary() -> None:
    assert language_of("bin/tool", b"#!/usr/bin/env python3\nprint()") == "python"
    assert classify("blob", b"abc\x00def").kind == "binary"
    assert kind_of("x.js", "javascript", binary=False, generated=True) == "generated"


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        ".env.local",
        "certs/server.pem",
        "id_rsa",
        "home/.ssh/config",
        "deploy/credentials.json",
        "tf/prod.tfstate",
    ],
)
def test_sensitive_files(path: str) -> None:
    assert is_sensitive(path)


@pytest.mark.parametrize("path", [".env.example", "src/env.py", "docs/keys.md"])
def test_not_sensitive(path: str) -> None:
    assert not is_sensitive(path)


def test_nested_gitignore_walk(tmp_path: Path) -> None:
    for relative in [
        "a.py",
        "a.log",
        "keep.log",
        "sub/b.py",
        "sub/b.tmp",
        "sub/deep/c.tmp",
        "node_modules/x.js",
        "out/o.py",
    ]:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x")
    (tmp_path / ".gitignore").write_text("*.log\n!keep.log\nout/\n")
    (tmp_path / "sub/.gitignore").write_text("*.tmp\n")
    found = set(walk(tmp_path, IgnoreRules()))
    assert found == {".gitignore", "a.py", "keep.log", "sub/.gitignore", "sub/b.py"}


def test_configured_excludes(tmp_path: Path) -> None:
    rules = IgnoreRules(["generated/", "*.snap"])
    assert rules.is_ignored("generated", is_dir=True)
    assert rules.is_ignored("ui/__snapshots__/a.snap")
    assert not rules.is_ignored("src/a.py")


def test_settings_layers(tmp_path: Path) -> None:
    (tmp_path / "filescout.toml").write_text("max_file_size = 2048\nexclude = ['vendor/']\n")
    loaded = load_settings(tmp_path, {"exclude": ["gen/"]}, env={"FILESCOUT_LOG_LEVEL": "debug"})
    assert loaded.settings.max_file_size == 2048
    assert loaded.settings.exclude == ["gen/"]
    assert loaded.settings.log_level == "debug"
    assert loaded.warnings == []


def test_bad_settings_layer_is_dropped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "filescout.toml").write_text("maxFileSize = 'big'\n")
    loaded = load_settings(tmp_path, {"bogus": 1}, env={})
    assert loaded.settings.max_file_size == 1_048_576
    assert any(w.startswith("filescout.toml: maxFileSize ignored") for w in loaded.warnings)
    assert any(w.startswith("editor settings: bogus ignored") for w in loaded.warnings)


def test_default_db_path_is_per_workspace(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    first = default_db_path(Path("/work/a/project"), env)
    second = default_db_path(Path("/work/b/project"), env)
    assert first != second
    assert first.parent.parent == tmp_path / "filescout"
    assert first.parent.name.startswith("project-")


def test_paths_stay_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    assert to_relative(root, "src/a.py", field="p") == "src/a.py"
    assert to_relative(root, str(root / "src/a.py"), field="p") == "src/a.py"
    assert to_relative(root, (root / "src/a b.py").as_uri(), field="p") == "src/a b.py"
    assert to_relative(root, "./src//a.py", field="p") == "src/a.py"
    for bad in ["../x", "src/../../x", "/etc/passwd", "file:///etc/passwd"]:
        with pytest.raises(InvalidParams):
            to_relative(root, bad, field="p")


def test_model_settings_from_toml_and_environment(tmp_path: Path) -> None:
    (tmp_path / "filescout.toml").write_text(
        '[model]\nmodel = "qwen2.5-coder:7b"\nbase_url = "http://127.0.0.1:11434/v1"\n'
        "file_tokens = 800\n\n[budget]\ndaily_tokens = 1000\n"
    )
    loaded = load_settings(
        tmp_path, None, env={"OPENAI_API_KEY": "from-env", "OPENAI_BASE_URL": "http://x/v1"}
    )
    model = loaded.settings.model
    assert (model.model, model.base_url, model.file_tokens) == (
        "qwen2.5-coder:7b",
        "http://127.0.0.1:11434/v1",
        800,
    )
    assert model.api_key == "none"  # a local endpoint the file names never gets the user's key
    assert loaded.settings.budget.daily_tokens == 1000
    assert load_settings(tmp_path, None, env={"FILESCOUT_PRIVACY": "1"}).settings.privacy_mode
    # The user's own endpoint (here from the environment) keeps the user's key.
    (tmp_path / "filescout.toml").write_text('[model]\nmodel = "gpt-4o-mini"\nconcurrency = 4\n')
    loaded = load_settings(
        tmp_path, None, env={"OPENAI_API_KEY": "from-env", "OPENAI_BASE_URL": "http://x/v1"}
    )
    assert (
        loaded.settings.model.model,
        loaded.settings.model.api_key,
        loaded.settings.model.concurrency,
    ) == ("gpt-4o-mini", "from-env", 4)


def test_workspace_file_cannot_send_content_or_keys_elsewhere(tmp_path: Path) -> None:
    def load(toml: str, editor: dict | None = None, env: dict | None = None):
        (tmp_path / "filescout.toml").write_text(toml)
        return load_settings(tmp_path, editor, env={"OPENAI_API_KEY": "users-key", **(env or {})})

    # A remote endpoint, with or without a key of its own: ignored, and no model turned on.
    for toml in [
        '[model]\nmodel = "m"\nbase_url = "https://collector.example/v1"\n',
        '[model]\nmodel = "m"\nbase_url = "https://collector.example/v1"\napi_key = "k"\n',
        '[model]\nmodel = "gpt-4o"\n',
    ]:
        loaded = load(toml)
        assert loaded.settings.model.base_url is None and loaded.settings.model.model is None, toml
        assert any("ignored" in warning for warning in loaded.warnings)
    # A local endpoint the file names gets no key of the user's; with an editor key it is dropped.
    assert (
        load('[model]\nmodel = "m"\nbase_url = "http://localhost:8080/v1"\n').settings.model.api_key == "none"
    )
    loaded = load(
        '[model]\nmodel = "m"\nbase_url = "http://127.0.0.1:3000/v1"\n',
        editor={"model": {"apiKey": "editor-key"}},
    )
    assert loaded.settings.model.base_url is None
    # The user's chosen endpoint wins and keeps the user's key.
    loaded = load(
        '[model]\nbase_url = "http://127.0.0.1:3000/v1"\n',
        editor={"model": {"model": "m", "baseUrl": "https://api.example/v1"}},
    )
    assert (loaded.settings.model.base_url, loaded.settings.model.api_key) == (
        "https://api.example/v1",
        "users-key",
    )
    # Privacy mode can be turned on, not off.
    assert load("privacy_mode = false\n", env={"FILESCOUT_PRIVACY": "1"}).settings.privacy_mode
    assert load("privacy_mode = true\n").settings.privacy_mode
    # The index is placed by the user only: a workspace file cannot name any path for it.
    (tmp_path / "ws").mkdir()
    for db_path in [
        "/home/someone/.bashrc",
        "~/.bashrc",
        "a/../../x",
        "C:/Users/x",
        "..\\x",
        ".",
        "src",
        ".git/index",
        ".filescout/index.sqlite3",
    ]:
        (tmp_path / "ws" / "filescout.toml").write_text(f"db_path = {db_path!r}\n".replace("'", '"'))
        loaded = load_settings(tmp_path / "ws", None, env={})
        assert loaded.settings.db_path is None, db_path
        ignored = [warning for warning in loaded.warnings if "db_path ignored" in warning]
        assert len(ignored) == 1 and "FILESCOUT_DB_PATH" in ignored[0], db_path
    loaded = load_settings(tmp_path / "ws", None, env={"FILESCOUT_DB_PATH": "/var/idx.sqlite3"})
    assert loaded.settings.db_path == "/var/idx.sqlite3"  # the environment's path stands
    (tmp_path / "ws" / "filescout.toml").write_text("filescout = 1\n")
    assert any("must be a table" in w for w in load_settings(tmp_path / "ws", None, env={}).warnings)


def test_provider_labels() -> None:
    from filescout.llm.client import provider_of
    from filescout_protocol.types import ModelSettings

    assert provider_of(ModelSettings(model="m")) == "openai"
    assert provider_of(ModelSettings(model="m", base_url="http://localhost:11434/v1")) == "ollama"
    assert provider_of(ModelSettings(model="m", base_url="http://127.0.0.1:1234/v1")) == "lmstudio"
    assert provider_of(ModelSettings(model="m", base_url="https://llm.example.com/v1")) == "llm.example.com"


def test_circuit_breaker_opens_doubles_and_closes() -> None:
    from filescout.llm.client import CircuitBreaker

    now = [100.0]
    breaker = CircuitBreaker(cooldown=10, clock=lambda: now[0])
    breaker.failure()
    breaker.failure()
    assert not breaker.is_open
    breaker.failure()
    assert breaker.is_open and breaker.seconds_left() == 10
    now[0] += 1
    breaker.failure()  # a call that was under way when the circuit opened: not a failed trial
    assert breaker.is_open and breaker.seconds_left() == 9
    now[0] += 9.5
    assert not breaker.is_open  # a trial call may go
    breaker.failure()
    assert breaker.is_open and breaker.seconds_left() == 20  # it failed: pause twice as long
    breaker.success()
    assert not breaker.is_open and breaker.cooldown == 10


def test_retry_after_forms() -> None:
    from datetime import datetime, timedelta, timezone
    from email.utils import format_datetime
    from types import SimpleNamespace

    from filescout.llm.client import retry_after

    def error(headers: dict) -> SimpleNamespace:
        return SimpleNamespace(response=SimpleNamespace(headers=headers))

    assert retry_after(error({"retry-after": "3"})) == 3
    assert retry_after(error({"retry-after-ms": "250"})) == 0.25
    assert retry_after(error({"retry-after": "9999"})) == 120  # capped
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 < retry_after(error({"retry-after": later})) <= 30
    assert retry_after(error({})) is None


def test_json_extraction_tolerates_fences_and_prose() -> None:
    import msgspec

    from filescout.llm.client import extract_json

    class Answer(msgspec.Struct):
        files: list[str]

    assert extract_json('{"files": ["a"]}', Answer).files == ["a"]
    assert extract_json('Sure!\n```json\n{"files": ["b"]}\n```', Answer).files == ["b"]
    assert extract_json('Here: {"files": ["c"]} hope that helps', Answer).files == ["c"]
    with pytest.raises(ValueError):
        extract_json("no json at all", Answer)


def test_workspace_file_cannot_turn_on_or_point_the_shared_cache(tmp_path: Path) -> None:
    def load(toml: str, env: dict | None = None):
        (tmp_path / "filescout.toml").write_text(toml)
        return load_settings(tmp_path, None, env=env or {})

    user_cache = {"FILESCOUT_SHARED_CACHE": "postgresql://me@db.internal/team"}
    for toml in [
        '[shared_cache]\nurl = "postgresql://collector.example/steal"\n',
        '[shared_cache]\nmode = "read_write"\n',
        '[shared_cache]\nurl = "postgresql://collector.example/steal"\nmode = "read_only"\n',
    ]:
        loaded = load(toml, user_cache)
        assert loaded.settings.shared_cache.url == "postgresql://me@db.internal/team", toml
        assert loaded.settings.shared_cache.mode == "read_write", toml
        assert any("shared_cache ignored" in warning for warning in loaded.warnings), toml
        assert load(toml).settings.shared_cache.url is None, toml
    # It may turn sharing off, and tune the timeout.
    loaded = load('[shared_cache]\nmode = "off"\ntimeout = 1.5\n', user_cache)
    assert (loaded.settings.shared_cache.mode, loaded.settings.shared_cache.timeout) == ("off", 1.5)
    assert loaded.warnings == []
    # The environment and the editor may set it.
    env = {**user_cache, "FILESCOUT_SHARED_CACHE_MODE": "read_only"}
    assert load("", env).settings.shared_cache.mode == "read_only"
