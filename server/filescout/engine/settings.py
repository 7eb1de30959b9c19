"""Settings from every source, merged in one place.

Precedence, highest first: the editor (initializationOptions, then didChangeConfiguration),
`filescout.toml` at the workspace root, the environment, built-in defaults. Each layer is
validated on its own: a bad value (of the wrong type, out of its bounds, unknown) is dropped with
a warning naming it, and the rest of its layer applies, instead of silently mixing in garbage.

`filescout.toml` comes with the repository, so it is trusted less than the user: it cannot
point the user's API key at an endpoint of its choosing, place the index anywhere, turn privacy
mode off, turn on sending images to the model, or turn on or point a shared cache.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from filescout.core.beneath import read_rules_file
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
    "FILESCOUT_MODEL_IMAGES": (("model", "images"), bool),
    "FILESCOUT_PRIVACY": (("privacyMode",), bool),
    "FILESCOUT_SHARED_CACHE": (("sharedCache", "url"), str),
    "FILESCOUT_SHARED_CACHE_MODE": (("sharedCache", "mode"), str),
    "FILESCOUT_WORKERS": (("index", "workers"), int),
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
    """The settings of the workspace's own file, or why they were ignored. Read beneath the
    root and never through a symlink (`beneath.read_rules_file`): a repository cannot make its
    settings those of a file elsewhere, nor hang the server with a FIFO."""
    if root is None:
        return {}, None
    try:
        raw = read_rules_file(root, CONFIG_FILE)
        if raw is None:
            return {}, None
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return {}, f"{CONFIG_FILE} ignored: {exc}"
    section = data.get("filescout", data)
    if not isinstance(section, Mapping):
        return {}, f"{CONFIG_FILE} ignored: [filescout] must be a table"
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


NO_KEY = "none"
"""The key sent to a local endpoint a workspace file names: local servers ignore it."""


def vet_workspace_layer(
    layer: dict[str, Any],
    env_layer: Mapping[str, Any],
    editor_layer: Mapping[str, Any],
    warnings: list[str],
) -> dict[str, Any]:
    """Drop what a repository's own settings file may not decide for the user: where workspace
    content, the index and the user's key go. It may pick an endpoint on this machine (which gets no key
    of the user's) and tune a model the user turned on; it cannot turn on a remote model, nor have
    images sent to any model."""
    layer = dict(layer)
    model = layer.get("model")
    if isinstance(model, Mapping):
        model = dict(model)
        env_model, editor_model = (user_layer.get("model") for user_layer in (env_layer, editor_layer))
        user_model = {
            **(env_model if isinstance(env_model, Mapping) else {}),
            **(editor_model if isinstance(editor_model, Mapping) else {}),
        }
        editor_key = isinstance(editor_model, Mapping) and "apiKey" in editor_model  # outranks ours
        base_url = model.get("baseUrl")
        local = isinstance(base_url, str) and is_loopback_url(base_url) and not editor_key
        if "baseUrl" in model and isinstance(editor_model, Mapping) and "baseUrl" in editor_model:
            del model["baseUrl"]  # the editor's endpoint wins anyway; keep the user's key for it
            local = False
        elif "baseUrl" in model and not local:
            del model["baseUrl"]
            warnings.append(
                f"{CONFIG_FILE}: model.base_url ignored: a workspace file may only name "
                "an endpoint on this machine; set others in the editor or environment"
            )
        if local:
            model.setdefault("apiKey", NO_KEY)  # the user's key never goes where a repository says
        elif "model" in model and not ("model" in user_model or "baseUrl" in user_model):
            del model["model"]
            warnings.append(
                f"{CONFIG_FILE}: model.model ignored: a workspace file cannot turn on "
                "a remote model; name the model in the editor settings or FILESCOUT_MODEL"
            )
        if model.get("images") is True:
            # Pictures cannot be redacted: what the model may see is the user's call.
            del model["images"]
            warnings.append(
                f"{CONFIG_FILE}: model.images ignored: a workspace file can stop images going to "
                "the model, not send them; turn it on in the editor or FILESCOUT_MODEL_IMAGES"
            )
        layer["model"] = model
    if "dbPath" in layer:
        # Wherever it points, the path is one a cloned repository chose for filescout to write.
        del layer["dbPath"]
        warnings.append(
            f"{CONFIG_FILE}: db_path ignored: a workspace file cannot place the index; "
            "set dbPath in the editor settings or FILESCOUT_DB_PATH"
        )
    if layer.get("privacyMode") is False:
        del layer["privacyMode"]  # a repository may turn privacy mode on, never off
    shared = layer.get("sharedCache")
    if isinstance(shared, Mapping) and any(shared.get(key, "off") != "off" for key in ("url", "mode")):
        # What the model wrote about this code may go only where the user said; a repository
        # may turn the sharing off.
        layer["sharedCache"] = {"mode": "off"} if shared.get("mode") == "off" else {}
        if not layer["sharedCache"]:
            del layer["sharedCache"]
        warnings.append(
            f"{CONFIG_FILE}: shared_cache ignored: a workspace file can turn the shared cache "
            "off, not on or elsewhere; set it in the editor or FILESCOUT_SHARED_CACHE"
        )
    return layer


def load_settings(
    root: Path | None, editor: Mapping[str, Any] | None = None, env: Mapping[str, str] = os.environ
) -> LoadedSettings:
    warnings: list[str] = []
    file_layer, file_problem = from_file(root)
    if file_problem:
        warnings.append(file_problem)
    editor_layer = camelize(dict(editor or {}))
    env_layer = from_environment(env)
    file_layer = vet_workspace_layer(file_layer, env_layer, editor_layer, warnings)
    layers = [("environment", env_layer), (CONFIG_FILE, file_layer), ("editor settings", editor_layer)]
    merged: dict[str, Any] = {}
    for name, layer in layers:
        if layer:
            merged = _apply(merged, layer, name, warnings)
    return LoadedSettings(msgspec.convert(merged, Settings), warnings)


def _apply(
    merged: dict[str, Any], layer: Mapping[str, Any], name: str, warnings: list[str]
) -> dict[str, Any]:
    """`merged` with the settings of `layer` on top. A setting that is not valid there (out of
    bounds, of the wrong type, unknown) is left out with a warning naming it; the others apply."""
    candidate = _merge(merged, layer)
    try:
        msgspec.convert(candidate, Settings)
        return candidate
    except msgspec.ValidationError:
        pass
    for key, value in layer.items():
        candidate = _merge(merged, {key: value})
        try:
            msgspec.convert(candidate, Settings)
        except msgspec.ValidationError as exc:
            message, _, where = str(exc).partition(" - at `$.")
            where = where.rstrip("`") or key
            also = f" (and the rest of {key})" if where != key else ""
            warnings.append(f"{name}: {where} ignored{also}: {message}")
            continue
        merged = candidate
    return merged


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
