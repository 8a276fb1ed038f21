"""What a plugin provides and needs (docs/architecture.md#needs-and-provides): ``bundle`` refuses a
payload in which a need has no provider, the fatal ``plugin-needs`` boot gate refuses a host in which
one has none loaded (a disabled provider included), a third-party provider satisfies the built-ins,
and a bad capability name is one line naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plughost.runtime.boot import run_gates
from plughost.runtime.hookspecs import hookimpl
from plughost.util.errors import UserError
from tests.conftest import REPO, run_cli

STORE_HOOKS = """from plughost import hookimpl


@hookimpl
def plughost_store(host):
    return None
"""


def _plugin(root: Path, name: str, frontmatter: str, hooks: str | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    python = f"python: {name}_hooks\n" if hooks is not None else ""
    (folder / "PLUGIN.md").write_text(f"---\nname: {name}\n{python}{frontmatter}---\n# {name}\n", encoding="utf-8")
    if hooks is not None:
        (folder / f"{name}_hooks.py").write_text(hooks, encoding="utf-8")
    return folder


def _brand(tmp_path: Path, excluded: list[str]) -> Path:
    path = tmp_path / "acme.json"
    path.write_text(json.dumps({"name": "acme", "productName": "Acme", "plugins": {"excluded": excluded}}))
    return path


def _outcome(host, gate: str = "plugin-needs"):  # type: ignore[no-untyped-def]
    return run_gates(host, echo=None).outcome(gate)


# ---------------------------------------------------------------------------- bundle
def test_bundle_refuses_a_need_no_shipped_plugin_provides(tmp_path: Path) -> None:
    out = tmp_path / "payload"
    result = run_cli("bundle", str(_brand(tmp_path, ["graph"])), "--out", str(out))
    assert result.returncode == 2
    def shown(name: str) -> Path:  # as a person would type it
        md = REPO / "plugins" / name / "PLUGIN.md"
        return md.relative_to(Path.cwd()) if md.is_relative_to(Path.cwd()) else md

    # one line naming every plugin that needs the missing capability, not only the first
    assert result.stderr.splitlines() == [
        f"plughost: bundle: plugins 'admin' ({shown('admin')} needs[0]), 'channels' ({shown('channels')} needs[0]), "
        f"'memory' ({shown('memory')} needs[0]) need 'graph-store'; "
        "no plugin in brand 'acme' provides it: add 'graph' or a plugin that provides it"]
    assert not out.exists()


def test_bundle_ships_a_brand_that_leaves_out_the_provider_and_every_plugin_that_needs_it(tmp_path: Path) -> None:
    result = run_cli("bundle", str(_brand(tmp_path, ["graph", "memory", "channels", "admin"])),
                     "--out", str(tmp_path / "payload"))
    assert result.returncode == 0, result.stderr


def test_bundle_takes_a_third_party_provider_in_place_of_graph(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    _plugin(plugins, "tinystore", "provides: [graph-store]\n", STORE_HOOKS)
    out = tmp_path / "payload"
    result = run_cli("--plugins-dir", str(plugins), "bundle", str(_brand(tmp_path, ["graph"])), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "plugins" / "tinystore" / "PLUGIN.md").is_file() and not (out / "plugins" / "graph").exists()


# ---------------------------------------------------------------------------- the gate
def test_every_need_of_the_builtins_is_met(make_host) -> None:
    outcome = _outcome(make_host())
    assert outcome.status == "ok" and outcome.fatal
    assert outcome.lines == ["startup-self-test plugin-needs=ok inspected=5 needs=3 met=3"]


def test_a_disabled_provider_refuses_boot_naming_plugin_file_and_field(make_host) -> None:
    outcome = _outcome(make_host(PLUGHOST_DISABLE_PLUGINS="graph"))
    assert outcome.status == "fail" and outcome.fatal
    memory = REPO / "plugins" / "memory" / "PLUGIN.md"
    assert (f"[plugin-needs] FATAL plugin=memory need=graph-store reason=no-provider file={memory} field=needs[0] "
            "not-loaded=\"graph: disabled by PLUGHOST_DISABLE_PLUGINS\" "
            "fix=\"load 'graph' or another plugin that provides 'graph-store', or leave 'memory' out\"") in outcome.lines
    assert {d["plugin"] for d in outcome.defects} == {"admin", "channels", "memory"}


def test_boot_check_exits_1_when_a_need_is_unmet(tmp_path: Path) -> None:
    result = run_cli("boot", "--check", "--config-dir", str(tmp_path / "cc"), env={"PLUGHOST_DISABLE_PLUGINS": "graph"})
    assert result.returncode == 1
    assert any(line.startswith("[plugin-needs] FATAL plugin=memory ") for line in result.stderr.splitlines())


def test_a_third_party_provider_satisfies_memory(make_host, tmp_path: Path) -> None:
    _plugin(tmp_path / "p", "tinystore", "provides: [graph-store]\n", STORE_HOOKS)
    outcome = _outcome(make_host(plugins_dir=tmp_path / "p", PLUGHOST_DISABLE_PLUGINS="graph"))
    assert outcome.status == "ok", outcome.lines
    assert outcome.lines == ["startup-self-test plugin-needs=ok inspected=5 needs=3 met=3"]


def test_a_provider_declared_in_code_satisfies_memory(make_host) -> None:
    class CodeStore:
        PROVIDES = ["graph-store"]

        @hookimpl
        def plughost_store(self, host):  # type: ignore[no-untyped-def]
            return None

    host = make_host(PLUGHOST_DISABLE_PLUGINS="graph")
    host.register(CodeStore(), "codestore")
    assert host.records["codestore"].manifest.provides == ("graph-store",)
    assert _outcome(host).status == "ok"


def test_a_bad_declaration_in_code_is_one_line_naming_the_attribute(make_host) -> None:
    class Bad:
        NEEDS = ["Graph_Store"]

    with pytest.raises(UserError) as err:
        make_host(PLUGHOST_LOAD_PLUGINS="none").register(Bad(), "bad")
    assert str(err.value) == "object:bad: NEEDS[0]: expected a value matching ^[a-z][a-z0-9-]*$ (got 'Graph_Store')"


def test_saying_provides_without_the_hook_refuses_boot(make_host, tmp_path: Path) -> None:
    folder = _plugin(tmp_path / "p", "hollow", "provides: [graph-store]\n")
    outcome = _outcome(make_host(plugins_dir=tmp_path / "p"))
    assert outcome.status == "fail"
    assert outcome.lines == [
        f"[plugin-needs] FATAL plugin=hollow provides=graph-store reason=provides-without-hook hook=plughost_store "
        f"file={folder / 'PLUGIN.md'} field=provides[0]"]


def test_a_store_hook_without_the_declaration_provides_with_a_warning(make_host, tmp_path: Path) -> None:
    folder = _plugin(tmp_path / "p", "quietstore", "", STORE_HOOKS)
    outcome = _outcome(make_host(plugins_dir=tmp_path / "p", PLUGHOST_DISABLE_PLUGINS="graph"))
    assert outcome.status == "ok"
    assert outcome.lines == [
        "[plugin-needs] WARN plugin=quietstore reason=undeclared-provider capability=graph-store hook=plughost_store "
        f"fix=\"add 'provides: [graph-store]' to {folder / 'PLUGIN.md'}\"",
        "startup-self-test plugin-needs=ok inspected=5 needs=3 met=3"]


# ---------------------------------------------------------------------------- manifests check
@pytest.mark.parametrize(("field", "value", "line"), [
    ("needs", "[Graph_Store]", "needs[0]: expected a value matching ^[a-z][a-z0-9-]*$ (got 'Graph_Store')"),
    ("provides", "graph-store", "provides: expected array (got str 'graph-store')"),
])
def test_manifests_check_names_file_and_field_of_a_bad_capability(tmp_path: Path, field: str, value: str,
                                                                  line: str) -> None:
    folder = _plugin(tmp_path, "odd", f"{field}: {value}\n")
    result = run_cli("manifests", "check", str(folder))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"{folder / 'PLUGIN.md'}: {line}"]
