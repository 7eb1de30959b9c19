"""Small pure pieces: word splitting, classification, ignore rules, settings, paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from filescout.classify import classify, is_sensitive, kind_of, language_of
from filescout.config import default_db_path, load_settings
from filescout.errors import InvalidParams
from filescout.ignore import IgnoreRules
from filescout.paths import to_relative
from filescout.scan import walk
from filescout.text import split_identifier, words


def test_identifier_splitting() -> None:
    assert split_identifier("parseHTTPHeader_v2") == ["parse", "http", "header", "v2"]
    assert split_identifier("XMLHttpRequest") == ["xml", "http", "request"]
    assert list(words("getUserName()")) == ["getusername", "get", "user", "name"]
    assert "the" not in list(words("the cart"))


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


@pytest.mark.parametrize("path", [".env", ".env.local", "certs/server.pem", "id_rsa",
                                  "home/.ssh/config", "deploy/credentials.json", "tf/prod.tfstate"])
def test_sensitive_files(path: str) -> None:
    assert is_sensitive(path)


@pytest.mark.parametrize("path", [".env.example", "src/env.py", "docs/keys.md"])
def test_not_sensitive(path: str) -> None:
    assert not is_sensitive(path)


def test_nested_gitignore_walk(tmp_path: Path) -> None:
    for relative in ["a.py", "a.log", "keep.log", "sub/b.py", "sub/b.tmp", "sub/deep/c.tmp",
                     "node_modules/x.js", "out/o.py"]:
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
    assert any("filescout.toml ignored" in w and "maxFileSize" in w for w in loaded.warnings)
    assert any("editor settings ignored" in w and "bogus" in w for w in loaded.warnings)


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
