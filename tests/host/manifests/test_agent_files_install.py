"""The bakery's public agent after install: its IDENTITY.md, SOUL.md and KNOWLEDGE.md in the account's
home, the brand's publicAgent on the account, the account's copy kept on a reinstall (docs/agents.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plughost.runtime import agent_files
from tests.conftest import run_cli
from tests.host.manifests.conftest import bundle


@pytest.fixture(scope="module")
def bakery_payload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bakery") / "payload"
    result = bundle("bakery", out, premium=None)
    assert result.returncode == 0, result.stderr
    return out


def _install(payload: Path, tmp_path: Path, account: str = "acme"):
    from plughost.runtime import accounts
    from plughost.util import config

    if not accounts.account_dir(account).is_dir():
        accounts.create_account(account, config.home())
    return run_cli("install", str(payload), "--config-dir", str(tmp_path / "claude"), "--account", account)


def test_the_bundle_ships_the_brands_agent_files_beside_its_brand_json(bakery_payload: Path) -> None:
    shipped = sorted(p.relative_to(bakery_payload).as_posix() for p in (bakery_payload / "brand").rglob("*.md"))
    assert shipped == ["brand/agents/shopfront/IDENTITY.md", "brand/agents/shopfront/SOUL.md"]
    assert json.loads((bakery_payload / "brand.json").read_text())["publicAgent"] == "shopfront"


def test_after_install_the_public_agent_has_its_files(bakery_payload: Path, tmp_path: Path,
                                                      plughost_home: Path) -> None:
    result = _install(bakery_payload, tmp_path)
    assert result.returncode == 0, result.stderr
    folder = plughost_home / "accounts" / "acme" / "agents" / "shopfront"
    assert sorted(p.name for p in folder.iterdir()) == ["IDENTITY.md", "KNOWLEDGE.md", "SOUL.md"]
    assert (folder / "IDENTITY.md").read_text() == (bakery_payload / "brand/agents/shopfront/IDENTITY.md").read_text()
    assert agent_files.BEGIN in (folder / "KNOWLEDGE.md").read_text()
    account = json.loads((plughost_home / "accounts" / "acme" / "account.json").read_text())
    assert account["publicAgent"] == "shopfront"
    assert agent_files.subscriptions(plughost_home, "acme", "shopfront")[:3] == ["bakery", "faq", "handbook"]
    assert [r.fields()["reachable"] for r in agent_files.audit(plughost_home)] == ["true"]


def test_a_reinstall_keeps_the_owners_edits_and_restores_only_what_is_missing(
        bakery_payload: Path, tmp_path: Path, plughost_home: Path) -> None:
    assert _install(bakery_payload, tmp_path).returncode == 0
    folder = plughost_home / "accounts" / "acme" / "agents" / "shopfront"
    (folder / "IDENTITY.md").write_text("---\nkeywords: [sourdough]\n---\nThe owner's words.\n")
    (folder / "SOUL.md").unlink()
    result = _install(bakery_payload, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (folder / "IDENTITY.md").read_text().endswith("The owner's words.\n")
    assert "[installer] op=agent-file-kept agent=shopfront file=IDENTITY.md reason=account-copy" in result.stderr
    assert (folder / "SOUL.md").is_file()
    assert agent_files.subscriptions(plughost_home, "acme", "shopfront") == ["sourdough"]


def test_the_gate_reports_an_agent_whose_files_are_missing(bakery_payload: Path, tmp_path: Path,
                                                           plughost_home: Path) -> None:
    assert _install(bakery_payload, tmp_path).returncode == 0
    folder = plughost_home / "accounts" / "acme" / "agents" / "shopfront"
    (folder / "KNOWLEDGE.md").unlink()
    result = run_cli("boot", "--check", "--account", "acme")
    assert result.returncode == 0, result.stderr  # not fatal: the agent still answers from retrieval
    assert (f"[agent-files] op=reach WARN accountId=acme agent=shopfront reachable=false reason=files-missing "
            f"file=KNOWLEDGE.md path={folder}") in result.stderr


def test_doctor_reports_each_agents_reachability(bakery_payload: Path, tmp_path: Path, plughost_home: Path) -> None:
    from plughost.payload import doctor

    assert _install(bakery_payload, tmp_path).returncode == 0
    agents, problems = doctor.agent_reach(plughost_home)
    report = doctor.DoctorReport(tmp_path / "claude", agents=agents, problems=problems)
    assert "[doctor] agent accountId=acme agent=shopfront reachable=true" in report.lines()
    assert report.findings == 0
    (plughost_home / "accounts" / "acme" / "agents" / "shopfront" / "IDENTITY.md").unlink()
    report = doctor.DoctorReport(tmp_path / "claude", agents=doctor.agent_reach(plughost_home)[0])
    folder = plughost_home / "accounts" / "acme" / "agents" / "shopfront"
    assert (f"[doctor] FAIL agent accountId=acme agent=shopfront reachable=false reason=files-missing "
            f"file=IDENTITY.md path={folder}") in report.lines()
    assert report.findings == 1 and report.to_json()["agents"][0]["reachable"] == "false"
