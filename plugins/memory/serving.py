"""Where the memory plugin's background threads may run: one rule for the embed queue and the standing audits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plughost import log
from plughost.api import serving

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host


def serving_account(host: Host, tag: str) -> str | None:
    """The account a background thread works for: only under ``plughost serve`` (one-shot commands
    and stdio MCP servers have no serving runtime), for an account, in an unnarrowed (admin) process;
    None otherwise (a narrowed process is logged ``[<tag>] op=off reason=narrowed-process``)."""
    if serving.RUNTIME not in host.state:
        return None
    principal = host.principal
    if not principal.account:
        return None
    if not principal.is_admin:
        log(tag, "op=off", reason="narrowed-process")
        return None
    return principal.account
