"""`plughost manifests generate`: plugin.json / marketplace.json shapes, the mcp-manifest rule,
determinism, idempotence and the FATAL for an mcp block without a server (docs/payload.md#manifests)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import run_cli
from tests.host.manifests.conftest import snapshot, write_plugin


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_generate_writes_every_manifest_with_relative_sources(example_payload: Path) -> None:
    result = run_cli("manifests", "generate", str(example_payload))
    assert result.returncode == 0, result.stderr
    assert "[manifests] op=generate" in result.stderr
    root = example_payload
    markets = {
        "plughost-platform": root / "plugins",
        "plughost-premium": root / "premium-plugins",
        "plughost-premium-studio": root / "premium-plugins" / "studio" / "plugins",
    }
    listed = {}
    for name, folder in markets.items():
        doc = _json(folder / ".claude-plugin" / "marketplace.json")
        assert doc["name"] == name
        assert doc["owner"] == {"name": "plughost"}
        for entry in doc["plugins"]:
            assert entry["source"].startswith("./")
            plugin_dir = folder / entry["source"]
            manifest = _json(plugin_dir / ".claude-plugin" / "plugin.json")
            assert manifest["name"] == entry["name"]  # the check the CLI lacks
            listed[entry["name"]] = name
    builtins = {p.name for p in (root / "plugins").iterdir() if (p / "PLUGIN.md").is_file()}
    assert listed == {**{b: "plughost-platform" for b in builtins}, "greeter": "plughost-premium",
                      "notes": "plughost-premium-studio", "planner": "plughost-premium-studio"}
    # the nested bundle's root holds only bundle-level agents: it is no plugin of any marketplace
    assert not (root / "premium-plugins" / "studio" / ".claude-plugin").exists()


def test_auto_server_runs_through_the_tee_with_the_install_interpreter(example_payload: Path) -> None:
    assert run_cli("manifests", "generate", str(example_payload)).returncode == 0
    greeter = _json(example_payload / "premium-plugins" / "greeter" / ".claude-plugin" / "plugin.json")
    assert greeter["author"] == {"name": "plughost examples"}
    assert greeter["skills"] == "./skills"
    server = greeter["mcpServers"]["greeter"]
    # the interpreter comes from settings.json env (`plughost install`), else the building one
    python = "${PLUGHOST_PYTHON:-" + sys.executable + "}"
    assert server["command"] == python
    assert server["args"] == ["-m", "plughost.mcp.tee", "greeter", "--", python,
                              "${CLAUDE_PLUGIN_ROOT}/mcp/__main__.py"]
    # the payload's folders anchored on the plugin folder (a moved payload still works); no
    # per-session values
    assert server["env"] == {"PLUGHOST_PLUGINS_DIR": "${CLAUDE_PLUGIN_ROOT}/../../plugins",
                             "PLUGHOST_PREMIUM_DIR": "${CLAUDE_PLUGIN_ROOT}/.."}
    notes = _json(example_payload / "premium-plugins" / "studio" / "plugins" / "notes" / ".claude-plugin" / "plugin.json")
    assert notes["mcpServers"]["notes"]["env"] == {"PLUGHOST_PLUGINS_DIR": "${CLAUDE_PLUGIN_ROOT}/../../../../plugins",
                                                   "PLUGHOST_PREMIUM_DIR": "${CLAUDE_PLUGIN_ROOT}/../../.."}
    assert str(example_payload) not in "".join(p.read_text() for p in example_payload.rglob("plugin.json"))
    planner = _json(example_payload / "premium-plugins" / "studio" / "plugins" / "planner" / ".claude-plugin" / "plugin.json")
    assert "mcpServers" not in planner
    assert planner["skills"] == "./skills"


def test_rerun_writes_nothing_and_output_is_deterministic(example_payload: Path, tmp_path: Path) -> None:
    assert run_cli("manifests", "generate", str(example_payload)).returncode == 0
    before = snapshot(example_payload)
    again = run_cli("manifests", "generate", str(example_payload))
    assert again.returncode == 0
    assert "0 file(s) written" in again.stdout
    assert snapshot(example_payload) == before  # same bytes, same mtimes
    for path in example_payload.rglob(".claude-plugin/*.json"):  # the generated files only
        text = path.read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert not [p for p in example_payload.rglob("*.tmp")]


def test_changed_plugin_rewrites_only_its_manifest(example_payload: Path) -> None:
    assert run_cli("manifests", "generate", str(example_payload)).returncode == 0
    before = snapshot(example_payload)
    md = example_payload / "premium-plugins" / "greeter" / "PLUGIN.md"
    md.write_text(md.read_text().replace("version: 1.0.0", "version: 1.1.0"))
    result = run_cli("manifests", "generate", str(example_payload))
    after = snapshot(example_payload)
    changed = {k for k in after if before.get(k) != after[k]}
    assert changed == {"premium-plugins/greeter/PLUGIN.md", "premium-plugins/greeter/.claude-plugin/plugin.json",
                       "premium-plugins/.claude-plugin/marketplace.json"}, result.stdout


def test_mcp_manifest_rule_skip_shared_lib_and_custom_paths(tmp_path: Path) -> None:
    plugins = tmp_path / "p" / "plugins"
    write_plugin(plugins / "quiet", "name: quiet\nmcp-manifest: skip\nmcp: {command: node, args: [x.js]}", server=True)
    write_plugin(plugins / "node-lib", "name: node-lib\nmcp-manifest: shared-lib\nmcp: {command: node, args: [a.js]}")
    write_plugin(plugins / "shared", "name: shared\nmcp-manifest: shared-lib\nmcp:\n  command: python\n"
                 "  args: ['${PLATFORM_ROOT}/lib/server.py']\n  env: {MODE: ro}")
    custom = write_plugin(plugins / "custom", "name: custom\nagents: specialists\nhooks: lifecycle\nskills: know-how")
    (custom / "specialists").mkdir()
    (custom / "specialists" / "b.md").write_text("---\ndescription: b\n---\nb")
    (custom / "specialists" / "a.md").write_text("---\ndescription: a\n---\na")
    (custom / "lifecycle").mkdir()
    (custom / "lifecycle" / "hooks.json").write_text('{"hooks": {}}')
    (custom / "know-how" / "greet").mkdir(parents=True)  # a skills folder is listed when it holds a skill
    (custom / "know-how" / "greet" / "SKILL.md").write_text("---\ndescription: greet\n---\ngreet")
    std = write_plugin(plugins / "standard", "name: standard\nversion: 2.0.0\ndescription: std\nauthor: me")
    for sub in ("skills", "agents", "hooks"):
        (std / sub).mkdir()
    (std / "agents" / "x.md").write_text("---\ndescription: x\n---\nx")
    (std / "hooks" / "hooks.json").write_text('{"hooks": {}}')
    result = run_cli("manifests", "generate", str(tmp_path / "p"), "--brand", "acme")
    assert result.returncode == 0, result.stderr
    get = lambda n: _json(plugins / n / ".claude-plugin" / "plugin.json")  # noqa: E731
    assert "mcpServers" not in get("quiet")
    # verbatim, except that a bare interpreter becomes the install's (Claude Code's env has no venv)
    assert get("shared")["mcpServers"] == {"shared": {"command": "${PLUGHOST_PYTHON:-" + sys.executable + "}",
                                                     "args": ["${PLATFORM_ROOT}/lib/server.py"], "env": {"MODE": "ro"}}}
    assert get("node-lib")["mcpServers"] == {"node-lib": {"command": "node", "args": ["a.js"]}}
    assert get("custom")["agents"] == ["./specialists/a.md", "./specialists/b.md"]
    assert get("custom")["hooks"] == "./lifecycle/hooks.json"
    assert get("custom")["skills"] == "./know-how"
    # Claude Code loads agents/ and hooks/hooks.json by itself and rejects the standard hooks file
    # listed again ("Duplicate hooks file detected"), so only skills is named for default paths, and
    # only when the plugin's model has a skill (an empty skills/ folder is not named)
    assert get("standard") == {"name": "standard", "version": "2.0.0", "description": "std",
                               "author": {"name": "me"}}
    assert _json(plugins / ".claude-plugin" / "marketplace.json")["name"] == "acme-platform"


def test_mcp_block_without_server_is_fatal_and_writes_nothing(tmp_path: Path) -> None:
    plugins = tmp_path / "p" / "plugins"
    write_plugin(plugins / "fine", "name: fine")
    write_plugin(plugins / "broken", "name: broken\nmcp: {command: python, args: [srv.py]}")
    result = run_cli("manifests", "generate", str(tmp_path / "p"))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "FATAL: plugin 'broken'" in lines[0]
    assert "mcp/__main__.py" in lines[0] and "mcp-manifest: shared-lib" in lines[0]
    assert not list(tmp_path.rglob(".claude-plugin"))


def test_invalid_plugin_md_is_one_line_exit_2(tmp_path: Path) -> None:
    write_plugin(tmp_path / "p" / "plugins" / "bad", "name: bad\nsurfce: platform")
    result = run_cli("manifests", "generate", str(tmp_path / "p"))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "PLUGIN.md" in result.stderr and "surfce" in result.stderr
    assert not list(tmp_path.rglob(".claude-plugin"))


def test_not_a_payload_or_a_bad_brand_is_one_line_exit_2(tmp_path: Path) -> None:
    result = run_cli("manifests", "generate", str(tmp_path))
    assert result.returncode == 2
    assert "PAYLOAD_DIR" in result.stderr and "plugins/" in result.stderr
    write_plugin(tmp_path / "plugins" / "ok", "name: ok")
    result = run_cli("manifests", "generate", str(tmp_path), "--brand", "Acme Co")
    assert result.returncode == 2 and "--brand: expected a kebab-case brand name" in result.stderr


def test_marketplace_whose_plugins_are_gone_is_removed(example_payload: Path) -> None:
    import shutil

    assert run_cli("manifests", "generate", str(example_payload)).returncode == 0
    root_market = example_payload / "premium-plugins" / ".claude-plugin" / "marketplace.json"
    assert root_market.is_file()
    shutil.rmtree(example_payload / "premium-plugins" / "greeter")
    assert run_cli("manifests", "generate", str(example_payload)).returncode == 0
    assert not root_market.exists()
    assert (example_payload / "premium-plugins" / "studio" / "plugins" / ".claude-plugin" / "marketplace.json").is_file()
