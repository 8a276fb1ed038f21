"""specialist-tool-drift: the seven classes, refusals, the brand strip-list and its exposure to spawners."""

from __future__ import annotations

from pathlib import Path

import pytest
from gates_support import assert_all_ran, write

from plughost.runtime import specialists
from plughost.runtime.state import STRIP_LIST
from plughost.util.errors import UserError

TYPO = "mcp__plugin_notes_notes__note-ad"


@pytest.fixture
def notes(install):
    install.plugin("notes", ["note-add", "note-find"])
    return install


def _drift_lines(report):
    return report.outcome("specialist-tool-drift").lines


def test_clean_specialists_pass_with_counts(notes):
    notes.agent(notes.plugins / "notes", "scribe", "Read, Grep, mcp__plugin_notes_notes__note-add")
    notes.agent(notes.plugins / "notes", "finder", ["Bash", "mcp__plugin_notes_notes__note-find"])
    host = notes.host()
    report = notes.boot(host=host)
    count = len(specialists.discover(host, ["acme"])[0])  # the built-in plugins' templates count too
    assert count >= 2
    assert _drift_lines(report) == [
        f"startup-self-test specialist-tool-drift=ok inspected={count} stripped-specialists=0"]
    assert report.exit_code == 0


def test_typo_in_served_plugin_refuses_boot(notes):
    path = notes.agent(notes.plugins / "notes", "scribe", f"Read, {TYPO}")
    report = notes.boot()
    assert _drift_lines(report) == [
        f"boot-failed reason=specialist-tool-drift specialist=scribe tool={TYPO} drift=unknown-tool-in-plugin "
        f"path={path}"]
    assert report.exit_code == 1
    assert_all_ran(report)


def test_unknown_namespace_refuses_boot(notes):
    path = notes.agent(notes.home / "accounts" / "acme" / "specialists", "roamer",
                       ["mcp__ghost__lookup", "mcp__plugin_notes_archive__list"])
    report = notes.boot()
    assert _drift_lines(report) == [
        f"boot-failed reason=specialist-tool-drift specialist=roamer tool=mcp__ghost__lookup "
        f"drift=unknown-plugin-namespace path={path}",
        f"boot-failed reason=specialist-tool-drift specialist=roamer tool=mcp__plugin_notes_archive__list "
        f"drift=unknown-plugin-namespace path={path}",
    ]
    assert report.exit_code == 1
    assert_all_ran(report)


def test_malformed_name_refuses_boot(notes):
    path = notes.agent(notes.plugins / "notes", "sloppy", "read_file, mcp__half")
    report = notes.boot()
    assert _drift_lines(report) == [
        f"boot-failed reason=specialist-tool-drift specialist=sloppy tool=read_file drift=malformed-name path={path}",
        f"boot-failed reason=specialist-tool-drift specialist=sloppy tool=mcp__half drift=malformed-name path={path}",
    ]
    assert report.exit_code == 1
    assert_all_ran(report)


def test_all_defects_listed_before_exit(notes):
    notes.agent(notes.plugins / "notes", "a", TYPO)
    notes.agent(notes.plugins / "notes", "b", "mcp__ghost__x, Nonsense")
    report = notes.boot()
    drifts = [line.split(" drift=")[1].split()[0] for line in _drift_lines(report)]
    assert drifts == ["unknown-tool-in-plugin", "unknown-plugin-namespace", "malformed-name"]


def test_brand_excluded_plugin_passes_with_strip_line_and_strip_list(notes):
    notes.set_brand("acme", excluded=["telegram"])
    notes.agent(notes.plugins / "notes", "assistant",
                "Read, mcp__plugin_notes_notes__note-add, mcp__plugin_telegram_telegram__send, mcp__telegram__*")
    report = notes.boot()
    assert _drift_lines(report)[0] == (
        "specialist-tool-strip specialist=assistant plugin=telegram "
        "tools=mcp__plugin_telegram_telegram__send,mcp__telegram__* reason=brand-excluded")
    assert len(_drift_lines(report)) == 2
    assert _drift_lines(report)[-1].startswith("startup-self-test specialist-tool-drift=ok inspected=")
    assert _drift_lines(report)[-1].endswith(" stripped-specialists=1")
    assert report.exit_code == 0
    assert_all_ran(report)
    # exposed to whatever spawns a specialist: in-process state and a callable function
    host = notes.host()
    assert specialists.spawn_tools(host, "assistant", brand=notes.brand) == [
        "Read", "mcp__plugin_notes_notes__note-add"]
    assert specialists.strip_list(host, excluded=["telegram"]) == {
        "assistant": {"telegram": ["mcp__plugin_telegram_telegram__send", "mcp__telegram__*"]}}


def test_boot_keeps_the_strip_list_for_in_process_spawners(notes):
    notes.set_brand("acme", excluded=["telegram"])
    notes.agent(notes.plugins / "notes", "assistant", "Read, mcp__telegram__send")
    host = notes.host()
    notes.boot(host=host)
    assert host.state.get(STRIP_LIST) == {"assistant": {"telegram": ["mcp__telegram__send"]}}
    assert specialists.spawn_tools(host, "assistant") == ["Read"]


def test_excluded_namespace_still_refuses_without_the_brand(notes):
    notes.agent(notes.plugins / "notes", "assistant", "mcp__plugin_telegram_telegram__send, mcp__telegram__send")
    report = notes.boot()
    # without the brand, a plugin-prefixed foreign namespace is a bridge; the short form is unknown
    assert [line.split(" drift=")[1].split()[0] for line in _drift_lines(report)] == ["unknown-plugin-namespace"]
    assert report.exit_code == 1


