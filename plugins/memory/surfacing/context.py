"""Whose memory a hook call may see: the account, scopes and agent of the Claude Code config dir.

Claude Code hands its hooks the session's environment plus the config dir's ``settings.json``
``env`` block; the installer and the channels runner put ``ACCOUNT_ID`` (and, for narrowed
sessions, ``ALLOWED_SCOPES`` / ``AGENT_SLUG`` / ``PLUGHOST_SESSION_ROLE``) there. The process
environment wins; the config dir's settings fill what it lacks, so a hook spawned with a bare
environment still knows its account. A session whose role is anything but ``admin`` sees
``public`` memory only, whatever else it asks for. Stdlib only: the hook imports it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

_ACCOUNT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""``host.accounts.ACCOUNT_ID``, restated: this module is stdlib only (the warm hook path runs without
the host on ``sys.path``); a test pins the two patterns equal."""
PUBLIC_SCOPES = ("public",)


@dataclass(frozen=True)
class Context:
    """The guard inputs of one surfacing call. ``scopes`` None = admin (no scope filter)."""

    account_id: str
    scopes: tuple[str, ...] | None
    agent: str | None
    role: str | None
    home: str
    runner_session: str | None = None  # the channels runner's PLUGHOST_SESSION_ID (its admin turns)

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


def _csv(value: str | None) -> list[str] | None:
    if value is None or not value.strip():
        return None
    return [p.strip() for p in value.split(",") if p.strip()]


def effective_env(env: Mapping[str, str]) -> dict[str, str]:
    """The config dir's ``settings.json`` env under the process env (what Claude Code gives a hook)."""
    merged = settings_env(config_dir(env))
    merged.update({k: v for k, v in env.items() if v.strip() or k not in merged})
    return merged


def resolve(env: Mapping[str, str]) -> Context | None:
    """The call's context, or None when no account can be named (the hook then surfaces nothing).

    ``env`` is the process environment; the config dir's settings fill what it lacks.
    """
    return from_merged(effective_env(env))


def from_merged(merged: Mapping[str, str]) -> Context | None:
    """:func:`resolve` of an environment already merged with the config dir's settings (what the
    hook's first stage sends ``plughost serve``)."""
    account = merged.get("ACCOUNT_ID", "").strip()
    if not _ACCOUNT.match(account):
        return None
    role = merged.get("PLUGHOST_SESSION_ROLE", "").strip().lower() or None
    scopes = _csv(merged.get("ALLOWED_SCOPES"))
    if role is not None and role != "admin":
        scopes = [s for s in (scopes or PUBLIC_SCOPES) if s in PUBLIC_SCOPES]
    home = merged.get("PLUGHOST_HOME", "").strip()
    home = os.path.expanduser(home) if home else os.path.join(os.path.expanduser("~"), ".plughost")
    agent = merged.get("AGENT_SLUG", "").strip() or None
    return Context(account, tuple(scopes) if scopes is not None else None, agent, role, home,
                   merged.get("PLUGHOST_SESSION_ID", "").strip() or None)
