"""Hook implementations of the channels plugin."""

from __future__ import annotations

from host.hookspecs import hookimpl  # noqa: F401

__all__: list[str] = []


@hookimpl
def plughost_boot_gates(host):  # type: ignore[no-untyped-def]
    """`admin-identity-binding`: the gate logic lives in host.accounts (shared with other entry paths)."""
    from host.accounts import admin_identity_binding_gate

    return [admin_identity_binding_gate()]
