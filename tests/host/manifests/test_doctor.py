"""`plughost doctor`: every installed server started as Claude Code would (minimal PATH, the config
dir's settings.json env, the folder a directory marketplace resolves to, another cwd), its
`tools/list` compared with PLUGIN.md; one line per finding, exit 1 on any (docs/gates.md#doctor)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plughost.runtime import accounts
from tests.conftest import run_cli
from tests.host.manifests.conftest import bundle


@pytest.fixture
def installed(tmp_path: Path, plughost_home: Path) -> tuple[Path, Path]:
    payload, config = tmp_path / "payload", tmp_path / "claude"
    assert bundle("studio", payload).returncode == 0
    accounts.create_account("acme", plughost_home)
    result = run_cli("install", str(payload), "--config-dir", str(config), "--account", "acme")
    assert result.returncode == 0, result.stderr
    return payload, config


def _doctor(config: Path) -> tuple[int, list[str]]:
    result = run_cli("doctor", "--config-dir", str(config), timeout=240)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stdout.splitlines()


def test_a_deleted_server_and_a_renamed_tool_are_named_the_rest_is_ok(installed: tuple[Path, Path]) -> None:
    payload, config = installed
    (payload / "premium-plugins" / "studio" / "plugins" / "notes" / "mcp" / "__main__.py").unlink()
    md = payload / "premium-plugins" / "greeter" / "PLUGIN.md"
    md.write_text(md.read_text().replace("  - name: greet\n", "  - name: greet-person\n"))
    code, lines = _doctor(config)
    assert code == 1, lines
    fails = [line for line in lines if line.startswith("[doctor] FAIL ")]
    assert any("plugin=notes@studio-premium-studio server=notes reason=start-failed" in f for f in fails), lines
    # declared but not implemented: the tool is withheld, the server starts with the rest, doctor names it
    [greeter] = [f for f in fails if "server=greeter" in f]
    assert "reason=missing-tool tool=greet-person" in greeter, greeter
    ok = sorted(line.split()[2] for line in lines if line.startswith("[doctor] ok "))
    assert ok == ["plugin=admin@studio-platform", "plugin=graph@studio-platform", "plugin=memory@studio-platform"], lines
    assert lines[-1].startswith("[doctor] op=done servers=5 findings=")
    from plughost.payload import doctor
    from plughost.util import config as host_config

    kept = doctor.last(host_config.home())  # the owner's console shows the last run
    assert kept is not None and kept["lines"] == lines and kept["findings"] >= 2 and kept["finishedAt"]


def test_a_broken_interpreter_path_is_named_for_every_server(installed: tuple[Path, Path]) -> None:
    _, config = installed
    settings = json.loads((config / "settings.json").read_text())
    settings["env"]["PLUGHOST_PYTHON"] = "/nonexistent/bin/python"
    (config / "settings.json").write_text(json.dumps(settings))
    code, lines = _doctor(config)
    assert code == 1
    fails = [line for line in lines if line.startswith("[doctor] FAIL ") and " server=" in line]
    assert len(fails) == 5, lines
    for plugin in ("greeter", "notes", "memory", "admin"):
        assert any(f"server={plugin} reason=start-failed" in f and "/nonexistent/bin/python" in f for f in fails), lines
    [graph] = [f for f in fails if "server=graph" in f]
    assert "PLUGHOST_PYTHON-missing" in graph, graph  # its launcher says so on stderr, no fallback python3
    # every hook command fails too, named by plugin, event and command (they run the same interpreter)
    hooks = [line for line in lines if "reason=hook-failed" in line]
    memory = sorted(f.split(" event=")[1].split()[0] for f in hooks if f.startswith("[doctor] FAIL plugin=memory@"))
    assert memory == ["PostToolUse", "PostToolUseFailure", "PreCompact", "PreToolUse", "PreToolUse", "SessionStart",
                      "Stop", "UserPromptSubmit"], lines  # PreToolUse: the consult and the ask gates
    for line in hooks:
        assert line.startswith(("[doctor] FAIL plugin=memory@", "[doctor] FAIL plugin=channels@")), line
        assert 'command="sh \\"${CLAUDE_PLUGIN_ROOT}/hooks/' in line and "/nonexistent/bin/python" in line, line
    assert lines[-1] == f"[doctor] op=done servers=5 findings={5 + len(hooks)} exit=1", lines


def test_a_good_install_runs_every_hook_and_reports_none(installed: tuple[Path, Path]) -> None:
    """Each hook ran as Claude Code runs it (a visitor's probe: nothing recorded), exit 0, no traceback."""
    code, lines = _doctor(installed[1])
    assert code == 0, lines
    assert not [line for line in lines if line.startswith("[doctor] FAIL ")], lines
    assert lines[-1] == "[doctor] op=done servers=5 findings=0 exit=0", lines


def test_a_hook_that_cannot_import_host_is_a_finding(installed: tuple[Path, Path], tmp_path: Path) -> None:
    """A python3 without plughost (what every hook ran before its fallback): ModuleNotFoundError on
    stderr is the finding, whatever the exit code."""
    from plughost.payload.doctor_hooks import hook_env, run_command

    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                    "echo \"ModuleNotFoundError: No module named 'host'\" >&2\nexit 0\n")
    fake.chmod(0o755)
    payload, config = installed
    root = next(p.parent.parent for p in payload.rglob("memory/hooks/hooks.json"))
    env = {**hook_env(config, root, tmp_path, None), "PLUGHOST_PYTHON": str(fake)}
    found = run_command("memory@studio-platform", "UserPromptSubmit", 'sh "${CLAUDE_PLUGIN_ROOT}/hooks/surface-prompt.sh"',
                        env, tmp_path, 30)
    assert found is not None and "reason=hook-failed event=UserPromptSubmit" in found, found
    assert "exit=0" in found and "stderr=\"ModuleNotFoundError: No module named 'host'\"" in found, found


