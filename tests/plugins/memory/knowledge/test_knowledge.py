"""A public agent's KNOWLEDGE.md: assembled from the public documents its keywords match, rebuilt when a
public document is written, edited or deleted (never for a private one), the owner's part kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plughost.runtime import agent_files as af
from plughost.runtime import hooktable
from plughost.runtime.accounts import create_account
from plughost.runtime.tooltable import call_tool

ACCOUNT = "acme"
HOURS = "# Opening hours\n\nWe open at 7am on weekdays.\n\n## Sundays\n\nClosed on Sundays.\n"


@pytest.fixture
def host(make_host, plughost_home: Path):
    folder = create_account(ACCOUNT, plughost_home)
    data = json.loads((folder / "account.json").read_text())
    (folder / "account.json").write_text(json.dumps({**data, "publicAgent": "counter"}))
    af.write_file(plughost_home, ACCOUNT, "counter", af.IDENTITY,
                  "---\nkeywords: [opening hours, sourdough]\n---\nYou are the counter.\n")
    return make_host(ACCOUNT_ID=ACCOUNT)


def _ingest(host, content: str, attachment: str, scope: str | None = "public") -> dict:
    args = {"content": content, "attachmentId": attachment, **({"scope": scope} if scope else {})}
    return call_tool(host, "memory", "memory-ingest", args)


def _assembled(home: Path) -> str:
    return af.assembled_part(af.knowledge(home, ACCOUNT, "counter"))


def test_editing_a_public_document_changes_knowledge(host, plughost_home: Path,
                                                     capfd: pytest.CaptureFixture[str]) -> None:
    _ingest(host, HOURS, "hours")
    first = _assembled(plughost_home)
    assert first.startswith("## Opening hours\nSource: Opening hours (matched: opening hours)")
    assert "We open at 7am on weekdays." in first and "### Sundays\nClosed on Sundays." in first
    _ingest(host, HOURS.replace("7am", "8am"), "hours")
    assert "We open at 8am on weekdays." in _assembled(plughost_home)
    assert "7am" not in _assembled(plughost_home)
    err = capfd.readouterr().err
    assert "[knowledge] op=rebuild accountId=acme agent=counter reason=memory-ingest keywords=2 documents=1 changed=true" in err


def test_a_private_document_is_never_assembled_nor_triggers_a_rebuild(host, plughost_home: Path,
                                                                      capfd: pytest.CaptureFixture[str]) -> None:
    _ingest(host, "# Sourdough costing\n\nOur sourdough margin is 60%.\n", "costing", scope=None)
    assert af.knowledge(plughost_home, ACCOUNT, "counter") is None
    assert "[knowledge]" not in capfd.readouterr().err
    _ingest(host, "# Sourdough\n\nBaked every morning.\n", "bread")
    assembled = _assembled(plughost_home)
    assert "Baked every morning." in assembled and "margin" not in assembled


def test_deleting_a_public_document_takes_it_out_and_the_owners_part_stays(host, plughost_home: Path) -> None:
    doc = _ingest(host, HOURS, "hours")
    path = af.agent_dir(plughost_home, ACCOUNT, "counter") / af.KNOWLEDGE
    path.write_text("Ask for Maria at the counter.\n\n" + path.read_text())
    call_tool(host, "memory", "memory-delete", {"id": doc["elementId"]})
    text = path.read_text()
    assert text.startswith("Ask for Maria at the counter.\n\n")
    assert "No public document matches this agent's keywords (opening hours, sourdough) yet." in text
    assert "7am" not in text


def test_hook_plughost_knowledge_changed(host, plughost_home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The console's call after the owner changes an agent's keywords: the memory plugin reassembles."""
    _ingest(host, "# Allergens\n\nEvery cake may contain nuts.\n", "allergens")
    assert "nuts" not in _assembled(plughost_home)  # no keyword matches it yet
    af.write_file(plughost_home, ACCOUNT, "counter", af.IDENTITY, "---\nkeywords: [allergens]\n---\nHi.\n")
    errors = host.call_each(hooktable.KNOWLEDGE_CHANGED, account_id=ACCOUNT, agents=["counter"], reason="console")
    assert errors == []
    assert "Every cake may contain nuts." in _assembled(plughost_home)
    assert "reason=console" in capfd.readouterr().err


def test_a_bad_identity_is_a_warn_line_and_the_write_stands(host, plughost_home: Path,
                                                            capfd: pytest.CaptureFixture[str]) -> None:
    (af.agent_dir(plughost_home, ACCOUNT, "counter") / af.IDENTITY).write_text("---\nkeywords: [a\n---\n")
    assert _ingest(host, HOURS, "hours")["sections"] == 2
    err = capfd.readouterr().err
    assert "[knowledge] op=rebuild WARN accountId=acme agent=counter reason=memory-ingest" in err
    assert "IDENTITY.md: front matter: invalid YAML" in err


