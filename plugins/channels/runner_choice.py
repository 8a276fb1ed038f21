"""Which runner answers a turn: the ``plughost_agent_runner`` hook, else the built-in ``PLUGHOST_AGENT``
names, cached on the host and warmed off the loop. The runners themselves import :mod:`runner`'s
shared pieces; this module is the one that knows all of them.
"""

from __future__ import annotations

import threading
import time

from plughost import AgentRunner, Host, StateKey, UserError, log
from plughost.api import hooks
from plughost.plugins.channels.runner import BrokenRunner, CommandRunner, agent_choice


def builtin_runner(host: Host) -> AgentRunner:
    """The built-in runner ``PLUGHOST_AGENT`` names; a configuration error becomes a :class:`BrokenRunner`."""
    try:
        choice = agent_choice(host.env)
        if choice == "memory":
            from plughost.plugins.channels.memory_runner import MemoryRunner

            return MemoryRunner(host)
        if choice == "claude":
            from plughost.plugins.channels.claude_runner import ClaudeRunner

            return ClaudeRunner.from_host(host)
        return CommandRunner.from_env(host.env)
    except UserError as exc:
        return BrokenRunner(str(exc))


def runner_name(runner: AgentRunner) -> str:
    return str(getattr(runner, "name", type(runner).__name__))


RUNNER: StateKey[AgentRunner] = StateKey("channels.runner")


def get_runner(host: Host) -> AgentRunner:
    """The runner from the ``plughost_agent_runner`` hook (cached on the host)."""
    runner = host.state.get(RUNNER)
    if runner is None:
        runner = host.state.set(RUNNER, host.first(hooks.AGENT_RUNNER) or builtin_runner(host))
        extra = {"reason": runner.reason} if isinstance(runner, BrokenRunner) else {}
        log("channels", "op=runner", agent=runner_name(runner), **extra)
    return runner


def warm_in_background(host: Host) -> None:
    """Build the runner now and let it load what its first turn needs (a model, a narrowed host) off the loop."""
    if not host.principal.account:
        return  # nothing to answer for

    def warm() -> None:
        t0 = time.perf_counter()
        try:
            runner = get_runner(host)
            if hasattr(runner, "warm"):
                runner.warm()
            log("channels", "op=runner-ready", agent=runner_name(runner), ms=round((time.perf_counter() - t0) * 1000))
        except Exception as exc:  # the first turn will fail the same way, politely and logged
            log("channels", "op=runner-warm-failed", reason=str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)

    threading.Thread(target=warm, name="channels-runner-warm", daemon=True).start()
