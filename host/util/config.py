"""Process configuration: the data root and `PLUGHOST_*` environment switches (docs/configuration.md#data-root)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The checkout (or install prefix) that holds `host/`, `plugins/` and `manifests/`."""


def home(env: Mapping[str, str] | None = None) -> Path:
    """The data root: `PLUGHOST_HOME`, default `~/.plughost`."""
    env = os.environ if env is None else env
    value = env.get("PLUGHOST_HOME")
    return Path(value).expanduser() if value else Path.home() / ".plughost"


def read_dotenv(path: Path) -> dict[str, str]:
    """A `KEY=value` file (blank lines, `#` comments, `export ` and matching quotes allowed); {} when absent."""
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return out
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if key:
            out[key] = value
    return out


def home_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`<PLUGHOST_HOME>/.env`: what `plughost install` recorded (payload folders, brand, embedder)."""
    return read_dotenv(home(env) / ".env")


def load_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The one configuration loader: `<PLUGHOST_HOME>/.env` under the process environment.

    Every command (boot, serve, plugins list, mcp serve, account ...) and every generated MCP
    server builds its host from this, so they all see the same plugin set and brand. The data
    root itself (`PLUGHOST_HOME`) comes from the environment only; a key set in the environment
    wins over the file.
    """
    env = dict(os.environ if env is None else env)
    out = {**home_env(env), **env}
    for key in PATH_KEYS:  # `${CLAUDE_PLUGIN_ROOT}/../..` arrives unnormalised from Claude Code
        if out.get(key) and os.path.isabs(out[key]):
            out[key] = os.path.normpath(out[key])
    return out


PATH_KEYS = ("PLUGHOST_HOME", "PLUGHOST_PLUGINS_DIR", "PLUGHOST_PREMIUM_DIR")


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
    from host.util.errors import UserError

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
