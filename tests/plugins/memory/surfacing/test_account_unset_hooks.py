"""The memory hooks after an install through the Claude Code CLI alone (no ``plughost install``, so no
``ACCOUNT_ID`` anywhere): every command of ``hooks/hooks.json`` run as Claude Code runs it (``sh -c``,
``env -i PATH=/usr/bin:/bin`` plus Claude Code's own variables, another working directory, the event's
JSON on stdin) exits 0, prints nothing on stdout and says on stderr, once, which command fixes it:
``[memory] skip=account-unset fix="..."``, the command the memory tools name too."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plughost.payload.doctor_hooks import sample_input
from plughost.runtime import accounts
from plughost.runtime.install_record import account_fix_command
from tests.conftest import REPO

MEMORY = REPO / "plugins" / "memory"
HOOKS = json.loads((MEMORY / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
COMMANDS = [(event, hook["command"]) for event, groups in HOOKS.items() for group in groups
            for hook in group["hooks"]]


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("cli-only")
    root = base / "payload" / "plugins" / "memory"  # the plugin folder as a payload ships it
    shutil.copytree(MEMORY, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / ".claude-plugin").mkdir(exist_ok=True)
    (root / ".claude-plugin" / "python").write_text(sys.executable + "\n")  # what generation records
    home = base / "user"
    accounts.create_account("acme", home / ".plughost")  # made, but never named to Claude Code
    config = base / "claude-config"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"env": {}}))  # the CLI's own install writes no env
    work = base / "elsewhere"
    work.mkdir()
    return {"root": root, "home": home, "config": config, "work": work, "payload": base / "payload"}


@pytest.mark.parametrize(("event", "command"), COMMANDS, ids=[f"{e}-{c.split('/')[-1][:-1]}" for e, c in COMMANDS])
def test_each_memory_hook_names_the_fix_and_exits_0(install: dict[str, Path], event: str, command: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(install["home"]), "CLAUDE_CONFIG_DIR": str(install["config"]),
           "CLAUDE_PLUGIN_ROOT": str(install["root"]), "CLAUDE_PROJECT_DIR": str(install["work"])}
    stdin = json.dumps(sample_input(event, install["work"]))
    done = subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True, text=True, env=env,
                          cwd=install["work"], timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", done.stdout
    lines = [line for line in done.stderr.splitlines() if line.startswith("[memory] ")]
    fix = account_fix_command({"PLUGHOST_HOME": str(install["home"] / ".plughost"), "CLAUDE_CONFIG_DIR": str(install["config"]),
                               "PLUGHOST_PLUGINS_DIR": str(install["payload"] / "plugins")})
    assert fix == f"plughost install {install['payload']} --config-dir {install['config']} --account acme"
    assert lines == [f'[memory] skip=account-unset fix="{fix}"'], done.stderr
    assert "Traceback" not in done.stderr
