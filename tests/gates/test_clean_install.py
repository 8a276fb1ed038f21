"""Acceptance: on a clean install made by `plughost bundle` + `plughost install` + `plughost account
create`, `plughost boot --check` prints an ok line for every gate and exits 0 (real subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gates_support import assert_every_gate_ok, write

REPO = Path(__file__).resolve().parents[2]


def _clean_install(cli, tmp_path: Path, brand: str) -> tuple[Path, Path]:
    payload, cc = tmp_path / "payload", tmp_path / "claude-config"
    steps = [("bundle", brand, "--premium-dir", str(REPO / "examples" / "premium"), "--out", str(payload)),
             ("install", str(payload), "--config-dir", str(cc), "--account", "acme"),
             ("account", "create", "acme", "--admin-phone", "+15550001")]
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
    excluded plugin: skill-registration says FATAL (boot goes on), the strip line is printed."""
    payload, cc = _clean_install(cli, tmp_path, "studio")
    settings = json.loads((cc / "settings.json").read_text())
    settings["enabledPlugins"].pop("planner@studio-premium-studio")
    (cc / "settings.json").write_text(json.dumps(settings))
    write(plughost_home / "accounts" / "acme" / "specialists" / "agents" / "concierge.md",
          "---\nname: concierge\ntools: Read, mcp__plugin_channels_channels__send-reply\n---\nBody\n")
    proc = cli("boot", "--check", "--account", "acme", "--config-dir", str(cc))
    lines = proc.stderr.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert ("[skill-registration] op=drift FATAL accountId=acme plugin=planner "
            "expected=planner@studio-premium-studio missing=enabledPlugins") in lines
    assert ("specialist-tool-strip specialist=concierge plugin=channels "
            "tools=mcp__plugin_channels_channels__send-reply reason=brand-excluded") in lines
