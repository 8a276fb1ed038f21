"""The admin plugin's ``PLUGHOST_*`` settings (published through ``plughost_settings``): its flood limits and the hostnames.

Each is read through its object: see :mod:`plughost.util.settings` and :mod:`plughost.web.throttle`.
"""

from __future__ import annotations

from typing import Any

from plughost import Setting
from plughost.api.settings import declared

RATE_PIN_ADDRESS: Setting[str] = Setting(
    "PLUGHOST_RATE_PIN_ADDRESS", "str", "12/10",
    "PIN attempts (POST /api/admin/session) from one client address, beside the server-wide PIN limit: "
    "PER_MINUTE/BURST, 0 off")
RATE_LOG_INGEST: Setting[str] = Setting(
    "PLUGHOST_RATE_LOG_INGEST", "str", "6000/500",
    "log lines (POST /api/admin/log-ingest) from one client address: PER_MINUTE/BURST, 0 off")

PUBLIC_HOSTNAME: Setting[str | None] = Setting(
    "PLUGHOST_PUBLIC_HOSTNAME", "str", None,
    "the install's public hostname (public-hostname; unset: the brand's hostnames.public)")
ADMIN_HOSTNAME: Setting[str | None] = Setting(
    "PLUGHOST_ADMIN_HOSTNAME", "str", None,
    "the install's admin hostname (admin-hostname; unset: the brand's hostnames.admin)")

SESSION_MODELS: Setting[str] = Setting(
    "PLUGHOST_SESSION_MODELS", "str", "sonnet,opus,haiku",
    "the models an owner may start an agent session with (POST /api/admin/sessions, the console's sessions page), "
    "comma-separated: the Claude Code CLI's aliases or full model names")

ALL: tuple[Setting[Any], ...] = declared(vars())
