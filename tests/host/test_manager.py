"""Discovery and guarded loading: folders, premium shapes, filters, broken plugins, duplicates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from plughost.runtime import hooktable
from tests.conftest import run_cli, run_cli_process

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def write_plugin(folder: Path, name: str, extra: str = "", module: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    fm = f"name: {name}\nversion: 0.1.0\n{extra}"
    (folder / "PLUGIN.md").write_text(f"---\n{fm}---\n# {name}\n", encoding="utf-8")
    if module is not None:
        (folder / "impl.py").write_text(module, encoding="utf-8")
    return folder


def test_builtins_load_once_from_entry_point_and_folder(make_host) -> None:
    host = make_host()
    for name in ("graph", "memory", "channels", "admin"):
        record = host.records[name]
        assert record.loaded and record.source == "entry-point" and record.builtin
        assert record.folder is not None and (record.folder / "PLUGIN.md").is_file()


def test_premium_bundles_both_shapes(tmp_path: Path, make_host) -> None:
    premium = tmp_path / "premium-plugins"
    write_plugin(premium / "solo", "solo")
    write_plugin(premium / "suite" / "plugins" / "alpha", "alpha")
    write_plugin(premium / "suite" / "plugins" / "beta", "beta")
    (premium / "suite" / "agents").mkdir()
    host = make_host(premium_dir=premium)
    assert host.records["solo"].bundle == "solo" and not host.records["solo"].nested
    assert host.records["alpha"].bundle == "suite" and host.records["alpha"].nested
    assert host.records["beta"].source == "premium"


def test_broken_import_and_invalid_manifest_are_recorded_and_skipped(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    write_plugin(plugins / "good", "good")
    write_plugin(plugins / "explodes", "explodes", "python: impl\n", module="raise RuntimeError('boom at import')\n")
    (plugins / "invalid").mkdir()
    (plugins / "invalid" / "PLUGIN.md").write_text("---\nname: invalid\ncolour: red\n---\n", encoding="utf-8")
    result = run_cli("--plugins-dir", str(plugins), "plugins", "list", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["plugins"]}
    assert rows["good"]["status"] == "loaded"
    assert rows["explodes"]["status"] == "failed"
    assert rows["explodes"]["reason"] == "import failed: RuntimeError: boom at import"
    assert rows["invalid"]["status"] == "failed" and "colour: unknown key" in rows["invalid"]["reason"]
    assert rows["graph"]["status"] == "loaded"
    text = run_cli("--plugins-dir", str(plugins), "plugins", "list")
    assert "explodes" in text.stdout and "reason: import failed: RuntimeError: boom at import" in text.stdout


def test_disable_list_blocks_before_import(tmp_path: Path, make_host) -> None:
    plugins = tmp_path / "plugins"
    write_plugin(plugins / "explodes", "explodes", "python: impl\n", module="raise RuntimeError('imported!')\n")
    host = make_host(plugins_dir=plugins, PLUGHOST_DISABLE_PLUGINS="explodes")
    record = host.records["explodes"]
    assert record.status == "disabled" and "PLUGHOST_DISABLE_PLUGINS" in record.reason
    assert not host.call_each(hooktable.STARTUP)


def test_load_allow_list_and_empty_string(make_host) -> None:
    host = make_host(PLUGHOST_LOAD_PLUGINS="graph")
    assert [r.name for r in host.loaded()] == ["graph"]
    none = make_host(PLUGHOST_LOAD_PLUGINS="")
    assert none.loaded() == []


def test_two_folders_claiming_one_name_name_both(tmp_path: Path, make_host) -> None:
    plugins = tmp_path / "plugins"
    premium = tmp_path / "premium"
    write_plugin(plugins / "dup", "twin")
    write_plugin(premium / "other", "twin")
    host = make_host(plugins_dir=plugins, premium_dir=premium)  # the second fails alone; the rest loads
    failed = [r for r in host.records.values() if r.name == "twin" and r.status == "failed"]
    assert len(failed) == 1 and str(plugins / "dup") in failed[0].reason and str(premium / "other") in failed[0].reason
    assert host.records["twin"].status == "loaded" and host.records["graph"].status == "loaded"
    result = run_cli("--plugins-dir", str(plugins), "--premium-dir", str(premium), "plugins", "list")
    assert result.returncode == 0 and "claimed by two sources" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_a_folder_named_like_a_built_in_fails_alone(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    write_plugin(plugins / "memory", "memory")
    result = run_cli("--plugins-dir", str(plugins), "plugins", "list", "--json")
    rows = json.loads(result.stdout)["plugins"]
    mine = [r for r in rows if r["name"] == "memory" and r["status"] == "failed"]
    assert result.returncode == 0 and len(mine) == 1 and "claimed by two sources" in mine[0]["reason"]
    assert any(r["name"] == "memory" and r["status"] == "loaded" for r in rows)


def test_trace_hooks_logs_calls(make_host, capfd) -> None:
    host = make_host(PLUGHOST_TRACE_HOOKS="1", PLUGHOST_DISABLE_PLUGINS="graph,memory,channels,admin")
    host.first(hooktable.STORE)
    err = capfd.readouterr().err
    assert "[hooks] op=call hook=plughost_store" in err and "[hooks] op=return hook=plughost_store" in err


THIRD_PARTY_PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"
[project]
name = "plughost-weather"
version = "2.0.1"
[project.entry-points."plughost.plugins"]
weather = "plughost_weather"
"""

