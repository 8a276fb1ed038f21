"""Where the install is: the one reader of the install record and of "which config dir".

``plughost install`` records the Claude Code config dir it made live as ``PLUGHOST_CONFIG_DIR``
in ``<PLUGHOST_HOME>/.env`` (:func:`plughost.payload.installer._env`). Every process that needs that folder
asks :func:`config_dir_source`: the claude runner (each turn's ``CLAUDE_CONFIG_DIR``), the
registration gates, ``plughost doctor`` and ``serve``; so a gate checks the folder the runner
uses, and the runner finds the servers the install registered. The scheduler's turns go
through the runner; the MCP servers and hooks run inside Claude Code, whose own
``CLAUDE_CONFIG_DIR`` is that folder.

Precedence, first set wins (an empty value is unset):

1. ``--config-dir`` (``serve`` and ``boot`` also pass it on as ``PLUGHOST_CLAUDE_CONFIG_DIR``,
   so the runner they start agrees with their gates);
2. ``PLUGHOST_CLAUDE_CONFIG_DIR``: an explicit override, for the runner and the gates alike;
3. ``PLUGHOST_CONFIG_DIR``: the install record (an exported value over the ``.env`` line, as in
   :func:`plughost.util.config.load_env`);
4. ``CLAUDE_CONFIG_DIR``: Claude Code's own choice, for a folder plughost did not install into;
5. ``~/.claude``: where Claude Code and a default ``plughost install`` put it.

The same ``.env`` records the install's graph store (``PLUGHOST_STORE`` and the ``NEO4J_*``
connection): ``plughost install`` writes it from the brand, and ``plughost graph migrate`` rewrites it
once the embedded store is in Neo4j (:func:`record_store`); the graph plugin's
``plugins/graph/backend.py`` reads it through :func:`plughost.util.config.load_env` in every process.

The install record wins over an exported ``CLAUDE_CONFIG_DIR``: a shell that exports one for the
user's own Claude Code must not send the runner to a folder without plughost's servers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from plughost.ports import principal
from plughost.util import config, settings
from plughost.util.errors import UserError
from plughost.util.jsonio import write_atomic

RECORD_KEY = settings.CONFIG_DIR.name
OVERRIDE_KEY = settings.CLAUDE_CONFIG_DIR.name


@dataclass(frozen=True)
class InstallRecord:
    """What ``<PLUGHOST_HOME>/.env`` says about the install (``config_dir`` None: never installed)."""

    path: Path
    config_dir: Path | None

    @classmethod
    def read(cls, env: Mapping[str, str] | None = None) -> InstallRecord:
        """The record of the data root ``env`` names; a relative recorded folder is bad input."""
        path = config.home(env) / ".env"
        raw = settings.CONFIG_DIR.raw(config.read_dotenv(path)) or ""
        if raw and not os.path.isabs(os.path.expanduser(raw)):
            raise UserError(f"{path}: {RECORD_KEY}: expected an absolute folder (got {raw!r}); "
                            "rerun plughost install --config-dir DIR")
        return cls(path, Path(os.path.normpath(os.path.expanduser(raw))) if raw else None)


def _absolute(value: str | Path, env: Mapping[str, str]) -> Path:
    text = str(value)
    if text == "~" or text.startswith("~/"):
        text = (env.get("HOME") or str(Path.home())) + text[1:]
    return Path(os.path.abspath(text))  # a runner turn's cwd is not the caller's


def config_dir_source(env: Mapping[str, str], explicit: Path | str | None = None) -> tuple[Path, str]:
    """(config dir, where it came from: flag | PLUGHOST_CLAUDE_CONFIG_DIR | install |
    CLAUDE_CONFIG_DIR | default); see the module docstring for why in this order."""
    if explicit:
        return _absolute(explicit, env), "flag"
    override, record = settings.CLAUDE_CONFIG_DIR.raw(env), settings.CONFIG_DIR.raw(env)
    if override:
        return _absolute(override, env), OVERRIDE_KEY
    if record:
        return _absolute(record, env), "install"
    recorded = InstallRecord.read(env).config_dir
    if recorded is not None:
        return recorded, "install"
    if (env.get("CLAUDE_CONFIG_DIR") or "").strip():
        return _absolute(env["CLAUDE_CONFIG_DIR"].strip(), env), "CLAUDE_CONFIG_DIR"
    return Path(env.get("HOME") or Path.home()) / ".claude", "default"


def config_dir(env: Mapping[str, str], explicit: Path | str | None = None) -> Path:
    """The config dir alone (:func:`config_dir_source`)."""
    return config_dir_source(env, explicit)[0]


def record_store(env: Mapping[str, str], values: Mapping[str, str]) -> Path:
    """Record the install's graph store in ``<PLUGHOST_HOME>/.env`` (``PLUGHOST_STORE`` and its
    connection keys, updated in place, every other line kept), atomically; returns the file."""
    path = config.home(env) / ".env"
    try:
        text, mode = path.read_text(encoding="utf-8"), path.stat().st_mode & 0o777
    except FileNotFoundError:
        text, mode = "", 0o600  # it may hold NEO4J_PASSWORD
    write_atomic(path, config.merge_env(text, dict(values)))
    os.chmod(path, mode)
    return path


def account_on_record(env: Mapping[str, str]) -> str | None:
    """The account a process of this environment runs as: ``ACCOUNT_ID`` in it, else in
    ``<PLUGHOST_HOME>/.env`` (what :func:`plughost.util.config.load_env` gives every server)."""
    return principal.resolve(config.load_env(env)).account


def account_fix_command(env: Mapping[str, str]) -> str:
    """The one command that gives an install without an account its account: the payload
    (``PLUGHOST_PLUGINS_DIR``'s parent: a server's ``${CLAUDE_PLUGIN_ROOT}/..``), the config dir
    (:func:`config_dir`) and the account (the only one on disk, else ``ID``, created first)."""
    plugins = settings.PLUGINS_DIR.read(env)
    payload = os.path.dirname(os.path.normpath(str(plugins))) if plugins else "PAYLOAD"
    home = config.home(env)
    try:
        accounts = sorted(d.name for d in (home / "accounts").iterdir() if (d / "account.json").is_file())
    except OSError:
        accounts = []
    account = accounts[0] if len(accounts) == 1 else "ID"
    command = f"plughost install {payload} --config-dir {config_dir(env)} --account {account}"
    return command if accounts else f"plughost account create ID && {command}"


def account_fix(env: Mapping[str, str]) -> str:
    """What is missing when an install has no account, and the one command that fixes it
    (:func:`account_fix_command`)."""
    return (f"this install has no account: ACCOUNT_ID is in neither Claude Code's settings.json env nor "
            f"{config.home(env) / '.env'} (the plugins were installed without plughost install); "
            f"run: {account_fix_command(env)}")
