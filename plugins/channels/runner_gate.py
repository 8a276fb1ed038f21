"""The ``agent-runner`` boot gate: the runner ``PLUGHOST_AGENT`` names can be built.

Without it a misspelt ``PLUGHOST_AGENT`` (or timeout) booted a server whose every chat turn
failed, the reason only in the log. A configuration error refuses boot; a runner whose
executable is not on PATH (``claude``, the ``command``'s program) is said loudly but boots,
since it may be installed before the first turn.

For ``claude`` it also checks the config dir the runner will run in (the same
:func:`plughost.runtime.install_record.config_dir_source` the runner and the registration gates use): a
folder where nothing is installed means an admin's turn has none of plughost's tools, so it is
said loudly (``WARN``) with where that folder came from.

When another plugin answers ``plughost_agent_runner`` (a brand's own runner), the finding names
that runner and the plugin whose runner is used (``agent=<its name> plugin=<plugin>``), and the
other plugins providing one, the built-in among them (``unused=..,channels``); the built-in's
program and config dir are then not looked at, since it never runs.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping

from plughost import Gate, GateContext, GateResult, Host, UserError
from plughost.api import hooks
from plughost.api.payload import Registration, config_dir_source
from plughost.api.util import format_line
from plughost.plugins.channels.settings import AGENT, AGENT_COMMAND, AGENT_TIMEOUT, CLAUDE_BIN

NAME = "agent-runner"


def _executable(env: Mapping[str, str], choice: str) -> tuple[str, str] | None:
    """(variable, program) the runner spawns per turn, or None for the in-process memory runner."""
    if choice == "claude":
        return CLAUDE_BIN.name, CLAUDE_BIN.read(env)
    if choice == "command":
        raw = AGENT_COMMAND.read(env) or ""
        try:
            argv = shlex.split(raw)
        except ValueError as exc:
            raise UserError(f"PLUGHOST_AGENT_COMMAND: {exc} (got {raw!r})") from None
        if not argv:
            raise UserError("PLUGHOST_AGENT_COMMAND: expected a command line for PLUGHOST_AGENT=command")
        return AGENT_COMMAND.name, argv[0]
    return None


def agent_choice(env: Mapping[str, str]) -> str:
    """The runner's choice (:func:`plughost.plugins.channels.runner.agent_choice`), without importing
    the runner (asyncio and the turn machinery) at boot."""
    chosen = AGENT.read(env)
    if chosen is None:
        return "command" if AGENT_COMMAND.is_set(env) else "memory"
    return chosen


HOOK = hooks.AGENT_RUNNER.name


def configured_runner(host: Host) -> tuple[str, str, list[str]] | None:
    """(runner name, the plugin whose runner is used, the other plugins answering the hook) when a plugin
    other than this one answers ``plughost_agent_runner`` (it is asked first), else None: the built-in
    ``PLUGHOST_AGENT`` names is the runner."""
    others = [r for r in reversed(host.loaded()) if r.name != "channels"  # pluggy's order: the last registered first
              and getattr(getattr(r.module, HOOK, None), "plughost_impl", None) is not None]
    if not others:
        return None
    runner = host.first(hooks.AGENT_RUNNER)  # theirs first; the built-in when they answer None
    if runner is None or type(runner).__module__.startswith("plughost.plugins.channels."):
        return None
    used = others[0].name
    if len(others) > 1:  # which one answered: asked again in the same order, the first to answer
        used = next((r.name for r in others if _answers(r.module, host)), used)
    return (str(getattr(runner, "name", type(runner).__name__)), used,
            [r.name for r in others if r.name != used] + ["channels"])


def _answers(plugin: object, host: Host) -> bool:
    try:
        return getattr(plugin, HOOK)(host=host) is not None
    except Exception:  # noqa: BLE001 - its failure is the hook call's to report; it did not answer
        return False


def check_agent_runner(ctx: GateContext) -> GateResult:
    env = ctx.env
    try:
        choice = agent_choice(env)
        AGENT_TIMEOUT.read(env)
        spawned = _executable(env, choice)
    except UserError as exc:
        line = format_line("channels", "agent-runner", "FATAL", reason=str(exc))
        return GateResult("fail", 1, [line], [{"reason": "agent-config", "detail": str(exc)}])
    other = configured_runner(ctx.host)
    if other is not None:
        return GateResult("ok", 1, [format_line(None, "startup-self-test", **{NAME: "ok"}, inspected=1,
                                                agent=other[0], plugin=other[1], unused=",".join(other[2]))])
    extra: dict[str, str] = {}
    warnings: list[tuple[str, dict[str, str]]] = []  # (line, defect)
    if choice == "claude":
        try:
            warnings += _claude_config(ctx, extra)
        except UserError as exc:  # an unreadable install record
            line = format_line("channels", "agent-runner", "FATAL", reason=str(exc))
            return GateResult("fail", 1, [line], [{"reason": "agent-config", "detail": str(exc)}])
    if spawned is not None:
        var, program = spawned
        if shutil.which(program, path=env.get("PATH")) is None:
            detail = f"{var}: {program!r} is not an executable on PATH; every turn will get the polite fallback"
            line = format_line("channels", "agent-runner", "WARN", agent=choice, reason=detail)
            warnings.append((line, {"reason": "agent-missing", "detail": detail}))
    if warnings:
        return GateResult("warn", 1, [w[0] for w in warnings], [w[1] for w in warnings])
    return GateResult("ok", 1, [format_line(None, "startup-self-test", **{NAME: "ok"}, inspected=1, agent=choice,
                                            **extra)])


def _claude_config(ctx: GateContext, extra: dict[str, str]) -> list[tuple[str, dict[str, str]]]:
    """The claude runner's config dir into ``extra``; a warning when no plugin is installed there."""
    folder, source = config_dir_source(ctx.env, ctx.extras.get("config_dir"))
    extra.update({"config-dir": str(folder), "source": source})
    reg = Registration.load(folder)
    if any(on is True and reg.user_row(key) is not None for key, on in reg.enabled.items()):
        return []
    detail = (f"the claude runner runs in {folder} (from {source}) where no plugin is installed; an admin's "
              f"turn has no plughost tools: plughost install PAYLOAD --config-dir {folder}")
    line = format_line("channels", "agent-runner", "WARN", agent="claude", reason="no-install",
                       **{"config-dir": str(folder), "source": source})
    return [(line, {"reason": "agent-no-install", "detail": detail})]


def agent_runner_gate() -> Gate:
    return Gate(NAME, check=check_agent_runner, fatal=True, order=85)
