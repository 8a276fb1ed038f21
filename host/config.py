"""Process configuration: the data root and `PLUGHOST_*` environment switches (SPEC 1)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The checkout (or install prefix) that holds `host/`, `plugins/` and `manifests/`."""


def home(env: Mapping[str, str] | None = None) -> Path:
    """The data root: `PLUGHOST_HOME`, default `~/.plughost`."""
    env = os.environ if env is None else env
    value = env.get("PLUGHOST_HOME")
    return Path(value).expanduser() if value else Path.home() / ".plughost"


def manifests_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the JSON Schemas and shipped brands live (`manifests/`)."""
    env = os.environ if env is None else env
    value = env.get("PLUGHOST_MANIFESTS_DIR")
    return Path(value) if value else REPO_ROOT / "manifests"


def schema_path(name: str) -> Path:
    return manifests_dir() / "schemas" / f"{name}.schema.json"


def builtin_plugins_dir() -> Path:
    """The installed `plugins/` package: the default platform plugins folder."""
    return REPO_ROOT / "plugins"


def flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    """True when an env switch is set to 1/true/yes/on (case-insensitive)."""
    env = os.environ if env is None else env
    return env.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def env_int(env: Mapping[str, str], name: str, default: int, *, low: int | None = None,
            high: int | None = None) -> int:
    """An integer env setting: the default when unset; a one-line UserError naming it when invalid."""
    from host.errors import UserError

    raw = env.get(name, "").strip()
    if not raw:
        return default
    if low is not None and high is not None:
        expected = f"an integer between {low} and {high}"
    elif low is not None:
        expected = f"an integer >= {low}"
    else:
        expected = "an integer"
    try:
        value = int(raw)
    except ValueError:
        raise UserError(f"{name}: expected {expected}, got {raw!r:.40}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise UserError(f"{name}: expected {expected}, got {value}")
    return value


def csv_list(value: str | None) -> list[str] | None:
    """Parse a comma list; None when unset, [] when set to the empty string."""
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]