THIRD_PARTY_MODULE = '''
"""A third-party plugin without a PLUGIN.md: its tools come from the hook."""
import os
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import Tool

if os.environ.get("WEATHER_EXPLODE_ON_IMPORT"):
    raise RuntimeError("weather imported although disabled")


def forecast(city: str) -> str:
    """Forecast for a city."""
    return f"sunny in {city}"


@hookimpl
def plughost_tools(host):
    return [Tool.from_function(forecast, admin_allowlist=True)]
'''


@pytest.fixture(scope="module")
def third_party(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Build and pip-install a real third-party plugin package into a site folder of the test's own
    (``--target``), never the environment running the suite (a ``plughost serve`` started from it
    meanwhile would load the plugin, and an interrupted run would leave it installed). The
    processes that should see it get the folder on ``PYTHONPATH``, as a user's site-packages."""
    src = tmp_path_factory.mktemp("weather")
    site = tmp_path_factory.mktemp("weather-site")
    (src / "pyproject.toml").write_text(THIRD_PARTY_PYPROJECT, encoding="utf-8")
    (src / "plughost_weather.py").write_text(textwrap.dedent(THIRD_PARTY_MODULE), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(site), str(src)],
                   check=True, capture_output=True, timeout=300)
    return {"PYTHONPATH": str(site)}


