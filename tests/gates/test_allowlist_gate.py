"""mcp-allowlist-coverage: an admin-allowlisted tool whose plugin has no `mcp` block refuses boot."""

from __future__ import annotations

from gates_support import assert_all_ran


def test_admin_tool_in_plugin_without_mcp_block_refuses_boot(install):
    install.plugin("notes", ["note-add", "note-find"], admin=["note-find"])
    install.plugin("loose", ["peek", "poke"], admin=["peek", "poke"], server=False)
    host = install.host()
    admin = len(host.surface.admin)  # the built-in plugins' admin tools count too
    report = install.boot(host=host)
    assert report.outcome("mcp-allowlist-coverage").lines == [
        "boot-failed reason=mcp-allowlist-without-server plugin=loose tool=mcp__plugin_loose_loose__peek",
        "boot-failed reason=mcp-allowlist-without-server plugin=loose tool=mcp__plugin_loose_loose__poke",
        f"mcp-config-allowlist-coverage admin-tools={admin} admin-registered={admin - 2}",
    ]
    assert report.exit_code == 1
    assert_all_ran(report)


def test_coverage_line_every_boot(install):
    install.plugin("notes", ["note-add", "note-find"], admin=["note-find", "note-add"])
    host = install.host()
    admin = len(host.surface.admin)
    assert admin >= 2
    report = install.boot(host=host)
    assert report.outcome("mcp-allowlist-coverage").lines == [
        f"mcp-config-allowlist-coverage admin-tools={admin} admin-registered={admin}",
        f"startup-self-test mcp-allowlist-coverage=ok inspected={admin}",
    ]
    assert report.exit_code == 0


def test_non_admin_tools_without_server_are_not_this_gates_business(install):
    install.plugin("quiet", ["hum"], server=False)
    report = install.boot()
    assert report.outcome("mcp-allowlist-coverage").status == "ok"
