"""``public-hostname`` / ``admin-hostname``: where a visitor, or the owner and operators, should be pointed.

Each answers from the install first (``PLUGHOST_PUBLIC_HOSTNAME`` / ``PLUGHOST_ADMIN_HOSTNAME``,
the environment over ``<PLUGHOST_HOME>/.env``), else from the install's brand (``hostnames.public``
/ ``hostnames.admin`` of the install's brand: ``plughost.api.payload.install_brand``), and
says which it was. None configured is an ``isError`` naming both places. The public hostname is
public information: any principal may ask. The admin hostname leads to the owner's console, so
only an unnarrowed (admin) process gets it; a visitor's or an agent's session is refused.
Lines: ``[hostnames] op=answer which=public|admin source=install|brand`` and ``op=refused``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from plughost import Tool, UserError, log
from plughost.api.payload import install_brand
from plughost.plugins.admin.settings import ADMIN_HOSTNAME, PUBLIC_HOSTNAME

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

HOSTNAME = re.compile(r"^(?=.{1,253}(?::|$))[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
                      r"(?::[1-9][0-9]{0,4})?$")
"""A DNS name in lower case (labels of 1-63 letters, digits and inner hyphens), an optional ``:port``;
the brand schema's ``hostnames`` pattern is the same (a test pins the two)."""


def _brand(host: Host) -> tuple[str | None, dict[str, Any]]:
    """(the brand's name, its ``hostnames`` block) of this install's brand, or (None, {}).

    The brand is the install's (``plughost.api.payload.install_brand``: ``PLUGHOST_BRAND``, the
    payload's ``brand.json``, the install record); one that cannot be read is one error line naming it."""
    found = install_brand(host.env, host.plugins_dir)
    if found.problem:
        raise UserError(f"hostnames: the install's brand cannot be read: {found.problem}")
    block = found.hostnames
    for which, value in block.items():
        if not HOSTNAME.match(value):
            raise UserError(f"{found.path}: hostnames.{which}: expected a host name such as shop.example.com "
                            f"(got {value[:80]!r})")
    return found.name, block


def resolve(host: Host, which: str) -> dict[str, Any]:
    setting = PUBLIC_HOSTNAME if which == "public" else ADMIN_HOSTNAME
    value = (setting.read(host.env) or "").strip()
    if value:
        if not HOSTNAME.match(value):
            raise UserError(f"{setting.name}: expected a host name such as shop.example.com (lower case, an optional "
                            f":port), got {value[:80]!r}")
        log("hostnames", "op=answer", which=which, source="install")
        return {"hostname": value, "url": f"https://{value}", "source": "install"}
    name, block = _brand(host)
    brand_value = block.get(which)
    if isinstance(brand_value, str) and brand_value:
        log("hostnames", "op=answer", which=which, source="brand", brand=name)
        return {"hostname": brand_value, "url": f"https://{brand_value}", "source": "brand", "brand": name}
    log("hostnames", "op=none", which=which, brand=name)
    raise UserError(f"{which}-hostname: no {which} hostname is configured: set {setting.name} in the install's "
                    f".env, or hostnames.{which} in the brand file ({name or 'no brand'})")


def hostname_tools(host: Host) -> list[Tool]:
    def public_hostname() -> dict[str, Any]:
        return resolve(host, "public")

    def admin_hostname() -> dict[str, Any]:
        principal = host.principal
        if not principal.is_admin:
            log("hostnames", "op=refused", which="admin", role=principal.role.value)
            raise UserError(f"admin-hostname: admin only; this process is narrowed ({principal.role.value}); "
                            "public-hostname answers any caller")
        return resolve(host, "admin")

    return [Tool("public-hostname", public_hostname), Tool("admin-hostname", admin_hostname)]
