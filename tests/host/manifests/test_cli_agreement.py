"""Broken shapes: plughost and the real Claude Code CLI agree on every row (docs/payload.md#what-claude-code-accepts).

A generated plugin (a skill, an agent, a hook) and its marketplace are broken one way per row; each
row is run through ``plughost manifests check`` (and the checker the ``plugin-files`` boot gate
reads over an installed folder) and through ``claude plugin validate --strict``. Both accept, or
both refuse, and plughost's refusal names the plugin, the file and the field.

``VERDICT`` is what the pinned CLI (scripts/tools-package.json) answered when these rows were
written: the fast test holds plughost to it without the CLI; the external test asks the CLI again.
A row the CLI accepts but that breaks at run time (a hook command file that is gone) is a
``warning`` in plughost, never a refusal.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from plughost.payload import plugin_files
from tests.conftest import run_cli
from tests.host.manifests.conftest import Claude


def _edit_json(path: Path, change: Callable[[dict], None]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _write(rel: str, text: str) -> Callable[[Path], None]:
    return lambda plugin: (plugin / rel).write_text(text)


PJ = ".claude-plugin/plugin.json"
HOOKS = "hooks/hooks.json"
SKILL = "skills/greeting/SKILL.md"
AGENT = "agents/helper.md"

# row -> (what is validated: plugin | market, break it, CLI verdict, file, field plughost names)
ROWS: dict[str, tuple[str, Callable[[Path], None], str, str | None, str | None]] = {
    "valid plugin (control)": ("plugin", lambda p: None, "accept", None, None),
    "valid marketplace (control)": ("market", lambda p: None, "accept", None, None),
    "hooks.json invalid JSON": ("plugin", _write(HOOKS, '{"hooks": {'), "refuse", HOOKS, "json"),
    "unknown hook event name": ("plugin", _write(HOOKS, json.dumps(
        {"hooks": {"OnStop": [{"hooks": [{"type": "command", "command": "true"}]}]}})), "refuse", HOOKS,
        "hooks.OnStop"),
    "hooks.json wrong shape": ("plugin", _write(HOOKS, json.dumps({"hooks": {"Stop": {"command": "true"}}})),
                               "refuse", HOOKS, "hooks.Stop"),
    "hooks.json without hooks object": ("plugin", _write(HOOKS, json.dumps({"Stop": []})), "refuse", HOOKS,
                                        "hooks"),
    "hook without command": ("plugin", _write(HOOKS, json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}})),
                             "refuse", HOOKS, "hooks.Stop[0].hooks[0].command"),
    "hook command file missing": ("plugin", lambda p: (p / "hooks" / "stop.sh").unlink(), "accept", HOOKS,
                                  "hooks.Stop[0].hooks[0].command"),
    "SKILL.md without frontmatter": ("plugin", _write(SKILL, "Greet people.\n"), "refuse", SKILL, "frontmatter"),
    "SKILL.md frontmatter bad YAML": ("plugin", _write(SKILL, "---\nname: [x\ndescription: d\n---\nb\n"), "refuse",
                                      SKILL, "frontmatter"),
    "SKILL.md without description": ("plugin", _write(SKILL, "---\nname: greeting\n---\nb\n"), "refuse", SKILL,
                                     "description"),
    "SKILL.md without name": ("plugin", _write(SKILL, "---\ndescription: Greet.\n---\nb\n"), "accept", None, None),
    "skill folder listed but deleted": ("plugin", lambda p: shutil.rmtree(p / "skills"), "refuse", PJ, "skills"),
    "agent file bad frontmatter": ("plugin", _write(AGENT, "---\nname: [unclosed\n---\nb\n"), "refuse", AGENT,
                                   "frontmatter"),
    "agent file without frontmatter": ("plugin", _write(AGENT, "Helps.\n"), "refuse", AGENT, "frontmatter"),
    "plugin.json invalid JSON": ("plugin", _write(PJ, '{"name":'), "refuse", PJ, "json"),
    "plugin.json unknown field": ("plugin", lambda p: _edit_json(p / PJ, lambda d: d.update(bogus=1)), "refuse", PJ,
                                  "bogus"),
    "plugin.json marketplace-only field": ("plugin", lambda p: _edit_json(p / PJ, lambda d: d.update(category="x")),
                                           "refuse", PJ, "category"),
    "plugin.json version not a string": ("plugin", lambda p: _edit_json(p / PJ, lambda d: d.update(version=1)),
                                         "refuse", PJ, "version"),
    "plugin.json name not kebab-case": ("plugin", lambda p: _edit_json(p / PJ, lambda d: d.update(name="Demo")),
                                        "refuse", PJ, "name"),
    "plugin.json author a string": ("plugin", lambda p: _edit_json(p / PJ, lambda d: d.update(author="x")),
                                    "refuse", PJ, "author"),
    "marketplace.json invalid JSON": ("market", lambda p: (p.parent / ".claude-plugin/marketplace.json").write_text(
        '{"name":'), "refuse", "../.claude-plugin/marketplace.json", "json"),
    "marketplace.json without owner": ("market", lambda p: _edit_json(p.parent / ".claude-plugin/marketplace.json",
                                                                      lambda d: d.pop("owner")),
                                       "refuse", "../.claude-plugin/marketplace.json", "owner"),
    "marketplace.json no plugins": ("market", lambda p: _edit_json(p.parent / ".claude-plugin/marketplace.json",
                                                                   lambda d: d.update(plugins=[])),
                                    "refuse", "../.claude-plugin/marketplace.json", "plugins"),
}


def _payload(base: Path) -> Path:
    """A generated payload holding one plugin `demo` with a skill, an agent and a Stop hook; returns its folder."""
    root = base / "payload"
    plugin = root / "plugins" / "demo"
    (plugin / "skills" / "greeting").mkdir(parents=True)
    (plugin / "agents").mkdir()
    (plugin / "hooks").mkdir()
    (plugin / "PLUGIN.md").write_text("---\nname: demo\ndescription: A demo plugin.\nversion: 0.1.0\n---\n# demo\n")
    (plugin / SKILL).write_text("---\nname: greeting\ndescription: Greet someone.\n---\nSay hello.\n")
    (plugin / AGENT).write_text("---\nname: helper\ndescription: Helps.\n---\nHelp.\n")
    (plugin / "hooks" / "stop.sh").write_text("exit 0\n")
    (plugin / HOOKS).write_text(json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": 'sh "${CLAUDE_PLUGIN_ROOT}/hooks/stop.sh"', "timeout": 10}]}]}}))
    (root / "brand.json").write_text(json.dumps({"name": "acme", "productName": "Acme"}))
    done = run_cli("manifests", "generate", str(root))
    assert done.returncode == 0, done.stderr
    return plugin


def _rows(tmp_path: Path) -> dict[str, tuple[Path, Path]]:
    """row -> (the folder validated, the plugin folder), each row its own broken copy."""
    out = {}
    for i, (row, (target, breaker, _verdict, _file, _field)) in enumerate(ROWS.items()):
        plugin = _payload(tmp_path / f"row{i}")
        breaker(plugin)
        out[row] = (plugin if target == "plugin" else plugin.parent, plugin)
    return out


def _plughost(folder: Path, plugin: Path) -> tuple[str, str]:
    """plughost's verdict on a folder (accept | refuse) and what it printed."""
    done = run_cli("manifests", "check", str(folder))
    assert done.returncode in (0, 2), done.stderr
    return ("accept" if done.returncode == 0 else "refuse"), done.stdout + done.stderr


