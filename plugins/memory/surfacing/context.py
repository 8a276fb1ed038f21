"""Whose memory a hook call may see: the account, scopes and agent of the Claude Code config dir.

Claude Code hands its hooks the session's environment plus the config dir's ``settings.json``
``env`` block; the installer and the channels runner put ``ACCOUNT_ID`` (and, for narrowed
sessions, ``ALLOWED_SCOPES`` / ``AGENT_SLUG`` / ``PLUGHOST_SESSION_ROLE``) there. The process
environment wins, except that it can never widen the config dir's narrowing (a public config
dir never surfaces admin memory); the config dir's settings fill what it lacks, so a hook spawned with a bare
environment still knows its account. Who the call is, is decided by the one resolver,
:func:`plughost.api.principals.resolve` (a session whose role is anything but ``admin`` sees ``public``
memory only, whatever else it asks for); besides it only the standard library (the hook imports this).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

try:
    from plughost import Role
    from plughost.api import principals
except ImportError:  # client.py run as a script (python -S -I): plughost is in the interpreter's site-packages
    import site

    site.main()
    from plughost import Role
    from plughost.api import principals

_ACCOUNT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""``plughost.runtime.accounts.ACCOUNT_ID``, restated (``plughost.runtime.accounts`` imports more than the hook process
should pay for); a test pins the two patterns equal."""
ROLE_NAMES = {Role.ADMIN_SESSION: "admin", Role.PUBLIC: "public",
              Role.SESSION: "session"}
"""The role a hook call reports (None: the owner, or a process narrowed by scopes / agent only)."""


@dataclass(frozen=True)
class Context:
    """The guard inputs of one surfacing call. ``scopes`` None = admin (no scope filter)."""

    account_id: str
    scopes: tuple[str, ...] | None
    agent: str | None
    role: str | None
    home: str
    runner_session: str | None = None  # the channels runner's PLUGHOST_SESSION_ID (its admin turns)
    budget: str | None = None  # PLUGHOST_SURFACE_BUDGET / _LIMIT as the hook has them (serve checks them)
    limit: str | None = None

    def as_json(self) -> dict[str, object]:
        return {"accountId": self.account_id, "scopes": list(self.scopes) if self.scopes is not None else None,
                "agent": self.agent, "role": self.role}


def config_dir(env: Mapping[str, str]) -> str:
    explicit = env.get("CLAUDE_CONFIG_DIR", "").strip()
    return os.path.expanduser(explicit) if explicit else os.path.join(os.path.expanduser("~"), ".claude")


def settings_env(directory: str) -> dict[str, str]:
    """The ``env`` block of ``<config dir>/settings.json`` (empty when absent or unreadable)."""
    try:
        with open(os.path.join(directory, "settings.json"), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    block = data.get("env") if isinstance(data, dict) else None
    if not isinstance(block, dict):
        return {}
    return {k: str(v) for k, v in block.items() if isinstance(k, str) and isinstance(v, (str, int, float))}


def effective_env(env: Mapping[str, str]) -> dict[str, str]:
    """The config dir's ``settings.json`` env under the process env (what Claude Code gives a
    hook), the config dir's narrowing kept (:func:`plughost.api.principals.narrowest`)."""
    config = settings_env(config_dir(env))
    merged = dict(config)
    merged.update({k: v for k, v in env.items() if v.strip() or k not in merged or k in principals.SET_WHEN_EMPTY})
    return principals.narrowest(config, env, merged)


def resolve(env: Mapping[str, str]) -> Context | None:
    """The call's context, or None when no account can be named (the hook then surfaces nothing).

    ``env`` is the process environment; the config dir's settings fill what it lacks.
    """
    return from_merged(effective_env(env))


def from_merged(merged: Mapping[str, str]) -> Context | None:
    """:func:`resolve` of an environment already merged with the config dir's settings (what the
    hook's first stage sends ``plughost serve``): the principal as :func:`plughost.api.principals.resolve`
    decides it."""
    p = principals.resolve(merged)
    if not _ACCOUNT.match(p.account or ""):
        return None
    role = ROLE_NAMES.get(p.role)
    home = merged.get("PLUGHOST_HOME", "").strip()
    home = os.path.expanduser(home) if home else os.path.join(os.path.expanduser("~"), ".plughost")
    return Context(p.account or "", p.scopes, p.agent, role, home, p.session_key,
                   merged.get("PLUGHOST_SURFACE_BUDGET", "").strip() or None,
                   merged.get("PLUGHOST_SURFACE_LIMIT", "").strip() or None)


def account_unset_line(env: Mapping[str, str]) -> str:
    """The one stderr line of a memory hook that skips because no account can be named (the plugins were
    installed without ``plughost install``): ``[memory] skip=account-unset fix="<the one command>"``, the
    command the memory tools name too. The payload is the plugin folder's parent's parent, as for the servers."""
    merged = effective_env(env)
    root = merged.get("CLAUDE_PLUGIN_ROOT", "").strip()
    if root and not merged.get("PLUGHOST_PLUGINS_DIR", "").strip():
        merged["PLUGHOST_PLUGINS_DIR"] = os.path.dirname(os.path.normpath(root))
    try:
        from plughost.api.accounts import account_fix_command

        command = account_fix_command(merged)
    except Exception:  # noqa: BLE001 - an odd home or setting: the command's shape still says what to run
        command = "plughost install PAYLOAD --account ID"
    return '[memory] skip=account-unset fix="' + command.replace('"', "'") + '"'
