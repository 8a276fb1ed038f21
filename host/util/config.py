"""Process configuration: the data root, the `.env` loader and where the shipped files are
(docs/configuration.md#data-root).

Every `PLUGHOST_*` variable is a :class:`plughost.util.settings.Setting`, read through it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from plughost.util import settings
from plughost.util.errors import UserError
from plughost.util.settings import (
    csv_list as csv_list,  # the comma-list parser, for the callers that had it here
)

PACKAGE_ROOT = Path(str(resources.files("plughost")))
"""The installed `plughost` package (the checkout's `host/` in an editable install): its
`manifests/` (schemas, shipped brands) ship inside it, so a wheel finds them anywhere."""


def home(env: Mapping[str, str] | None = None) -> Path:
    """The data root: `PLUGHOST_HOME`, default `~/.plughost`."""
    return settings.HOME.read(env).expanduser()


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


PATH_KEYS = tuple(s.name for s in (settings.HOME, settings.PLUGINS_DIR, settings.PREMIUM_DIR))


def manifests_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the JSON Schemas and shipped brands live (the package's `manifests/`)."""
    return settings.MANIFESTS_DIR.read(env) or PACKAGE_ROOT / "manifests"


def schema_path(name: str) -> Path:
    return manifests_dir() / "schemas" / f"{name}.schema.json"


def builtin_plugins_dir() -> Path:
    """The installed `plughost.plugins` package (the checkout's `plugins/`): the default platform plugins folder."""
    return Path(str(resources.files("plughost.plugins")))


def checkout_root() -> Path:
    """The source checkout this package runs from, for the developer commands that rewrite its
    docs (`python -m plughost.runtime.hookdocs`); an installed wheel has none."""
    root = PACKAGE_ROOT.parent
    if not (root / "pyproject.toml").is_file() or not (root / "docs").is_dir():
        raise UserError(f"{PACKAGE_ROOT}: not a source checkout (run this from an editable install of the repository)")
    return root


def merge_env(text: str, values: dict[str, str]) -> str:
    """Update ``KEY=value`` lines in place, append new keys in sorted order, keep everything else."""
    lines = text.splitlines()
    seen = set()
    for i, line in enumerate(lines):
        key = line.split("=", 1)[0].strip()
        if "=" in line and not line.lstrip().startswith("#") and key in values:
            lines[i] = f"{key}={values[key]}"
            seen.add(key)
    lines += [f"{k}={values[k]}" for k in sorted(values) if k not in seen]
    return "\n".join(lines) + "\n" if lines else ""