def test_third_party_bridge_passes(notes):
    notes.agent(notes.plugins / "notes", "browser", "mcp__plugin_playwright_playwright__browser_click, WebFetch")
    report = notes.boot()
    assert report.outcome("specialist-tool-drift").status == "ok"
    assert report.exit_code == 0


def test_wildcard_on_served_namespace_passes(notes):
    notes.agent(notes.plugins / "notes", "all-notes", "mcp__plugin_notes_notes__*")
    assert notes.boot().exit_code == 0


def test_specialists_are_read_from_templates_plugins_bundles_and_accounts(notes, tmp_path):
    templates = tmp_path / "tpl"
    notes.env["PLUGHOST_TEMPLATES_DIR"] = str(templates)
    write(templates / "t.md", "---\nname: t\ntools: Read\n---\n")
    notes.agent(notes.plugins / "notes", "p", "Read")
    write(notes.premium / "realty" / "plugins" / "listings" / "PLUGIN.md", "---\nname: listings\n---\n")
    notes.agent(notes.premium / "realty", "b", "Read")
    notes.agent(notes.home / "accounts" / "acme" / "specialists", "a", "Read")
    host = notes.host()
    found = {s.name: s.origin for s in specialists.discover(host, ["acme"])[0]}
    assert found["t"] == "templates" and found["p"] == "plugin:notes"
    assert found["b"] == "bundle:realty" and found["a"] == "account:acme"


def test_unreadable_specialist_refuses_boot_naming_the_file(notes):
    path = write(notes.plugins / "notes" / "agents" / "bad.md", "---\ntools: [Read\n---\n")
    report = notes.boot()
    line = _drift_lines(report)[0]
    assert line.startswith(f"boot-failed reason=specialist-unreadable path={path} detail=")
    assert report.exit_code == 1


@pytest.mark.parametrize("text, tools", [
    ("tools: Read, Grep ,Bash\n", ("Read", "Grep", "Bash")),
    ("tools:\n  - Read\n  - Grep\n", ("Read", "Grep")),
    ("tools: [Read, Grep]\n", ("Read", "Grep")),
    ("", ()),
])
def test_tools_frontmatter_comma_line_or_list(tmp_path: Path, text, tools):
    path = write(tmp_path / "x.md", f"---\nname: x\n{text}---\nbody\n")
    assert specialists.parse_agent(path).tools == tools


def test_tools_frontmatter_wrong_type_is_one_line(tmp_path: Path):
    path = write(tmp_path / "x.md", "---\ntools: {a: 1}\n---\n")
    with pytest.raises(UserError, match=r"x\.md: tools: expected a comma-separated line or a list"):
        specialists.parse_agent(path)


def test_cc_native_list_lives_in_one_place():
    assert {"Read", "Write", "Edit", "Bash", "Glob", "Grep", "Agent", "WebSearch", "WebFetch", "TodoWrite",
            "NotebookEdit"} <= specialists.CC_NATIVE
    assert len(specialists.CLASSES) == 7


@pytest.mark.parametrize("block", [
    "name: a\ntools: Read, Grep",
    "name: a\ndescription: Use when: you need it\ntools: Read",
    "name: a\ntools: null",
    "name: 'quoted'\ntools: Read",
    "name: a # comment\ntools: Read",
    "name: a\ntools:\n  - Read",
    "name: 12\ntools: Read",
    "name: a\ntools: mcp__plugin_x_x__*, Bash",
    "name: a\ntools: - Read",
    "name: a\nname: b",
])
def test_fast_frontmatter_path_agrees_with_yaml_or_defers(block):
    """The YAML-free path for flat `key: value` lines never disagrees with YAML: it matches or defers."""
    import yaml

    fast = specialists._simple_frontmatter(block)
    if fast is not None:
        assert fast == yaml.safe_load(block)


def test_a_loaded_plugin_that_serves_nothing_is_an_unknown_namespace(notes):
    """docs/gates.md#specialist-tool-drift: the channels plugin loads (routes, adapters) but serves no MCP tools, so its
    namespace is served by nothing: unknown-plugin-namespace, not unknown-tool-in-plugin."""
    path = notes.agent(notes.plugins / "notes", "purger", "mcp__plugin_channels_channels__purge")
    host = notes.host()
    assert host.plugin("channels").loaded and "channels" not in host.surface.mcp_servers
    assert _drift_lines(notes.boot(host=host)) == [
        "boot-failed reason=specialist-tool-drift specialist=purger tool=mcp__plugin_channels_channels__purge "
        f"drift=unknown-plugin-namespace path={path}"]


def test_agents_in_the_config_dir_are_scanned_once(notes):
    """What Claude Code loads from `<config-dir>/agents/` (hand-placed or linked by the installer)."""
    path = notes.agent(notes.config, "hand-placed", f"Read, {TYPO}")
    report = notes.boot()
    assert _drift_lines(report) == [
        f"boot-failed reason=specialist-tool-drift specialist=hand-placed tool={TYPO} drift=unknown-tool-in-plugin "
        f"path={path}"]
    linked = notes.config / "agents" / "scribe.md"
    source = notes.agent(notes.plugins / "notes", "scribe", "mcp__plugin_notes_notes__note-add")
    linked.symlink_to(source)
    found = [s.path for s in specialists.discover(notes.host(), (), notes.config)[0]]
    assert found.count(source) + found.count(linked) == 1
