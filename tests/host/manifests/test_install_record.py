"""The install record is where every process finds the install: after `plughost install --config-dir
DIR` (or `serve --config-dir DIR`) the claude runner's turns run in DIR, the gates check DIR, the
real CLI started in the runner's own environment connects the installed servers; and the hooks of
a payload far from the checkout run without `PLUGHOST_PYTHON` (the fallback generation recorded).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from plughost.payload.doctor_hooks import hook_env, plugin_hooks, run_command
from plughost.payload.generator import HOOK_PYTHON_FILE
from plughost.payload.launch import MINIMAL_PATH
from plughost.plugins.channels.claude_runner import ClaudeRunner
from plughost.plugins.channels.runner import session_id_for
from plughost.plugins.channels.runner_gate import check_agent_runner
from plughost.runtime import accounts
from plughost.runtime.host import Host
from plughost.runtime.types import GateContext
from tests.conftest import TOOLS, npx_bin, run_cli
from tests.host.manifests.conftest import bundle, connected_servers
from tests.support.channels_support import agent_turn
from tests.support.serve_helpers import start_serve, stop_process


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("built") / "payload"
    result = bundle("default", root, premium=tmp_path_factory.mktemp("no-premium"))
    assert result.returncode == 0, result.stderr
    return root


@pytest.fixture
def installed(built: Path, tmp_path: Path, plughost_home: Path) -> tuple[Path, Path]:
    """A copy of the payload installed into `tmp/cc` for account acme (recorded in the home's .env)."""
    payload, config = tmp_path / "payload", tmp_path / "cc"
    shutil.copytree(built, payload, symlinks=True)
    accounts.create_account("acme", plughost_home)
    done = run_cli("install", str(payload), "--config-dir", str(config), "--account", "acme")
    assert done.returncode == 0, done.stderr
    return payload, config


def _runner_host(plughost_home: Path, tmp_path: Path, **extra: str) -> Host:
    """A host as a user's `plughost serve` has it: only the data root (no config dir exported)."""
    env = {"PATH": MINIMAL_PATH, "HOME": str(tmp_path / "home"), "PLUGHOST_HOME": str(plughost_home),
           "PLUGHOST_AGENT": "claude", "PLUGHOST_EMBEDDER": "none", **extra}
    from plughost.util.config import load_env

    return Host(env=load_env(env)).load()


def test_after_install_the_runner_and_the_gates_use_the_installed_config_dir(installed, plughost_home: Path,
                                                                             tmp_path: Path) -> None:
    _, config = installed
    assert f"PLUGHOST_CONFIG_DIR={config}" in (plughost_home / ".env").read_text()
    # an exported CLAUDE_CONFIG_DIR (the user's own Claude Code) does not move the runner off the install
    host = _runner_host(plughost_home, tmp_path, CLAUDE_CONFIG_DIR=str(tmp_path / "users-own"))
    try:
        runner = ClaudeRunner.from_host(host)
        assert runner.config_dir == config
        sid = session_id_for("acme", "webchat:admin")
        assert runner.child_env(agent_turn({"role": "admin"}, host.principal, sid))["CLAUDE_CONFIG_DIR"] == str(config)
        gate = check_agent_runner(GateContext(host=host, env=host.env))
        assert gate.status == "warn"  # only: the `claude` program is not on this bare PATH
        assert [d["reason"] for d in gate.defects] == ["agent-missing"], gate.lines
        from plughost.payload.registration import config_dir

        assert config_dir(host.env) == config  # the registration gates' folder is the runner's
    finally:
        host.close()
    # nothing installed where the runner runs: the gate says so, naming the folder and its source
    host = _runner_host(plughost_home, tmp_path, PLUGHOST_CLAUDE_CONFIG_DIR=str(tmp_path / "empty"),
                        PLUGHOST_CLAUDE_BIN=shutil.which("true") or "/bin/true")
    try:
        gate = check_agent_runner(GateContext(host=host, env=host.env))
        assert gate.status == "warn" and [d["reason"] for d in gate.defects] == ["agent-no-install"], gate.lines
        assert f"config-dir={tmp_path / 'empty'} source=PLUGHOST_CLAUDE_CONFIG_DIR" in gate.lines[0]
    finally:
        host.close()


def test_serve_config_dir_is_the_runners(installed, plughost_home: Path, tmp_path: Path) -> None:
    """`serve --config-dir DIR` (no install record pointing there): the runner it builds runs in DIR."""
    _, config = installed
    other = tmp_path / "other"
    shutil.copytree(config, other, symlinks=True)
    env = {"ACCOUNT_ID": "acme", "PLUGHOST_AGENT": "claude", "PLUGHOST_CLAUDE_BIN": shutil.which("true") or "/bin/true"}
    served = start_serve("--config-dir", str(other), env=env)
    try:
        import time

        text = ""
        for _ in range(200):
            text = served.stderr_path.read_text(errors="replace")
            if "op=claude-config" in text:
                break
            time.sleep(0.1)
        assert f"[channels] op=claude-config config_dir={other} source=PLUGHOST_CLAUDE_CONFIG_DIR" in text
        assert f"config-dir={other}" in text  # the agent-runner gate checked that folder
    finally:
        stop_process(served.proc)


def _hook_commands(payload: Path) -> list[tuple[str, Path, str, str]]:
    """(plugin, root, event, command) of every hook in a payload's plugins."""
    out = []
    for hooks in sorted(payload.rglob("hooks/hooks.json")):
        root = hooks.parent.parent
        for event, groups in json.loads(hooks.read_text())["hooks"].items():
            for group in groups:
                out.extend((root.name, root, event, h["command"]) for h in group["hooks"])
    return out


def test_every_hook_runs_without_plughost_python_from_a_payload_outside_the_checkout(built: Path,
                                                                                   tmp_path: Path) -> None:
    """What the CLI's own `marketplace add` + `install` gives a hook: no settings env at all."""
    payload = tmp_path / "far" / "away" / "payload"
    shutil.copytree(built, payload, symlinks=True)
    config, project = tmp_path / "cc", tmp_path / "project"
    config.mkdir()
    project.mkdir()
    commands = _hook_commands(payload)
    assert {(p, e) for p, _, e, _ in commands} >= {("memory", "UserPromptSubmit"), ("memory", "PostToolUse"),
                                                  ("channels", "Stop")}
    for plugin, root, event, command in commands:
        env = hook_env(config, root, project, str(tmp_path / "home"))
        assert "PLUGHOST_PYTHON" not in env and env["PATH"] == MINIMAL_PATH
        assert run_command(plugin, event, command, env, project, 60) is None, (plugin, event)
    # without the generated fallback a payload away from any checkout falls to python3: a finding
    if subprocess.run(["/usr/bin/python3", "-c", "import host"], capture_output=True, cwd="/").returncode == 0:
        pytest.skip("this machine's python3 imports plughost: no broken fallback to show")
    (payload / "plugins" / "channels" / HOOK_PYTHON_FILE).unlink()
    root = payload / "plugins" / "channels"
    found = plugin_hooks("channels@x", root, lambda e, c: run_command(
        "channels@x", e, c, hook_env(config, root, project, str(tmp_path / "home")), project, 60))[1]
    assert len(found) == 1 and "reason=hook-failed event=Stop" in found[0], found


@pytest.mark.external
@pytest.mark.e2e
def test_the_real_cli_in_the_runners_environment_connects_the_installed_servers(installed, plughost_home: Path,
                                                                              tmp_path: Path) -> None:
    claude = str(npx_bin("claude"))
    node_dir = str(Path(shutil.which("node") or TOOLS / "node_modules" / ".bin" / "node").parent)
    (tmp_path / "home").mkdir()
    host = _runner_host(plughost_home, tmp_path, PATH=f"{node_dir}:{MINIMAL_PATH}", DISABLE_AUTOUPDATER="1",
                        DISABLE_TELEMETRY="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                        CLAUDE_CODE_TMPDIR=str(tmp_path))
    try:
        runner = ClaudeRunner.from_host(host)
        env = runner.child_env(agent_turn({"role": "admin"}, host.principal, session_id_for("acme", "webchat:admin")))
    finally:
        host.close()
    workdir = plughost_home / "accounts" / "acme" / "agent"
    workdir.mkdir(parents=True, exist_ok=True)
    listing = subprocess.run([claude, "mcp", "list"], env=env, cwd=workdir, capture_output=True, text=True,
                             timeout=180)
    state = connected_servers(listing.stdout)
    assert {s: state.get(s) for s in ("graph:graph", "memory:memory")} == {"graph:graph": True, "memory:memory": True}, \
        listing.stdout + listing.stderr
