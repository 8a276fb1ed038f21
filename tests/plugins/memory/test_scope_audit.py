"""Private by default, and the legacy nodes that are not: every write path stamps a scope (a
write without one is ``admin``), ``memory audit`` lists the unscoped nodes older writes left
(every scope reads them) and ``--fix-scope admin`` stamps them, on each backend."""

from __future__ import annotations

import json

import pytest
from memory_support import ACCOUNT, cli

from plughost import Principal
from plughost.ports.graph import Guards
from tests.backends import BACKENDS, use_backend, wipe


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch) -> str:
    use_backend(monkeypatch, request.param)
    return request.param


def test_audit_lists_and_fixes_unscoped_nodes(backend, make_host, tmp_path) -> None:
    host = make_host(ACCOUNT_ID=ACCOUNT)
    store = host.store()
    wipe(store, ACCOUNT)
    for nid, label in (("legacy-note", "Note"), ("legacy-person", "Person"), ("legacy-person-2", "Person")):
        store.upsert_node([label], {"name": nid},
                          guards=Principal.system(ACCOUNT).guards, node_id=nid)  # no guards: as before
    store.upsert_node(["Note"], {"name": "menu", "scope": "public"},
                      guards=Principal.system(ACCOUNT).guards, node_id="public-note")

    written = cli("memory", "write", "--labels", "Event", "--properties", '{"name": "Stocktake"}')
    assert written.returncode == 0, written.stderr
    new_id = json.loads(written.stdout)["elementId"]
    assert store.get(new_id, guards=Guards(ACCOUNT)).properties["scope"] == "admin"  # a write without a scope

    done = cli("memory", "audit", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["unscoped"] == {"Note": {"count": 1, "ids": ["legacy-note"]},
                                                   "Person": {"count": 2, "ids": ["legacy-person", "legacy-person-2"]}}
    assert "[memory-audit] unscoped labels=Note,Person count=3" in done.stderr
    text = cli("memory", "audit")
    assert "nodes without a scope (every scope reads them): 3" in text.stdout
    assert "Person: 2 (e.g. legacy-person, legacy-person-2)" in text.stdout and "--fix-scope admin" in text.stdout

    narrowed = cli("memory", "audit", "--fix-scope", "admin", ALLOWED_SCOPES="public")
    assert narrowed.returncode == 2 and "Traceback" not in narrowed.stderr
    assert narrowed.stderr.strip().splitlines()[-1].startswith("plughost: memory audit --fix-scope: admin only")
    bad = cli("memory", "audit", "--fix-scope", "no such")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1] == (
        "plughost: --fix-scope: 'no such' is not a scope name (letters, digits, '-', '_'; e.g. admin)")

    fixed = cli("memory", "audit", "--fix-scope", "admin")
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.splitlines()[0] == "fix-scope: 3 nodes without a scope now scope admin"
    assert "[memory-audit] op=fix-scope accountId=acct-a scope=admin stamped=3" in fixed.stderr
    assert "nodes without a scope (every scope reads them): 0" in fixed.stdout
    public = Guards(ACCOUNT, ("public",))
    assert store.get("legacy-note", guards=public) is None  # no longer read by a public visitor
    assert store.get("legacy-note", guards=Guards(ACCOUNT)).properties["scope"] == "admin"
    assert store.get("public-note", guards=public).properties["scope"] == "public"  # explicit scopes stay
    again = cli("memory", "audit", "--fix-scope", "admin", "--json")
    report = json.loads(again.stdout)
    assert report["fixScope"] == {"scope": "admin", "stamped": 0} and report["unscoped"] == {}
