"""Hook implementations of the channels plugin.

Kept cheap to import: every heavy module (starlette, httpx, the pipeline) is imported inside
the hook that needs it.
"""

from __future__ import annotations

from typing import Any

from host.hookspecs import hookimpl

# --- channels: adapters, runner, CLI -------------------------------------------------------


@hookimpl
def plughost_cli_commands(host: Any) -> list[Any]:
    from plugins.channels.commands import cli_commands

    return cli_commands()


@hookimpl
def plughost_agent_runner(host: Any) -> Any:
    from plugins.channels.runner import CommandRunner

    return CommandRunner.from_env(host.env)


@hookimpl
def plughost_channel_adapters(host: Any) -> list[Any]:
    from plugins.channels import telegram, webchat, whatsapp

    return [webchat.adapter(host), telegram.adapter(host), whatsapp.adapter(host)]


@hookimpl
def plughost_shutdown(host: Any) -> None:
    from plugins.channels.server import close

    close(host)


# --- end channels ----------------------------------------------------------------------------
