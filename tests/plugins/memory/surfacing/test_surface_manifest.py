"""The generated memory plugin registers the UserPromptSubmit hook, the real Claude Code CLI accepts
it (``claude plugin validate --strict``), and the installed copy of the hook runs from the CLI cache."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from surfacing_support import ACCOUNT, hook_input, seed

from tests.conftest import run_cli
from tests.host.manifests.conftest import Claude, bundle

pytestmark = [pytest.mark.external, pytest.mark.e2e]


def test_generated_hook_config_passes_claude_validate_and_runs_installed(tmp_path: Path, plughost_home: Path) -> None:
    payload = tmp_path / "payload"
    built = bundle("default", payload, premium=None)
    assert built.returncode == 0, built.stderr
    memory = payload / "plugins" / "memory"
    hooks = json.loads((memory / "hooks" / "hooks.json").read_text())
    [entry] = hooks["hooks"]["UserPromptSubmit"]
    [command] = entry["hooks"]
    assert command["type"] == "command" and "${CLAUDE_PLUGIN_ROOT}/hooks/surface-prompt.sh" in command["command"]
    for event in ("PostToolUse", "PostToolUseFailure"):  # the audit trail, the same hook process
        [audit] = hooks["hooks"][event]
        assert audit["hooks"][0]["command"] == command["command"]
    assert hooks["hooks"]["PreCompact"][0]["hooks"][0]["command"] == command["command"]  # compaction briefings
    assert hooks["hooks"]["SessionStart"][0]["matcher"] == "startup|compact|resume"
    [gate, ask] = hooks["hooks"]["PreToolUse"]  # the consult-before-send and investigate-before-asking gates
    assert "${CLAUDE_PLUGIN_ROOT}/hooks/consult-gate.sh" in gate["hooks"][0]["command"]
    assert ask["matcher"] == "AskUserQuestion" and "${CLAUDE_PLUGIN_ROOT}/hooks/ask-gate.sh" in ask["hooks"][0]["command"]
    assert "hooks" not in json.loads((memory / ".claude-plugin" / "plugin.json").read_text())  # discovered

    claude = Claude(tmp_path / "cli", plughost_home)
    result = claude("plugin", "validate", "--strict", str(memory))
    assert result.returncode == 0 and "✔ Validation passed" in result.stdout, result.stdout + result.stderr
    assert "warning" not in result.stdout.lower()

    # installed as Claude Code would (the CLI cache copy), the copy's hook finds the install
    config = tmp_path / "config"
    assert run_cli("account", "create", ACCOUNT).returncode == 0
    installed = run_cli("install", str(payload), "--config-dir", str(config), "--account", ACCOUNT)
    assert installed.returncode == 0, installed.stderr
    [copy] = (config / "plugins" / "cache").glob("*/memory/*/hooks/surface-prompt.sh")
    seed(plughost_home)
    settings = json.loads((config / "settings.json").read_text())
    settings_env = {**settings["env"], "PLUGHOST_EMBEDDER": "none"}  # install wrote account, home, interpreter
    assert settings_env["ACCOUNT_ID"] == ACCOUNT and settings_env["PLUGHOST_PYTHON"]
    (config / "settings.json").write_text(json.dumps({**settings, "env": settings_env}))
    # Claude Code applies the settings' env to the hook process
    env = {"PATH": "/usr/bin:/bin", "CLAUDE_CONFIG_DIR": str(config), "HOME": str(tmp_path), **settings_env}
    proc = subprocess.run(["sh", str(copy)], input=hook_input("What budget did the board approve for Project Falcon?"),
                          capture_output=True, env=env, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0 and proc.stdout, proc.stderr
    out = json.loads(proc.stdout)
    assert "(id: falcon-budget)" in out["hookSpecificOutput"]["additionalContext"]
