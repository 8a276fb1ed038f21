"""Whose memory a hook call may see: the account, scopes and agent of the Claude Code config dir.

Claude Code hands its hooks the session's environment plus the config dir's ``settings.json``
``env`` block; the installer and the channels runner put ``ACCOUNT_ID`` (and, for narrowed
sessions, ``ALLOWED_SCOPES`` / ``AGENT_SLUG`` / ``PLUGHOST_SESSION_ROLE``) there. The process
environment wins, except that it can never widen the config dir's narrowing (a public config
dir never surfaces admin memory); the config dir's settings fill what it lacks, so a hook spawned with a bare
environment still knows its account. A session whose role is anything but ``admin`` sees
``public`` memory only, whatever else it asks for; a runner session (``PLUGHOST_SESSION_ID``)
that names no role is such a session (the narrower reading, as ``host.graph.Principal``).
``ALLOWED_SCOPES`` is read by the host's own parser (``host.config.csv_list``: empty means
unscoped nodes only, never admin); besides it only the standard library (the hook imports this).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass

try:
    from host.config import csv_list  # the host's one parser: "" means unscoped nodes only, never admin
except ImportError:  # client.py run as a script (python -S -I): the checkout, else the install's site-packages
    _ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    if os.path.isdir(os.path.join(_ROOT, "host")):
        sys.path.insert(0, _ROOT)
    else:  # an installed copy (Claude Code's plugin cache): the host is in the interpreter's site-packages
        import site

        site.main()
    from host.config import csv_list

_ACCOUNT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""``host.accounts.ACCOUNT_ID``, restated (``host.accounts`` imports more than the hook process
should pay for); a test pins the two patterns equal."""
PUBLIC_SCOPES = ("public",)
SET_WHEN_EMPTY = frozenset({"ALLOWED_SCOPES"})
"""Variables whose empty value means something (``ALLOWED_SCOPES=``: unscoped nodes only), so an
empty process value still wins over the config dir's (it can only narrow: unscoped nodes are
visible under every scope list)."""


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


def narrowest(config: Mapping[str, str], env: Mapping[str, str], merged: dict[str, str]) -> dict[str, str]:
    """The config dir's narrowing holds even under a process env that asks for more: scopes set
    in both are their intersection, a non-admin role in either is the role, the config dir's
    agent is the agent (``hook.narrowest`` restates this without imports; a test pins the two)."""
    if "ALLOWED_SCOPES" in config and "ALLOWED_SCOPES" in env:
        mine = {s.strip() for s in env["ALLOWED_SCOPES"].split(",") if s.strip()}
        merged["ALLOWED_SCOPES"] = ",".join(s.strip() for s in config["ALLOWED_SCOPES"].split(",")
                                            if s.strip() and s.strip() in mine)
    roles = [r.strip().lower() for r in (config.get("PLUGHOST_SESSION_ROLE", ""), env.get("PLUGHOST_SESSION_ROLE", ""))]
    narrowed = [r for r in roles if r and r != "admin"]
    if narrowed:
        merged["PLUGHOST_SESSION_ROLE"] = narrowed[0]
    if config.get("AGENT_SLUG", "").strip():
        merged["AGENT_SLUG"] = config["AGENT_SLUG"]
    return merged


def effective_env(env: Mapping[str, str]) -> dict[str, str]:
    """The config dir's ``settings.json`` env under the process env (what Claude Code gives a
    hook), the config dir's narrowing kept (:func:`narrowest`)."""
    config = settings_env(config_dir(env))
    merged = dict(config)
    merged.update({k: v for k, v in env.items() if v.strip() or k not in merged or k in SET_WHEN_EMPTY})
    return narrowest(config, env, merged)


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
    runner = merged.get("PLUGHOST_SESSION_ID", "").strip() or None
    if role is None and runner:  # a runner's session without a role confines (host.graph.Principal)
        role = "unknown"
    scopes = csv_list(merged.get("ALLOWED_SCOPES"))
    if role is not None and role != "admin":
        scopes = [s for s in (PUBLIC_SCOPES if scopes is None else scopes) if s in PUBLIC_SCOPES]
    home = merged.get("PLUGHOST_HOME", "").strip()
    home = os.path.expanduser(home) if home else os.path.join(os.path.expanduser("~"), ".plughost")
    agent = merged.get("AGENT_SLUG", "").strip() or None
    return Context(account, tuple(scopes) if scopes is not None else None, agent, role, home, runner,
                   merged.get("PLUGHOST_SURFACE_BUDGET", "").strip() or None,
                   merged.get("PLUGHOST_SURFACE_LIMIT", "").strip() or None)
