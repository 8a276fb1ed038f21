"""Hook implementations of the graph plugin."""

from __future__ import annotations

from host.hookspecs import hookimpl  # noqa: F401

__all__: list[str] = []


@hookimpl
def plughost_boot_gates(host):  # type: ignore[no-untyped-def]
    """`account-id-env`: the gate logic lives in host.accounts (shared with other entry paths)."""
    from host.accounts import account_id_env_gate

    return [account_id_env_gate()]
