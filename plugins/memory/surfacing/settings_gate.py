"""The ``surface-settings`` boot gate: an out-of-range surfacing setting is reported at ``boot --check``.

At prompt time a bad ``PLUGHOST_SURFACE_BUDGET`` / ``_LIMIT`` only logs a ``bad-setting`` line and
the default applies (surfacing must never block a prompt), so the gate is where a person sees it
before the day starts. It reads the process env and, with ``--config-dir``, the Claude Code config
dir's ``settings.json`` env (where the hook reads its own). Informational: never fatal.
"""

from __future__ import annotations

from typing import Any

from plughost import Gate, GateContext, GateResult
from plughost.api.util import format_line
from plughost.plugins.memory.surfacing import context
from plughost.plugins.memory.surfacing.limits import SETTINGS, expected_range, setting

NAME = "surface-settings"


def check_surface_settings(ctx: GateContext) -> GateResult:
    sources: list[tuple[str, dict[str, Any]]] = [("env", dict(ctx.env))]
    config_dir = ctx.extras.get("config_dir")
    if config_dir:
        sources.append((f"{config_dir}/settings.json", context.settings_env(str(config_dir))))
    result = GateResult(status="ok")
    for where, env in sources:
        for which in SETTINGS:
            raw = which.raw({k: str(v) for k, v in env.items()})
            if raw is None:
                continue
            result.inspected += 1
            _, problem = setting({which.name: raw}, which)
            if problem is not None:
                fields = {"reason": "bad-setting", "name": which.name, "expected": expected_range(which),
                          "got": raw[:40], "using": which.default, "where": where}
                result.lines.append(format_line("surface", "op=error", **fields))
                result.defects.append(fields)
    if result.defects:
        result.status = "fail"
    else:
        result.lines.append(format_line(None, "startup-self-test", **{NAME: "ok"}, inspected=result.inspected))
    return result


def surface_settings_gate() -> Gate:
    return Gate(NAME, check=check_surface_settings, fatal=False, order=90)