def _expect_named(row: str, text: str, plugin: Path) -> None:
    _target, _breaker, verdict, file, field = ROWS[row]
    if file is None:
        assert "warning" not in text and "error" not in text.lower(), (row, text)
        return
    path = (plugin / file).resolve() if not file.startswith("..") else (plugin.parent / file[3:]).resolve()
    lines = [line for line in text.splitlines() if line.startswith(f"{path}: {field}")]
    assert lines, (row, text)
    # a marketplace's findings name the marketplace ("-" when its JSON does not say)
    expected_plugin = "demo" if ROWS[row][0] == "plugin" else "-" if field == "json" else "acme-platform"
    assert any(f"(plugin {expected_plugin})" in line for line in lines), (row, lines)
    if verdict == "accept":
        assert all(": warning: " in line for line in lines), (row, lines)


@pytest.mark.parametrize("row", list(ROWS))
def test_plughost_gives_the_clis_verdict(row: str, tmp_path: Path) -> None:
    folder, plugin = _rows_one(tmp_path, row)
    verdict, text = _plughost(folder, plugin)
    assert verdict == ROWS[row][2], (row, text)
    _expect_named(row, text, plugin)
    # the checker the plugin-files boot gate runs over an installed plugin folder says the same
    if ROWS[row][0] == "plugin":
        found = plugin_files.errors(plugin_files.check_plugin(plugin, "demo"))
        assert bool(found) == (ROWS[row][2] == "refuse"), (row, found)


def _rows_one(tmp_path: Path, row: str) -> tuple[Path, Path]:
    target, breaker, *_ = ROWS[row]
    plugin = _payload(tmp_path)
    breaker(plugin)
    return (plugin if target == "plugin" else plugin.parent), plugin


@pytest.mark.external
@pytest.mark.e2e
def test_every_row_plughost_and_the_real_cli_agree(tmp_path: Path) -> None:
    claude = Claude(tmp_path / "cli")
    rows = _rows(tmp_path)
    with ThreadPoolExecutor(max_workers=2) as pool:
        cli = dict(zip(rows, pool.map(lambda r: claude("plugin", "validate", "--strict", str(rows[r][0])), rows),
                       strict=True))
    table, disagree = [], []
    for row, (folder, plugin) in rows.items():
        done = cli[row]
        cli_verdict = "accept" if done.returncode == 0 and "Validation passed" in done.stdout else "refuse"
        ours, text = _plughost(folder, plugin)
        table.append(f"{row}: plughost={ours} cli={cli_verdict}")
        if ours != cli_verdict or cli_verdict != ROWS[row][2]:
            disagree.append(f"{row}: plughost={ours} cli={cli_verdict} (recorded {ROWS[row][2]})\n"
                            f"  cli: {done.stdout.strip()}\n  plughost: {text.strip()}")
        else:
            _expect_named(row, text, plugin)
    assert not disagree, "\n".join(disagree)
    print("\n".join(table))
