"""Entry-point plugins are bundled like folder plugins (docs/payload.md#entry-point-plugins): the
module's package folder, a generated PLUGIN.md (tools as the host declares them, `python:` the
entry point's module) and `mcp/__main__.py`; what cannot be bundled is one `left out:` line.

The distributions are made on disk (a `*.dist-info` with `entry_points.txt` beside the package)
and put on `PYTHONPATH` of a real `plughost` process: no pip, nothing left in the virtualenv."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from plughost.runtime.manifest import load_manifest
from tests.conftest import run_cli_process

WEATHER = '''
from plughost import Tool, hookimpl


def forecast(city: str) -> str:
    """Tomorrow's weather for a city."""
    return f"{city}: sunny"


@hookimpl
def plughost_tools(host):
    return [Tool.from_function(forecast)]
'''


def _dist(site: Path, dist: str, entry_points: dict[str, str], files: dict[str, str], version: str = "1.2.0") -> None:
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
                                   f"Summary: {dist}, a third-party plugin\n")
    lines = "\n".join(f"{name} = {value}" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[plughost.plugins]\n{lines}\n")
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(textwrap.dedent(text))


def _bundle(tmp_path: Path, site: Path) -> tuple[object, Path]:
    out = tmp_path / "payload"
    result = run_cli_process("bundle", "default", "--out", str(out), env={"PYTHONPATH": str(site)})
    return result, out


def test_an_entry_point_plugin_ships_with_its_files_manifest_and_server(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "acme-weather", {"weather": "acme_weather.plugin"},
          {"acme_weather/__init__.py": "", "acme_weather/plugin.py": WEATHER,
           "acme_weather/skills/forecast/SKILL.md": "---\nname: forecast\ndescription: Read a forecast.\n---\nUse it.\n"})
    result, out = _bundle(tmp_path, site)
    assert result.returncode == 0, result.stderr
    assert "entry-points=[weather]" in result.stdout and "left out" not in result.stdout, result.stdout
    folder = out / "plugins" / "weather"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        ".claude-plugin/plugin.json", "PLUGIN.md", "__init__.py", "mcp/__main__.py", "plugin.py",
        "skills/forecast/SKILL.md"]
    manifest = load_manifest(folder / "PLUGIN.md")  # valid against the plugin schema
    assert (manifest.name, manifest.python, manifest.version) == ("weather", "acme_weather.plugin", "1.2.0")
    assert manifest.description == "acme-weather, a third-party plugin"
    assert [(t.name, t.description, t.input_schema["required"]) for t in manifest.tools] == [
        ("forecast", "Tomorrow's weather for a city.", ["city"])]
    doc = json.loads((folder / ".claude-plugin" / "plugin.json").read_text())
    server = doc["mcpServers"]["weather"]
    assert server["args"][:3] == ["-m", "plughost.mcp.tee", "weather"]
    assert server["args"][-1] == "${CLAUDE_PLUGIN_ROOT}/mcp/__main__.py" and server["command"].startswith("${PLUGHOST_PYTHON:-")
    assert doc["skills"] == "./skills"
    market = json.loads((out / "plugins" / ".claude-plugin" / "marketplace.json").read_text())
    assert "weather" in [p["name"] for p in market["plugins"]]

    # the payload's folder and the entry point are one plugin, whose tools the host serves
    listed = run_cli_process("--plugins-dir", str(out / "plugins"), "plugins", "list", "--json",
                             env={"PYTHONPATH": str(site)})
    assert listed.returncode == 0, listed.stderr
    [weather] = [p for p in json.loads(listed.stdout)["plugins"] if p["name"] == "weather"]
    assert (weather["status"], weather["tools"], weather["toolProblems"]) == ("loaded", ["forecast"], [])

    again, _ = _bundle(tmp_path, site)  # a rerun from the same installed files writes nothing
    assert again.returncode == 0 and again.stdout.startswith("unchanged:"), again.stdout + again.stderr


def test_what_cannot_be_bundled_is_one_line_naming_the_plugin_and_why(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "acme-broken", {"broken": "acme_broken.plugin", "objecty": "acme_broken.other:PLUGIN"},
          {"acme_broken/__init__.py": "", "acme_broken/plugin.py": "raise RuntimeError('no config')\n",
           "acme_broken/other.py": "PLUGIN = object()\n"})
    result, out = _bundle(tmp_path, site)
    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.startswith("left out:")]
    assert line.startswith("left out: broken (import failed: RuntimeError: no config); objecty (entry point "), line
    assert not (out / "plugins" / "broken").exists() and not (out / "plugins" / "objecty").exists()
    assert "[bundler] op=left-out plugin=broken source=entry-point" in result.stderr


def test_its_own_plugin_md_is_shipped_and_must_name_the_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    own = "---\nname: weather\ndescription: \"Weather, declared by hand.\"\nversion: 2.0.0\ntools:\n" \
          "  - name: forecast\n    description: \"Tomorrow's weather.\"\n---\n# weather\n"
    _dist(site, "acme-weather", {"weather": "acme_weather", "sky": "acme_sky"},
          {"acme_weather/__init__.py": WEATHER, "acme_weather/PLUGIN.md": own,
           "acme_sky/__init__.py": WEATHER, "acme_sky/PLUGIN.md": own.replace("name: weather", "name: clouds")})
    result, out = _bundle(tmp_path, site)
    assert result.returncode == 0, result.stderr
    manifest = load_manifest(out / "plugins" / "weather" / "PLUGIN.md")
    assert (manifest.description, manifest.version, manifest.python) == ("Weather, declared by hand.", "2.0.0",
                                                                         "acme_weather")
    assert "left out: sky (its PLUGIN.md name 'clouds' is not the entry point's name 'sky')" in result.stdout


def test_an_unmet_need_names_where_the_entry_point_declares_it_not_its_staging_copy(tmp_path: Path) -> None:
    site = tmp_path / "site"
    own = "---\nname: faq\ndescription: \"Answers from an index.\"\nneeds: [faq-index]\n---\n# faq\n"
    _dist(site, "acme-faq", {"faq": "acme_faq", "wiki": "acme_wiki.plugin"},
          {"acme_faq/__init__.py": "", "acme_faq/PLUGIN.md": own,
           "acme_wiki/__init__.py": "", "acme_wiki/plugin.py": "NEEDS = ['wiki-index']\n"})
    result, out = _bundle(tmp_path, site)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("[")]
    assert f"'faq' ({site / 'acme_faq' / 'PLUGIN.md'} needs[0]) needs 'faq-index'" in lines[0], lines
    assert "'wiki' (module:acme_wiki.plugin NEEDS[0]) needs 'wiki-index'" in lines[1], lines
    assert "plughost-entry-points-" not in result.stderr and not out.exists()


def test_an_entry_point_and_a_folder_plugin_of_one_name_are_refused_naming_both(tmp_path: Path) -> None:
    """The host loads the entry point and fails the folder: bundle ships neither, and says so in one line."""
    site = tmp_path / "site"
    _dist(site, "acme-weather", {"weather": "acme_weather.plugin"},
          {"acme_weather/__init__.py": "", "acme_weather/plugin.py": WEATHER})
    folder = tmp_path / "mine" / "weather"
    folder.mkdir(parents=True)
    (folder / "PLUGIN.md").write_text("---\nname: weather\ndescription: \"Mine.\"\npython: weather_tools\n---\n")
    (folder / "weather_tools.py").write_text("X = 1\n")
    out = tmp_path / "payload"
    result = run_cli_process("--plugins-dir", str(folder.parent), "bundle", "default", "--out", str(out),
                             env={"PYTHONPATH": str(site)})
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stdout + result.stderr
    [line] = [line for line in result.stderr.splitlines() if not line.startswith("[")]
    assert line == (f"plughost: bundle: plugin 'weather' is both an entry point (module:acme_weather.plugin) "
                    f"and the folder '{folder}'; rename or remove one"), line
    assert not out.exists() and "plughost-entry-points-" not in result.stderr
