"""The gate runner: ordering, isolation of a raising gate or hook, exit codes, the JSON report."""

from __future__ import annotations

from gates_support import ALL_GATES, assert_all_ran

from plughost.runtime import hooktable
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import Gate, GateResult


def test_clean_fixture_install_every_gate_ok(install):
    install.plugin("notes", ["note-add", "note-find"], admin=["note-find"])
    install.install_tool_plugin("notes")
    install.account("acme", enabled=["notes"])
    host = install.host()
    report = install.boot(host=host)
    assert report.exit_code == 0
    assert_all_ran(report)
    for gate in ALL_GATES:
        ok = [line for line in report.outcome(gate).lines if line.startswith(f"startup-self-test {gate}=ok ")]
        assert ok, (gate, report.outcome(gate).lines)
    builtins = len(install.builtin_tool_plugins(host))
    assert f"startup-self-test tool-registration=ok inspected={1 + builtins}" in report.lines
    admin = len(host.surface.admin)
    assert f"mcp-config-allowlist-coverage admin-tools={admin} admin-registered={admin}" in report.lines


def test_gates_run_in_order_then_name(install):
    report = install.boot()
    names = [o.gate for o in report.outcomes]
    assert names.index("account-id-env") < names.index("mcp-allowlist-coverage") < names.index(
        "specialist-tool-drift") < names.index("skill-registration") < names.index("tool-registration") < names.index(
        "admin-identity-binding")


class _Raising:
    @hookimpl
    def plughost_boot_gates(self, host):
        def explode(ctx):
            raise RuntimeError("disk on fire")

        def fine(ctx):
            return GateResult(status="ok", inspected=3, lines=["startup-self-test fixture-fine=ok inspected=3"])

        return [Gate("fixture-explodes", check=explode, fatal=True, order=1),
                Gate("fixture-fine", check=fine, fatal=True, order=2)]


def test_raising_gate_is_that_gates_failure_and_others_still_run(install):
    host = install.host()
    with host.temporary_plugin(_Raising(), "fixture-raising"):
        report = install.boot(host=host)
    assert report.exit_code == 1
    bad = report.outcome("fixture-explodes")
    assert bad.status == "error"
    assert bad.lines == ['startup-self-test fixture-explodes=error plugin=fixture-raising '
                         'error="RuntimeError: disk on fire"']
    assert report.outcome("fixture-fine").status == "ok"
    assert_all_ran(report, {"fixture-explodes", "fixture-fine"})


class _NonFatalRaising:
    @hookimpl
    def plughost_boot_gates(self, host):
        def explode(ctx):
            raise ValueError("nope")

        return [Gate("fixture-soft", check=explode, fatal=False)]


def test_non_fatal_gate_raising_does_not_refuse_boot(install):
    host = install.host()
    with host.temporary_plugin(_NonFatalRaising(), "fixture-soft-plugin"):
        report = install.boot(host=host)
    assert report.outcome("fixture-soft").status == "error"
    assert report.exit_code == 0
    assert_all_ran(report, {"fixture-soft"})


class _HookRaises:
    @hookimpl
    def plughost_boot_gates(self, host):
        raise KeyError("gates table")


def test_plugin_whose_gate_hook_raises_is_reported_by_name(install):
    host = install.host()
    with host.temporary_plugin(_HookRaises(), "fixture-hook"):
        report = install.boot(host=host)
    assert report.exit_code == 1
    out = report.outcome("fixture-hook:plughost_boot_gates")
    assert out.lines == ["boot-failed reason=gate-hook-error plugin=fixture-hook error=\"KeyError: 'gates table'\""]
    assert_all_ran(report)


class _Duplicate:
    @hookimpl
    def plughost_boot_gates(self, host):
        return [Gate("skill-registration", check=lambda ctx: GateResult(status="ok"))]


def test_two_plugins_claiming_one_gate_name_refuse_boot_naming_both(install):
    host = install.host()
    with host.temporary_plugin(_Duplicate(), "fixture-dup"):
        report = install.boot(host=host)
    assert report.exit_code == 1
    line = report.lines[0]
    assert line.startswith("boot-failed reason=gate-collect-error")
    assert "'skill-registration'" in line and "selftest" in line and "fixture-dup" in line


def test_hook_plughost_boot_gates(install):
    """The hook: every built-in gate is contributed by the plugin that owns its data."""
    host = install.host()

    owners = {c.item.name: c.plugin for c in host.collect(hooktable.BOOT_GATES)}
    assert owners["account-id-env"] in ("graph", "account-env-stand-in")  # the graph plugin contributes it
    assert owners["admin-identity-binding"] == "channels"
    for gate in ("mcp-allowlist-coverage", "specialist-tool-drift", "skill-registration", "tool-registration"):
        assert owners[gate] == "selftest"


def test_disabling_the_selftest_plugin_removes_its_gates(install):
    report = install.boot(PLUGHOST_DISABLE_PLUGINS="selftest")
    names = {o.gate for o in report.outcomes}
    assert "specialist-tool-drift" not in names and "account-id-env" in names


def test_json_report_shape(install):
    report = install.boot().to_json()
    assert report["exit"] == 0
    gate = next(g for g in report["gates"] if g["gate"] == "account-id-env")
    assert set(gate) >= {"gate", "status", "inspected", "defects", "lines", "fatal", "plugin"}
    assert gate["status"] == "ok" and gate["inspected"] == 1 and gate["defects"] == []
