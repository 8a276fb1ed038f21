"""skill-registration and tool-registration: the generated manifests and the three Claude Code
surfaces, one test per defect class; both say WARN and never refuse boot."""

from __future__ import annotations

import pytest
from gates_support import assert_all_ran, write

SURFACES = ("known_marketplaces", "installed_plugins", "enabledPlugins")


@pytest.fixture
def premium(install):
    """A nested-marketplace bundle `realty` (sub `listings`) and a standalone bundle `teaching`."""
    install.set_brand("acme")
    nested = install.premium / "realty" / "plugins" / "listings"
    write(nested / "PLUGIN.md", "---\nname: listings\nversion: 1.0.0\n---\n# listings\n")
    write(nested / "skills" / "price" / "SKILL.md", "---\nname: price\ndescription: price a listing\n---\n")
    install.marketplace(install.premium / "realty" / "plugins", "acme-premium-realty")
    standalone = install.premium / "teaching"
    write(standalone / "PLUGIN.md", "---\nname: teaching\nversion: 1.0.0\n---\n# teaching\n")
    install.account("acme", enabled=["listings", "teaching"])
    return install, nested, standalone


def _register_all(install, nested, standalone, skip: tuple[str, str] | None = None):
    for key, folder in (("listings@acme-premium-realty", nested), ("teaching@acme-premium", standalone)):
        surfaces = tuple(s for s in SURFACES if skip is None or (key, s) != skip)
        install.register(key, folder, surfaces=surfaces)


def test_premium_subs_registered_everywhere_pass(premium):
    install, nested, standalone = premium
    _register_all(install, nested, standalone)
    report = install.boot()
    assert report.outcome("skill-registration").lines == ["startup-self-test skill-registration=ok inspected=2"]
    assert report.exit_code == 0


@pytest.mark.parametrize("surface", SURFACES)
def test_nested_sub_missing_from_one_surface(premium, surface):
    install, nested, standalone = premium
    _register_all(install, nested, standalone, skip=("listings@acme-premium-realty", surface))
    report = install.boot()
    assert report.outcome("skill-registration").lines == [
        f"[skill-registration] op=drift WARN accountId=acme plugin=listings expected=listings@acme-premium-realty "
        f"missing={surface}"]
    assert report.outcome("skill-registration").status == "warn"
    assert report.exit_code == 0
    assert_all_ran(report)


@pytest.mark.parametrize("surface", SURFACES)
def test_standalone_bundle_missing_from_one_surface(premium, surface):
    install, nested, standalone = premium
    _register_all(install, nested, standalone, skip=("teaching@acme-premium", surface))
    report = install.boot()
    assert report.outcome("skill-registration").lines == [
        f"[skill-registration] op=drift WARN accountId=acme plugin=teaching expected=teaching@acme-premium "
        f"missing={surface}"]
    assert report.exit_code == 0
    assert_all_ran(report)


def test_sub_never_installed_lists_every_surface(premium):
    install, nested, standalone = premium
    install.register("teaching@acme-premium", standalone)
    report = install.boot()
    assert report.outcome("skill-registration").lines == [
        "[skill-registration] op=drift WARN accountId=acme plugin=listings expected=listings@acme-premium-realty "
        "missing=known_marketplaces,installed_plugins,enabledPlugins"]


def test_sub_registered_under_the_wrong_marketplace_is_drift(premium):
    install, nested, standalone = premium
    _register_all(install, nested, standalone)
    install.register("listings@acme-premium", nested)  # the standalone marketplace: wrong for a nested sub
    for path in (install.config / "plugins" / "installed_plugins.json",):
        text = path.read_text().replace('"listings@acme-premium-realty"', '"listings@elsewhere"')
        path.write_text(text)
    report = install.boot()
    assert report.outcome("skill-registration").lines == [
        "[skill-registration] op=drift WARN accountId=acme plugin=listings expected=listings@acme-premium-realty "
        "missing=installed_plugins"]


def test_only_enabled_premium_subs_are_inspected(premium):
    install, nested, standalone = premium
    install.account("acme", enabled=["teaching"])
    install.register("teaching@acme-premium", standalone)
    report = install.boot()
    assert report.outcome("skill-registration").lines == ["startup-self-test skill-registration=ok inspected=1"]


# ---------------------------------------------------------------------------------------- tool-registration
@pytest.fixture
def tools(install):
    install.plugin("notes", ["note-add"])
    install.account("acme", enabled=["notes"])
    return install


def _tool_lines(report):
    return report.outcome("tool-registration").lines


def test_tool_plugin_installed_with_its_server_passes(tools):
    tools.install_tool_plugin("notes")
    host = tools.host()
    report = tools.boot(host=host)
    builtins = len(tools.builtin_tool_plugins(host))  # platform tool-plugins are on for every account
    assert _tool_lines(report) == [f"startup-self-test tool-registration=ok inspected={1 + builtins}"]


