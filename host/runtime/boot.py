"""The gate runner behind `plughost boot` (docs/gates.md).

Gates are plugins: every gate comes from the `plughost_boot_gates` hook. Each runs on its own
in `order` (then name); one raising is reported as that gate's failure, by name, and the rest
still run. Every line is printed (stderr and `logs/server.log`); the exit code is 1 when a
fatal gate failed or raised, else 0. Non-fatal gates (the registration drift gates, the
admin-identity check) say their defects loudly but keep the install usable for repair.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost.ports.principal import set_account
from plughost.runtime import hooktable, state
from plughost.runtime.accounts import check_id
from plughost.runtime.install_brand import install_brand, require
from plughost.runtime.types import GateContext, GateResult
from plughost.util import settings
from plughost.util.errors import PlughostError
from plughost.util.log import emit, format_line

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.host import Host
    from plughost.runtime.types import Gate


@dataclass
class GateOutcome:
    """One gate's run: what it returned (or how it raised), and how long it took."""

    gate: str
    plugin: str
    fatal: bool
    status: str  # ok | fail | warn | error
    inspected: int = 0
    lines: list[str] = field(default_factory=list)
    defects: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    ms: float = 0.0

    @property
    def refuses_boot(self) -> bool:
        return self.fatal and self.status in ("fail", "error")

    def to_json(self) -> dict[str, Any]:
        return {"gate": self.gate, "plugin": self.plugin, "fatal": self.fatal, "status": self.status,
                "inspected": self.inspected, "defects": self.defects, "lines": self.lines,
                "ms": round(self.ms, 2)}


@dataclass
class BootReport:
    outcomes: list[GateOutcome] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 1 if any(o.refuses_boot for o in self.outcomes) else 0

    def outcome(self, gate: str) -> GateOutcome:
        return next(o for o in self.outcomes if o.gate == gate)

    @property
    def lines(self) -> list[str]:
        return [line for o in self.outcomes for line in o.lines]

    def to_json(self) -> dict[str, Any]:
        return {"exit": self.exit_code, "gates": [o.to_json() for o in self.outcomes],
                "timings_ms": {k: round(v, 2) for k, v in self.timings.items()}}


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


def boot_context_extras(*, account: str | None = None, config_dir: Path | str | None = None,
                        brand: str | Path | None = None, env: Mapping[str, str] | None = None,
                        payload_root: Path | None = None) -> dict[str, Any]:
    """What the gates read besides the host: the account, the Claude Code config dir, the brand
    (its name for marketplace names, its `plugins.excluded` for the specialist strip-list, and the
    resolved brand itself for the `install-brand` gate). ``brand`` is `--brand` (one that is not
    found is a UserError naming it); without it, the install's brand
    (:func:`plughost.runtime.install_brand.install_brand`), whose problems the gate reports."""
    env = env or {}
    plugins_dir = payload_root / "plugins" if payload_root is not None else None
    found = require(str(brand), env, plugins_dir) if brand else install_brand(env, plugins_dir)
    return {"account": account, "config_dir": config_dir, "brand": brand, "brand_name": found.name,
            "excluded": found.excluded, "install_brand": found}


def command_env(env: Mapping[str, str], account: str | None, brand: str | None = None,
                config_dir: Path | str | None = None) -> dict[str, str]:
    """The environment a command boots with: the loaded configuration, `--account` as `ACCOUNT_ID`,
    `--brand` as `PLUGHOST_BRAND` (so the host leaves out what that brand excludes), `--config-dir`
    as `PLUGHOST_CLAUDE_CONFIG_DIR` (so the claude runner runs in the folder the gates check)."""
    out = dict(env)
    if account:
        set_account(out, check_id(account, "--account"))
    if brand:
        out[settings.BRAND.name] = brand
    if config_dir:
        from plughost.runtime.install_record import OVERRIDE_KEY, config_dir_source

        out[OVERRIDE_KEY] = str(config_dir_source(out, config_dir)[0])
    return out


def check_install(host: Host, env: Mapping[str, str], *, account: str | None = None,
                  config_dir: Path | str | None = None, brand: str | None = None, start: bool = False,
                  echo: Callable[[str], Any] | None = emit) -> BootReport:
    """The gates exactly as `boot` and `serve` run them (same brand, payload, config dir, lines).

    `start` also runs the startup hooks when no fatal gate refused (what `boot` without
    `--check` does; `serve` leaves that to its app's lifespan).
    """
    payload_root = Path(host.plugins_dir).parent if host.plugins_dir is not None else None
    extras = boot_context_extras(account=account, config_dir=config_dir, brand=brand, env=env,
                                 payload_root=payload_root)
    runner = boot if start else run_gates
    return runner(host, extras=extras, env=env, echo=echo)


