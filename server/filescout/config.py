"""Settings from every source, merged in one place.

Precedence, highest first: the editor (initializationOptions, then didChangeConfiguration),
`filescout.toml` at the workspace root, the environment, built-in defaults. Each layer is
validated on its own, so one bad value drops that layer with a clear warning instead of
silently mixing in garbage.

`filescout.toml` comes with the repository, so it is trusted less than the user: it cannot
point the user's API key at an endpoint of its choosing, put the index outside the workspace,
or turn privacy mode off.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import posixpath
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from filescout_protocol.types import Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

CONFIG_FILE = "filescout.toml"
# variable -> (path in the settings, type); earlier variables win over later ones.
ENV_FIELDS: dict[str, tuple[tuple[str, ...], type]] = {
    "FILESCOUT_DB_PATH": (("dbPath",), str),
    "FILESCOUT_MAX_FILE_SIZE": (("maxFileSize",), int),
    "FILESCOUT_LOG_LEVEL": (("logLevel",), str),
    "FILESCOUT_MODEL": (("model", "model"), str),
    "FILESCOUT_API_KEY": (("model", "apiKey"), str),
    "OPENAI_API_KEY": (("model", "apiKey"), str),
    "FILESCOUT_BASE_URL": (("model", "baseUrl"), str),
    "OPENAI_BASE_URL": (("model", "baseUrl"), str),
    "FILESCOUT_PRIVACY": (("privacyMode",), bool),
}


@dataclass
class LoadedSettings:
    settings: Settings
    warnings: list[str] = field(default_factory=list)


def camel(name: str) -> str:
    head, *rest = re.split(r"[_-]", name)
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camelize(value: Any) -> Any:
    """TOML users write snake_case or kebab-case; the wire uses camelCase."""
    if isinstance(value, Mapping):
        return {camel(str(key)): camelize(item) for key, item in value.items()}
    return value


def from_environment(env: Mapping[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for variable, (path, kind) in ENV_FIELDS.items():
        raw = env.get(variable)
        if raw is None or raw == "":
            continue
        value: Any = raw
        if kind is int and raw.strip().lstrip("-").isdigit():
            value = int(raw)
        elif kind is bool:
            value = raw.strip().lower() in ("1", "true", "yes", "on")
        target = layer
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target.setdefault(path[-1], value)
    return layer


def from_file(root: Path | None) -> tuple[dict[str, Any], str | None]:
    if root is None:
        return {}, None
    path = root / CONFIG_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return {}, f"{CONFIG_FILE} ignored: {exc}"
    section = data.get("filescout", data)
    return camelize(section), None


def _merge(base: dict[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in layer.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def is_loopback_url(url: str) -> bool:
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def vet_workspace_layer(layer: dict[str, Any], editor_layer: Mapping[str, Any],
                        warnings: list[str]) -> dict[str, Any]:
    """Drop what a repository's own settings file may not decide for the user."""
    layer = dict(layer)
    model = layer.get("model")
    if isinstance(model, Mapping) and isinstance(model.get("baseUrl"), str):
        editor_model = editor_layer.get("model")
        key_from_user = "apiKey" not in model or (
            isinstance(editor_model, Mapping) and "apiKey" in editor_model)
        if key_from_user and not is_loopback_url(model["baseUrl"]):
            layer["model"] = {key: value for key, value in model.items() if key != "baseUrl"}
            warnings.append(f"{CONFIG_FILE}: model.base_url ignored: a workspace file may name a "
                            "remote endpoint only together with its own api_key (your key is not "
                            "sent where a repository says); set it in the editor or environment")
    db_path = layer.get("dbPath")
    if isinstance(db_path, str):
        normal = posixpath.normpath(db_path.replace("\\", "/"))
        if db_path.startswith("~") or posixpath.isabs(normal) or normal.split("/")[0] == "..":
            del layer["dbPath"]
            warnings.append(f"{CONFIG_FILE}: db_path ignored: from a workspace file it must be a "
                            "path inside the workspace")
    if layer.get("privacyMode") is False:
        del layer["privacyMode"]  # a repository may turn privacy mode on, never off
    return layer


def load_settings(root: Path | None, editor: Mapping[str, Any] | None = None,
                  env: Mapping[str, str] = os.environ) -> LoadedSettings:
    warnings: list[str] = []
    file_layer, file_problem = from_file(root)
    if file_problem:
        warnings.append(file_problem)
    editor_layer = camelize(dict(editor or {}))
    file_layer = vet_workspace_layer(file_layer, editor_layer, warnings)
    layers = [("environment", from_environment(env)), (CONFIG_FILE, file_layer),
              ("editor settings", editor_layer)]
    merged: dict[str, Any] = {}
    for name, layer in layers:
        if not layer:
            continue
        candidate = _merge(merged, layer)
        try:
            msgspec.convert(candidate, Settings)
        except msgspec.ValidationError as exc:
            warnings.append(f"{name} ignored: {exc}")
            continue
        merged = candidate
    return LoadedSettings(msgspec.convert(merged, Settings), warnings)


def cache_root(env: Mapping[str, str] = os.environ) -> Path:
    if env.get("FILESCOUT_CACHE_DIR"):
        return Path(env["FILESCOUT_CACHE_DIR"]).expanduser()
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "filescout"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "filescout"
    if os.name == "nt" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "filescout" / "Cache"
    return Path.home() / ".cache" / "filescout"


def default_db_path(root: Path, env: Mapping[str, str] = os.environ) -> Path:
    """One folder per workspace, named so a human can tell which is which."""
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    safe_name = re.sub(r"[^A-Za-z0-9._-]", "_", root.name or "root")[:40]
    return cache_root(env) / f"{safe_name}-{digest}" / "index.sqlite3"


def db_path_for(root: Path, settings: Settings, env: Mapping[str, str] = os.environ) -> Path:
    if settings.db_path:
        configured = Path(settings.db_path).expanduser()
        return configured if configured.is_absolute() else root / configured
    return default_db_path(root, env)
