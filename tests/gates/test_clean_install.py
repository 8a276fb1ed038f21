"""Acceptance: on a clean install made by `plughost bundle` + `plughost account create` +
`plughost install`, `plughost boot --check` prints an ok line for every gate and exits 0 (the CLI in
process, isolated; `serve` a real process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gates_support import assert_every_gate_ok, write

pytestmark = pytest.mark.e2e  # end to end: -m "not e2e" leaves it out locally; CI runs it

REPO = Path(__file__).resolve().parents[2]


def _clean_install(cli, tmp_path: Path, brand: str) -> tuple[Path, Path]:
    payload, cc = tmp_path / "payload", tmp_path / "claude-config"
    steps = [("bundle", brand, "--premium-dir", str(REPO / "examples" / "premium"), "--out", str(payload)),
             ("account", "create", "acme", "--admin-phone", "+15550001"),
             ("install", str(payload), "--config-dir", str(cc), "--account", "acme")]
    for step in steps:
        proc = cli(*step)
        assert proc.returncode == 0, (step, proc.stderr)
    return payload, cc


@pytest.mark.parametrize("brand", ["default", "studio"])
def test_boot_check_on_a_clean_install_is_all_ok(cli, tmp_path, plughost_home, brand):
    payload, cc = _clean_install(cli, tmp_path, brand)
    proc = cli("boot", "--check", "--json", "--account", "acme", "--config-dir", str(cc))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["exit"] == 0
    assert_every_gate_ok(report, proc.stderr)
    by_gate = {g["gate"]: g for g in report["gates"]}
    if brand == "studio":  # the install's .env points boot at the payload: premium subs are inspected
        assert by_gate["skill-registration"]["inspected"] == 3
        assert by_gate["tool-registration"]["inspected"] >= 2


def test_clean_install_then_drift_is_caught(cli, tmp_path, plughost_home):
    """The same install, then a sub unregistered from settings.json and a specialist naming an
    excluded plugin: skill-registration says WARN (boot goes on), the strip line is printed."""
    payload, cc = _clean_install(cli, tmp_path, "studio")
    settings = json.loads((cc / "settings.json").read_text())
    settings["enabledPlugins"].pop("planner@studio-premium-studio")
    (cc / "settings.json").write_text(json.dumps(settings))
    write(plughost_home / "accounts" / "acme" / "specialists" / "agents" / "concierge.md",
          "---\nname: concierge\ntools: Read, mcp__plugin_channels_channels__send-reply\n---\nBody\n")
    proc = cli("boot", "--check", "--account", "acme", "--config-dir", str(cc))
    lines = proc.stderr.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert ("[skill-registration] op=drift WARN accountId=acme plugin=planner "
            "expected=planner@studio-premium-studio missing=enabledPlugins") in lines
    assert ("specialist-tool-strip specialist=concierge plugin=channels "
            "tools=mcp__plugin_channels_channels__send-reply reason=brand-excluded") in lines


def _gate_lines(stderr: str) -> list[str]:
    """The lines the gate runner printed, up to its summary (whose `ms=` timing is dropped)."""
    out = []
    for line in stderr.splitlines():
        if line.startswith("[boot] op=gates"):
            out.append(line.rsplit(" ms=", 1)[0])
            return out
        out.append(line)
    raise AssertionError(f"no gate summary in:\n{stderr}")


@pytest.mark.parametrize("brand", ["default", "studio"])
def test_boot_and_serve_print_identical_gate_lines_and_serve_the_brand(cli, tmp_path, plughost_home, brand):
    """One install, no flags but the account: both commands read the install's .env through the one
    configuration loader, so they inspect the same plugins with the same gates and say the same."""
    from serve_helpers import raw_request, start_serve

    _clean_install(cli, tmp_path, brand)
    boot = cli("boot", "--check", "--account", "acme")
    assert boot.returncode == 0, boot.stderr
    serve = start_serve("--account", "acme")
    try:
        health = raw_request(serve.port, "/healthz").json()
        webchat = raw_request(serve.port, "/channels/webchat")
    finally:
        code, _, serve_stderr = serve.terminate()
    assert code == 0, serve_stderr
    assert _gate_lines(serve_stderr) == _gate_lines(boot.stderr)
    plugins = health["plugins"]
    listing = cli("plugins", "list", "--json")
    statuses = {row["name"]: row["status"] for row in json.loads(listing.stdout)["plugins"]}
    if brand == "studio":  # the brand excludes channels: it does not load, so nothing of it is served
        assert plugins["excluded"] == ["channels"] and "channels" not in plugins["loaded"]
        assert webchat.status == 404
        assert statuses["channels"] == "excluded"
        assert {"greeter", "notes", "planner"} <= set(plugins["loaded"])  # the payload's premium plugins
        refused = cli("mcp", "serve", "channels")
        assert refused.returncode == 2 and "excluded by brand 'studio'" in refused.stderr
    else:
        assert plugins["excluded"] == [] and "channels" in plugins["loaded"]
        assert webchat.status == 200


def test_the_gate_checks_the_folder_claude_code_starts_not_the_cache(cli, tmp_path, plughost_home):
    payload, cc = _clean_install(cli, tmp_path, "studio")
    (payload / "premium-plugins" / "greeter" / "mcp" / "__main__.py").unlink()  # the cache copy keeps its own
    proc = cli("boot", "--check", "--account", "acme", "--config-dir", str(cc))
    assert ("[tool-registration] op=drift WARN accountId=acme plugin=greeter expected-server=greeter "
            "reason=server-missing") in proc.stderr.splitlines(), proc.stderr


def test_a_moved_payload_not_reinstalled_and_a_stale_manifest_are_named(cli, tmp_path, plughost_home):
    payload, cc = _clean_install(cli, tmp_path, "studio")
    # a manifest generated elsewhere (absolute folders of another tree) is a stale path, named
    manifest = payload / "premium-plugins" / "greeter" / ".claude-plugin" / "plugin.json"
    doc = json.loads(manifest.read_text())
    doc["mcpServers"]["greeter"]["env"]["PLUGHOST_PLUGINS_DIR"] = "/old/build/payload/plugins"
    manifest.write_text(json.dumps(doc))
    lines = cli("boot", "--check", "--account", "acme", "--config-dir", str(cc)).stderr.splitlines()
    assert ("[tool-registration] op=drift WARN accountId=acme plugin=greeter expected-server=greeter "
            f"reason=stale-path path={manifest}") in lines
    payload.rename(tmp_path / "moved")  # and not installed again: Claude Code would find nothing there
    lines = cli("boot", "--check", "--account", "acme", "--config-dir", str(cc)).stderr.splitlines()
    assert ("[tool-registration] op=drift WARN accountId=acme plugin=graph expected-server=graph "
            "reason=payload-missing") in lines


def test_a_drifting_premium_specialist_refuses_boot_and_serve_alike(cli, tmp_path, plughost_home):
    """The install's premium sub-plugins come from its .env for both commands: a typo'd tool in one
    of their specialists refuses `boot --check` and `serve` with the same line."""
    payload, _ = _clean_install(cli, tmp_path, "studio")
    agent = payload / "premium-plugins" / "studio" / "plugins" / "notes" / "agents" / "note-taker.md"
    agent.write_text(agent.read_text().replace("tools:", "tools: mcp__plugin_notes_notes__note-ad,", 1))
    boot = cli("boot", "--check", "--account", "acme")
    serve = cli("serve", "--account", "acme", "--port", "0")
    assert boot.returncode == 1 and serve.returncode == 1, (boot.stderr, serve.stderr)
    line = next(x for x in boot.stderr.splitlines() if "reason=specialist-tool-drift" in x)
    assert "tool=mcp__plugin_notes_notes__note-ad drift=unknown-tool-in-plugin" in line
    assert line in serve.stderr.splitlines()
    assert "refusing to serve: fatal boot gate(s) failed: specialist-tool-drift" in serve.stderr


BOOT_OFF_PATH = ("jsonschema", "mcp", "neo4j", "numpy", "onnxruntime", "starlette", "uvicorn")
"""What ``boot --check`` does without: the heavy imports, and jsonschema (tool arguments are checked
on a call, a valid manifest by its compiled validator; jsonschema explains a failure only)."""


def test_boot_check_imports_nothing_it_does_not_use(cli, tmp_path, plughost_home):
    import os
    import subprocess
    import sys

    _, cc = _clean_install(cli, tmp_path, "default")
    code = ("import json, sys\nfrom plughost.cli.main import main\n"
            f"code = main(['boot', '--check', '--account', 'acme', '--config-dir', {str(cc)!r}])\n"
            "print(json.dumps([code, sorted(sys.modules)]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PLUGHOST_HOME": str(plughost_home)})
    assert proc.returncode == 0, proc.stderr
    exit_code, modules = json.loads(proc.stdout.splitlines()[-1])
    assert exit_code == 0, proc.stderr
    assert sorted({m.split(".")[0] for m in modules} & set(BOOT_OFF_PATH)) == []
    assert "importlib.metadata" not in modules  # plughost's own entry points: plughost.runtime.entry_points