def test_a_public_collections_sync_rebuilds_and_a_private_ones_does_not(host, plughost_home: Path,
                                                                        tmp_path: Path) -> None:
    from tests.conftest import run_cli

    public, private = tmp_path / "site", tmp_path / "books"
    public.mkdir(), private.mkdir()
    (public / "hours.md").write_text(HOURS)
    (private / "sourdough.md").write_text("# Sourdough costs\n\nFlour is 40p a loaf.\n")
    env = {"ACCOUNT_ID": ACCOUNT}
    assert run_cli("memory", "collection", "add", "books", str(private), env=env).returncode == 0
    assert af.knowledge(plughost_home, ACCOUNT, "counter") is None
    result = run_cli("memory", "collection", "add", "site", str(public), "--scope", "public", env=env)
    assert result.returncode == 0, result.stderr
    assert "reason=collection-sync" in result.stderr
    assert "We open at 7am on weekdays." in _assembled(plughost_home)
    (public / "hours.md").write_text(HOURS.replace("7am", "6am"))
    assert run_cli("memory", "collection", "sync", "site", env=env).returncode == 0
    assert "We open at 6am on weekdays." in _assembled(plughost_home) and "40p" not in _assembled(plughost_home)


def test_plughost_memory_ingest_rebuilds_as_the_tool_does(host, plughost_home: Path, tmp_path: Path) -> None:
    from tests.conftest import run_cli

    (tmp_path / "hours.md").write_text(HOURS)
    result = run_cli("memory", "ingest", str(tmp_path / "hours.md"), "--scope", "public", env={"ACCOUNT_ID": ACCOUNT})
    assert result.returncode == 0, result.stderr
    assert "We open at 7am on weekdays." in _assembled(plughost_home)


PRICES = "# Sourdough prices\n\nA sourdough loaf is £4.20.\n\n## Rolls\n\nRolls are 80p each.\n"


def _owner():
    from plughost import Principal

    return Principal.owner(ACCOUNT).guards


def _documents(host) -> list:
    return host.store().find(guards=_owner(), labels=["KnowledgeDocument"], limit=10)


def test_ingesting_an_edited_file_again_replaces_its_document(host, plughost_home: Path, tmp_path: Path) -> None:
    from tests.conftest import run_cli

    prices = tmp_path / "prices.md"
    prices.write_text(PRICES)
    env = {"ACCOUNT_ID": ACCOUNT}
    assert run_cli("memory", "ingest", str(prices), "--scope", "public", env=env).returncode == 0
    prices.write_text(PRICES.replace("£4.20", "£4.50"))
    again = run_cli("memory", "ingest", str(prices), "--scope", "public", env=env)
    assert again.returncode == 0, again.stderr
    docs = _documents(host)
    assert len(docs) == 1 and docs[0].properties["attachmentId"] == f"file:{prices.resolve()}"
    assembled = _assembled(plughost_home)
    assert "£4.50" in assembled and "£4.20" not in assembled
    chunks = host.store().find(guards=_owner(), labels=["Chunk"], limit=50)
    assert "£4.20" not in " ".join(c.properties["content"] for c in chunks)


def test_an_older_content_keyed_version_is_replaced_with_one_line(host, plughost_home: Path, tmp_path: Path) -> None:
    from tests.conftest import run_cli

    prices = tmp_path / "prices.md"
    prices.write_text(PRICES)
    env = {"ACCOUNT_ID": ACCOUNT}
    # a store from before ids followed the file: the document is keyed by a hash of its text
    old = run_cli("memory", "ingest", str(prices), "--scope", "public", "--attachment-id", "sha256:0123abcd", env=env)
    old_id = json.loads(old.stdout)["elementId"]
    prices.write_text(PRICES.replace("£4.20", "£4.50"))
    again = run_cli("memory", "ingest", str(prices), "--scope", "public", env=env)
    assert again.returncode == 0, again.stderr
    assert [d.properties["attachmentId"] for d in _documents(host)] == [f"file:{prices.resolve()}"]
    lines = [x for x in again.stderr.splitlines() if x.startswith("[memory-ingest] replaced")]
    assert len(lines) == 1 and f"older={old_id}" in lines[0] and "attachmentId=sha256:0123abcd" in lines[0]
    assembled = _assembled(plughost_home)
    assert "£4.50" in assembled and "£4.20" not in assembled
    # an explicit id, or a document of another title, is left alone
    (tmp_path / "other.md").write_text("# Opening hours\n\nWe open at 7am.\n")
    run_cli("memory", "ingest", str(tmp_path / "other.md"), "--attachment-id", "sha256:feed", env=env)
    assert run_cli("memory", "ingest", str(prices), "--scope", "public", env=env).returncode == 0
    assert len(_documents(host)) == 2