def test_no_config_dir_is_one_line(tmp_path: Path) -> None:
    result = run_cli("doctor", "--config-dir", str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"plughost: --config-dir: '{tmp_path / 'nowhere'}' is not a folder (no Claude Code config dir to check)"


def test_served_and_declared_are_compared_by_name_and_eager_meta() -> None:
    from plughost.payload.doctor import EAGER_META_KEY, Finding, ServerCheck, compare
    from plughost.payload.launch import Launch

    check = ServerCheck(Launch("p", "p@m", "p", Path("/x"), Path("/x/plugin.json")))
    add = lambda reason, **f: check.findings.append(Finding("p@m", "p", reason, f))  # noqa: E731
    served = {"a": {"name": "a", "_meta": {EAGER_META_KEY: True}}, "b": {"name": "b"}, "extra": {"name": "extra"}}
    compare(check, served, {"a": False, "b": False, "gone": False}, add)
    assert check.lines() == [
        "[doctor] FAIL plugin=p@m server=p reason=missing-tool tool=gone",
        "[doctor] FAIL plugin=p@m server=p reason=extra-tool tool=extra",
        "[doctor] FAIL plugin=p@m server=p reason=meta-differs tool=a expected=anthropic/alwaysLoad=false "
        "served=anthropic/alwaysLoad=true"]
    withheld = ServerCheck(check.launch)
    compare(withheld, {"a": {"name": "a"}}, {"a": False, "cypher": True}, lambda r, **f: withheld.findings.append(
        Finding("p@m", "p", r, f)), {"cypher"})  # withheld in this configuration: not lost
    assert withheld.findings == []


def test_a_server_names_the_tools_it_withholds(make_host, plughost_home: Path) -> None:
    """On the embedded store the graph server withholds the Cypher tools and says so in tools/list."""
    import anyio
    from mcp import Client

    from plughost.mcp.server import WITHHELD_META_KEY, build_server

    async def listed():
        async with Client(build_server(make_host(), "graph")) as client:
            return await client.list_tools()

    result = anyio.run(listed)
    assert sorted(t.name for t in result.tools) == ["graph-neighbors", "graph-schema"]
    assert (result.meta or {}).get(WITHHELD_META_KEY) == ["read-cypher", "write-cypher"]


def test_hooks_are_reported_per_plugin_and_a_missing_hook_command_is_a_finding(installed: tuple[Path, Path]) -> None:
    payload, _ = installed
    [script] = [p for p in payload.rglob("memory/hooks/surface-prompt.sh")]
    script.unlink()
    code, lines = _doctor(installed[1])
    assert code == 1, lines
    hooks = {line.split()[2]: line for line in lines if line.startswith("[doctor] hooks ")}
    [memory] = [line for key, line in hooks.items() if key.startswith("plugin=memory@")]
    assert "PostToolUse:1" in memory and "PreCompact:1" in memory and "commands=hooks/surface-prompt.sh" in memory
    assert any(key.startswith("plugin=graph@") for key in hooks), lines  # one line per plugin, hooks or none
    fails = [line for line in lines if "reason=hook-command-missing" in line]
    assert fails and all(line.startswith("[doctor] FAIL plugin=memory@") for line in fails), lines
    assert any("event=PostToolUse" in f and f.endswith("surface-prompt.sh") for f in fails), fails


def test_a_server_is_compared_with_its_plugins_model(tmp_path: Path) -> None:
    """The loaded host's model (what the gates read) when it has the plugin, else the model of the folder
    Claude Code starts it from; no readable PLUGIN.md there: nothing declared to compare with."""
    from plughost.payload.doctor import declared, model_of
    from plughost.payload.launch import Launch
    from plughost.runtime import plugin_model
    from plughost.runtime.manifest import ToolDecl
    from tests.host.manifests.conftest import write_plugin

    folder = write_plugin(tmp_path / "p", "name: p\ntools:\n  - name: on-disk\n    description: d\n", server=True)
    launch = Launch("p", "p@m", "p", folder, folder / ".claude-plugin" / "plugin.json")
    loaded = plugin_model.build(None, folder, "p", tools=[ToolDecl("from-host", "d", eager=True)])
    assert declared(model_of(launch, {"p": loaded})) == {"from-host": True}
    assert declared(model_of(launch, {"other": loaded})) == {"on-disk": False}
    assert model_of(launch).server_keys == ["p"]  # type: ignore[union-attr]
    (folder / "PLUGIN.md").unlink()
    assert declared(model_of(launch)) is None


def test_a_hook_event_claude_code_does_not_know_is_a_finding_naming_plugin_file_and_field(tmp_path: Path) -> None:
    """The check ``manifests check`` and the gates make (plugin_files.check_hooks): an unknown event fails
    the plugin's load in Claude Code, so doctor names it and runs none of the plugin's hooks."""
    from plughost.payload import plugin_files
    from plughost.payload.doctor_hooks import plugin_hooks

    root = tmp_path / "shopfaq"
    (root / "hooks").mkdir(parents=True)
    (root / "hooks" / "x.sh").write_text("#!/bin/sh\n")
    hooks = {"hooks": {"OnPromptSubmitted": [{"hooks": [
        {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/x.sh"}]}]}}
    (root / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    ran: list[str] = []
    line, found = plugin_hooks("shopfaq@m", root, lambda event, command: ran.append(event))
    assert "events=OnPromptSubmitted:1" in line and not ran, (line, ran)
    [finding] = found
    assert finding.startswith("plugin=shopfaq@m reason=hooks-invalid "), finding
    assert f"file={root / 'hooks' / 'hooks.json'}" in finding and "field=hooks.OnPromptSubmitted" in finding, finding
    [same] = plugin_files.errors(plugin_files.check_hooks(root / "hooks" / "hooks.json", root, "shopfaq@m"))
    assert same.detail in finding.replace("\\", "")
    # a known event: no finding, and the hook runs
    hooks["hooks"] = {"UserPromptSubmit": hooks["hooks"]["OnPromptSubmitted"]}
    (root / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    assert plugin_hooks("shopfaq@m", root, lambda event, command: ran.append(event))[1] == [] and ran == [
        "UserPromptSubmit"]


def test_a_moved_payload_is_named_with_the_install_to_rerun(installed: tuple[Path, Path], tmp_path: Path) -> None:
    """After the payload moved, every installed plugin's folder is gone: each line says which folder
    and the command that fixes it (rerun the install from where the payload is now)."""
    from plughost.payload.launch import installed_launches

    payload, config = installed
    payload.rename(tmp_path / "moved-payload")
    launches, problems = installed_launches(config)
    assert launches == [] and problems
    line = next(p for p in problems if "plugin=graph@" in p)
    assert "reason=no-plugin-folder" in line and f"{payload}" in line and "is gone" in line
    assert (f"fix=\"rerun plughost install PAYLOAD --config-dir {config} --account acme with PAYLOAD the folder "
            "the payload is in now") in line
