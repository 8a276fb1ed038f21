"""Hook implementations of the channels plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plughost import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from collections import Counter
    from collections.abc import Callable

    from plughost import AgentRunner, ChannelAdapter, CliCommand, Gate, Host, Setting
    from plughost.api.hooks import OwnerSessions

# --- channels: adapters, runner, CLI (heavy modules are imported inside each hook) --------


@hookimpl
def plughost_cli_commands(host: Host) -> list[CliCommand]:
    from plughost.plugins.channels.commands import cli_commands

    return cli_commands()


@hookimpl
def plughost_agent_runner(host: Host) -> AgentRunner:
    from plughost.plugins.channels.runner_choice import builtin_runner

    return builtin_runner(host)


@hookimpl
def plughost_owner_sessions(host: Host) -> OwnerSessions:
    """The owner's agent sessions: the admin chat's conversations (plugins/channels/owner_sessions.py)."""
    from plughost.plugins.channels.owner_sessions import SessionManager

    return SessionManager(host)


@hookimpl
def plughost_channel_adapters(host: Host) -> list[ChannelAdapter]:
    from plughost.plugins.channels import admin_chat, telegram, webchat, whatsapp

    return [webchat.adapter(host), telegram.adapter(host), whatsapp.adapter(host), admin_chat.adapter(host)]


@hookimpl
def plughost_startup(host: Host) -> None:
    """`plughost serve`: resume the turns a stopped server left unanswered (docs/channels.md#resume: nothing accepted
    is lost), run the scheduler on the server's loop, warm the agent runner and screening's language
    model up in the background."""
    from plughost.plugins.channels import language, scheduler
    from plughost.plugins.channels.delivery import start_resume
    from plughost.plugins.channels.runner_choice import warm_in_background

    start_resume(host)
    scheduler.start(host)
    warm_in_background(host)
    language.warm_in_background()  # screening's language model, off the loop


@hookimpl
def plughost_shutdown(host: Host) -> None:
    import sys

    # the scheduler, a gateway and a client exist only once their modules ran: a boot check imports none
    if "plughost.plugins.channels.scheduler" in sys.modules:
        from plughost.plugins.channels import scheduler

        scheduler.stop(host)
    if "plughost.plugins.channels.pipeline" in sys.modules or "plughost.plugins.channels.outbound" in sys.modules:
        from plughost.plugins.channels.server import close  # a gateway or a client to drop: something served

        close(host)


# --- end channels ---------------------------------------------------------------------------

__all__: list[str] = []


@hookimpl
def plughost_boot_gates(host: Host) -> list[Gate]:
    from plughost.plugins.channels.admin_binding import admin_identity_binding_gate
    from plughost.plugins.channels.runner_gate import agent_runner_gate

    return [admin_identity_binding_gate(), agent_runner_gate()]


@hookimpl
def plughost_person_erased(host: Host, account_id: str, senders: list[str], holds: Callable[[str], bool],
                           dry_run: bool, tally: Counter[str]) -> None:
    """The erased person's alias, schedule entries and agent sessions (plugins/channels/erasure.py)."""
    from plughost.plugins.channels.erasure import erase

    erase(host, account_id, senders, holds, dry_run, tally)


@hookimpl
def plughost_settings() -> list[Setting]:
    from plughost.plugins.channels.settings import ALL

    return list(ALL)