def test_tool_plugin_not_installed(tools):
    report = tools.boot()
    assert _tool_lines(report) == [
        "[tool-registration] op=drift WARN accountId=acme plugin=notes expected-server=notes reason=not-installed"]
    assert report.exit_code == 0
    assert_all_ran(report)


def test_tool_plugin_installed_row_but_no_generated_manifest(tools):
    tools.register("notes@acme-platform", tools.plugins / "notes")
    report = tools.boot()
    assert _tool_lines(report) == [
        "[tool-registration] op=drift WARN accountId=acme plugin=notes expected-server=notes reason=not-installed"]
    assert report.exit_code == 0
    assert_all_ran(report)


def test_tool_plugin_with_skip_manifest(tools):
    folder = tools.plugins / "notes"
    tools.generated_manifest(folder, "notes", None)  # mcp-manifest: skip -> no mcpServers
    tools.register("notes@acme-platform", folder)
    report = tools.boot()
    assert _tool_lines(report) == [
        "[tool-registration] op=drift WARN accountId=acme plugin=notes expected-server=notes "
        "reason=no-mcpServers-manifest"]
    assert report.exit_code == 0
    assert_all_ran(report)


def test_tool_plugin_server_file_missing(tools):
    folder = tools.install_tool_plugin("notes")
    (folder / "mcp" / "__main__.py").unlink()
    report = tools.boot()
    assert _tool_lines(report) == [
        "[tool-registration] op=drift WARN accountId=acme plugin=notes expected-server=notes reason=server-missing"]
    assert report.outcome("tool-registration").defects[0]["detail"].startswith(f"{folder}/mcp/__main__.py does not exist")
    assert report.exit_code == 0
    assert_all_ran(report)


def test_a_server_entry_that_is_not_an_object_is_an_invalid_plugin_json_not_a_missing_distribution(tools):
    folder = tools.install_tool_plugin("notes")
    manifest = tools.generated_manifest(folder, "notes", {"notes": "python -m notes"})
    assert _tool_lines(tools.boot()) == [
        "[tool-registration] op=drift WARN accountId=acme plugin=notes expected-server=notes "
        f"reason=plugin-json-invalid file={manifest} field=mcpServers.notes"]


def test_shared_lib_server_binary_missing(tools, tmp_path):
    folder = tools.plugin("cypher", ["query"], server=False, mcp_manifest="shared-lib")
    tools.generated_manifest(folder, "cypher", {"cypher": {"command": "${PLATFORM_ROOT}/bin/cypher-mcp",
                                                           "args": ["--stdio"]}})
    tools.register("cypher@acme-platform", folder)
    tools.account("acme", enabled=["cypher"])
    # the shared-lib plugin still needs an mcp block to be a tool-plugin
    text = (folder / "PLUGIN.md").read_text().replace("mcp-manifest: shared-lib",
                                                       "mcp-manifest: shared-lib\nmcp:\n  command: cypher-mcp")
    (folder / "PLUGIN.md").write_text(text)
    root = tmp_path / "platform"
    report = tools.boot(PLATFORM_ROOT=str(root))
    assert _tool_lines(report) == [
        "[tool-registration] op=drift WARN accountId=acme plugin=cypher expected-server=cypher reason=dist-missing"]
    write(root / "bin" / "cypher-mcp", "#!/bin/sh\n")
    host = tools.host(PLATFORM_ROOT=str(root))
    builtins = len(tools.builtin_tool_plugins(host))
    assert _tool_lines(tools.boot(host=host)) == [f"startup-self-test tool-registration=ok inspected={1 + builtins}"]


def test_tool_registration_reads_the_generated_manifest_not_plugin_md(tools):
    """PLUGIN.md declares an mcp block, but the generated manifest (what Claude Code reads) has none."""
    folder = tools.plugins / "notes"
    assert "mcp:" in (folder / "PLUGIN.md").read_text()
    tools.generated_manifest(folder, "notes", {})
    tools.register("notes@acme-platform", folder)
    assert "reason=no-mcpServers-manifest" in _tool_lines(tools.boot())[0]


def test_plugins_not_enabled_for_the_account_are_not_inspected(tools):
    tools.account("acme", enabled=[])
    host = tools.host()
    builtins = len(tools.builtin_tool_plugins(host))
    assert _tool_lines(tools.boot(host=host)) == [f"startup-self-test tool-registration=ok inspected={builtins}"]


def test_every_account_is_inspected_unless_one_is_named(tools):
    tools.account("beta", enabled=["notes"])
    tools.install_tool_plugin("notes")
    (tools.plugins / "notes" / "mcp" / "__main__.py").unlink()
    lines = _tool_lines(tools.boot())
    assert [line.split("accountId=")[1].split()[0] for line in lines] == ["acme", "beta"]
    assert [line.split("accountId=")[1].split()[0] for line in _tool_lines(tools.boot(account="beta"))] == ["beta"]