def collect_gates(host: Host) -> tuple[list[tuple[str, Gate]], list[GateOutcome]]:
    """Gates from every plugin, sorted by (order, name); a plugin whose hook raised becomes an error outcome."""
    try:
        contributions = host.collect(hooktable.BOOT_GATES)
    except PlughostError as exc:  # two plugins claiming one gate name
        return [], [GateOutcome("plughost_boot_gates", "-", True, "error",
                                lines=[format_line(None, "boot-failed", reason="gate-collect-error",
                                                   error=str(exc))],
                                defects=[{"reason": "gate-collect-error", "detail": str(exc)}])]
    errors = []
    for plugin, _hook, reason in contributions.errors:
        errors.append(GateOutcome(f"{plugin}:plughost_boot_gates", plugin, True, "error",
                                  lines=[format_line(None, "boot-failed", reason="gate-hook-error",
                                                     plugin=plugin, error=reason)],
                                  defects=[{"reason": "gate-hook-error", "detail": reason}]))
    gates = sorted(((c.plugin, c.item) for c in contributions), key=lambda pg: (pg[1].order, pg[1].name))
    return gates, errors


def run_gate(host: Host, plugin: str, gate: Gate, ctx: Any) -> GateOutcome:
    """Run one gate in isolation: an exception becomes that gate's `error` outcome."""
    t0 = time.perf_counter()
    try:
        result = gate.check(ctx)
        if not isinstance(result, GateResult):
            raise TypeError(f"returned {type(result).__name__}, expected GateResult")
    except Exception as exc:
        reason = _one_line(exc)
        line = format_line(None, "startup-self-test", **{gate.name: "error"}, plugin=plugin, error=reason)
        return GateOutcome(gate.name, plugin, gate.fatal, "error", lines=[line],
                           defects=[{"reason": "gate-raised", "detail": reason}],
                           ms=(time.perf_counter() - t0) * 1000)
    status = result.status
    if status in ("fail", "error") and not gate.fatal:
        status = "warn"
    return GateOutcome(gate.name, plugin, gate.fatal, status, result.inspected, list(result.lines),
                       list(result.defects), dict(result.data), (time.perf_counter() - t0) * 1000)


def run_gates(host: Host, *, extras: dict[str, Any] | None = None, env: Mapping[str, str] | None = None,
              echo: Callable[[str], Any] | None = emit) -> BootReport:
    """Collect and run every gate; echo each line as its gate finishes; return the report."""
    report = BootReport()
    t0 = time.perf_counter()
    host.load()
    t1 = time.perf_counter()
    _ = host.surface
    t2 = time.perf_counter()
    gates, errors = collect_gates(host)
    ctx = GateContext(host=host, env=dict(env if env is not None else host.env), extras=dict(extras or {}))
    for outcome in errors:
        report.outcomes.append(outcome)
        for line in outcome.lines:
            echo and echo(line)
    for plugin, gate in gates:
        outcome = run_gate(host, plugin, gate, ctx)
        report.outcomes.append(outcome)
        for line in outcome.lines:
            echo and echo(line)
    t3 = time.perf_counter()
    report.timings = {"load": (t1 - t0) * 1000, "surface": (t2 - t1) * 1000, "gates": (t3 - t2) * 1000}
    host.state.set(state.BOOT_REPORT, report)
    counts = {s: sum(o.status == s for o in report.outcomes) for s in ("ok", "fail", "warn", "error")}
    summary = format_line("boot", "op=gates", gates=len(report.outcomes), ok=counts["ok"], failed=counts["fail"],
                          warned=counts["warn"], errored=counts["error"], exit=report.exit_code,
                          ms=f"{(t3 - t0) * 1000:.1f}")
    echo and echo(summary)
    return report


def boot(host: Host, *, extras: dict[str, Any] | None = None, env: Mapping[str, str] | None = None,
         echo: Callable[[str], Any] | None = emit) -> BootReport:
    """Gates, then (only when none refused) the plugins' `plughost_startup` hooks: what `serve` runs first."""
    report = run_gates(host, extras=extras, env=env, echo=echo)
    if report.exit_code == 0:
        host.call_each(hooktable.STARTUP)
        echo and echo(format_line("boot", "op=started", plugins=len(host.loaded())))
    return report