def test_third_party_entry_point_plugin(third_party: dict[str, str]) -> None:
    # processes: an entry point is imported once per process, and this import must be a fresh one
    result = run_cli_process("plugins", "list", "--json", env=third_party)
    rows = {r["name"]: r for r in json.loads(result.stdout)["plugins"]}
    assert rows["weather"]["status"] == "loaded" and rows["weather"]["version"] == "2.0.1"
    assert rows["weather"]["tools"] == ["forecast"]  # no PLUGIN.md: the hook's Tool objects declare, and are served
    code = ("from plughost.runtime.host import Host; h = Host().load(); "
            "print(sorted(h.surface.all)); print(h.surface.admin); print(h.surface.mcp_servers)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, **third_party}).stdout
    assert "mcp__plugin_weather_weather__forecast" in out
    disabled = run_cli_process("plugins", "list", "--json",
                               env={**third_party, "PLUGHOST_DISABLE_PLUGINS": "weather", "WEATHER_EXPLODE_ON_IMPORT": "1"})
    rows = {r["name"]: r for r in json.loads(disabled.stdout)["plugins"]}
    assert rows["weather"]["status"] == "disabled"
    external = run_cli_process("plugins", "list", "--json", env={**third_party, "PLUGHOST_NO_EXTERNAL_PLUGINS": "1",
                                                                  "WEATHER_EXPLODE_ON_IMPORT": "1"})
    rows = {r["name"]: r for r in json.loads(external.stdout)["plugins"]}
    assert rows["weather"]["status"] == "disabled" and rows["graph"]["status"] == "loaded"
    broken = run_cli_process("plugins", "list", "--json", env={**third_party, "WEATHER_EXPLODE_ON_IMPORT": "1"})
    rows = {r["name"]: r for r in json.loads(broken.stdout)["plugins"]}
    assert rows["weather"]["status"] == "failed" and "weather imported although disabled" in rows["weather"]["reason"]


def test_an_entry_point_plugin_version_is_its_distribution_s(tmp_path: Path, monkeypatch, make_host) -> None:
    """The version comes from the distribution that declares the entry point, not a module-name guess."""
    site = tmp_path / "site"
    info = site / "acme_tools-4.2.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-tools\nVersion: 4.2.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[plughost.plugins]\nacme = acme_hooks_mod\n", encoding="utf-8")
    (site / "acme_hooks_mod.py").write_text("X = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    host = make_host(PLUGHOST_DISABLE_PLUGINS="graph,memory,channels,admin")
    assert host.records["acme"].status == "loaded" and host.records["acme"].describe()["version"] == "4.2.0"


def test_trace_hooks_names_each_plugin_once(make_host, capfd) -> None:
    from plughost.runtime.hookspecs import hookimpl

    class Twice:
        @hookimpl(wrapper=True)
        def plughost_tools(self, host):
            return (yield)

        @hookimpl(specname="plughost_tools")
        def tools(self, host):
            return []

    host = make_host(PLUGHOST_TRACE_HOOKS="1", PLUGHOST_DISABLE_PLUGINS="graph,memory,channels,admin")
    host.register(Twice(), "twice")
    capfd.readouterr()
    host.tools()
    (line,) = [x for x in capfd.readouterr().err.splitlines() if "op=call hook=plughost_tools" in x]
    assert line.count("twice") == 1, line


def test_a_bad_entry_point_name_or_a_second_name_for_one_module_fails_alone(tmp_path: Path) -> None:
    """``"Bad Name" = mod``, and ``aaa-other = weather_mod`` beside ``weather = weather_mod``: each
    refused in one line naming the distributions and entry points (a second distribution never takes
    an installed plugin's module over); the built-ins load."""
    import os
    import subprocess
    import sys

    site = tmp_path / "site"
    site.mkdir()
    (site / "weather_mod.py").write_text(
        "from plughost import Tool, hookimpl\n\n\ndef forecast(city: str) -> str:\n    \"\"\"A forecast.\"\"\"\n"
        "    return 'sun'\n\n\n@hookimpl\ndef plughost_tools(host):\n    return [Tool.from_function(forecast)]\n")
    (site / "ok_mod.py").write_text("")
    for dist, entries in (("weather-dist", "weather = weather_mod"), ("thief-dist", "aaa-other = weather_mod"),
                          ("oddname-dist", "Bad Name = ok_mod")):
        info = site / f"{dist}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(f"[plughost.plugins]\n{entries}\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(site), PLUGHOST_HOME=str(tmp_path / "home"))
    result = subprocess.run([sys.executable, "-m", "plughost.cli", "plugins", "list", "--json"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["plugins"]}
    assert rows["Bad Name"]["status"] == "failed" and "oddname-dist" in rows["Bad Name"]["reason"]
    assert "name: expected lower-case letters" in rows["Bad Name"]["reason"]
    for name, other in (("aaa-other", "weather (weather-dist)"), ("weather", "aaa-other (thief-dist)")):
        assert rows[name]["status"] == "failed" and "one module is one plugin" in rows[name]["reason"], rows[name]
        assert other in rows[name]["reason"]  # ambiguous: neither takes the module
    assert rows["graph"]["status"] == "loaded"


def test_plugins_list_shows_what_each_plugin_provides_and_needs(tmp_path: Path, monkeypatch, make_host) -> None:
    """PLUGIN.md ``provides``/``needs`` in the text and the JSON; a plugin declared in code (an entry
    point without PLUGIN.md) by its ``PROVIDES``/``NEEDS``."""
    plugins = tmp_path / "plugins"
    write_plugin(plugins / "forecasts", "forecasts", "provides: [weather]\nneeds: [graph-store]\n")
    result = run_cli("--plugins-dir", str(plugins), "plugins", "list", "--json")
    rows = {r["name"]: r for r in json.loads(result.stdout)["plugins"]}
    assert (rows["forecasts"]["provides"], rows["forecasts"]["needs"]) == (["weather"], ["graph-store"])
    assert (rows["graph"]["provides"], rows["graph"]["needs"]) == (["graph-store"], [])
    assert rows["memory"]["needs"] == ["graph-store"]
    text = {line.split()[0]: line for line in run_cli("--plugins-dir", str(plugins), "plugins", "list").stdout.splitlines()}
    assert " provides=weather needs=graph-store" in text["forecasts"]
    assert " provides=graph-store needs=-" in text["graph"]
    site = tmp_path / "site"
    info = site / "acme_tools-4.2.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-tools\nVersion: 4.2.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[plughost.plugins]\nacme = acme_caps_mod\n", encoding="utf-8")
    (site / "acme_caps_mod.py").write_text('PROVIDES = ["invoices"]\nNEEDS = ["graph-store"]\n', encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    described = make_host().records["acme"].describe()
    assert (described["provides"], described["needs"]) == (["invoices"], ["graph-store"])


def test_an_external_plugin_is_asked_before_the_built_ins_whatever_its_name(tmp_path: Path, monkeypatch,
                                                                            make_host) -> None:
    """``acme-faq`` sorts before ``channels``; pluggy asks the last registered first, so the built-ins
    are registered first and its runner is the one used."""
    from plughost.api import hooks
    from plughost.plugins.channels.runner_gate import configured_runner

    site = tmp_path / "site"
    info = site / "acme_faq-1.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-faq\nVersion: 1.0.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[plughost.plugins]\nacme-faq = acme_faq_mod\naaa-quiet = acme_quiet_mod\n",
                                           encoding="utf-8")
    (site / "acme_faq_mod.py").write_text(
        "from plughost import hookimpl\n\n\nclass FaqRunner:\n    name = 'faq'\n\n    async def run(self, session_id, turn):\n"
        "        return 'faq'\n\n\n@hookimpl\ndef plughost_agent_runner(host):\n    return FaqRunner()\n", encoding="utf-8")
    (site / "acme_quiet_mod.py").write_text(
        "from plughost import hookimpl\n\n\n@hookimpl\ndef plughost_agent_runner(host):\n    return None\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    host = make_host()
    names = list(host.records)
    assert names.index("acme-faq") > names.index("channels") and names.index("aaa-quiet") > names.index("channels")
    assert names.index("aaa-quiet") < names.index("acme-faq")  # the externals among themselves: by name
    runner = host.first(hooks.AGENT_RUNNER)
    assert type(runner).__name__ == "FaqRunner"
    assert configured_runner(host) == ("faq", "acme-faq", ["aaa-quiet", "channels"])
