"""Reports are agent-written like briefings: a secret in a report's title or body is never stored
(the store file read raw)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from plughost.runtime.tooltable import call_tool

SECRETS = ("Hunter2Secret99", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "DockerPw2024x")


def test_a_report_keeps_no_secret(make_host, plughost_home: Path) -> None:
    from plughost.runtime.accounts import create_account

    create_account("acct-rep", plughost_home)
    host = make_host(ACCOUNT_ID="acct-rep")
    body = (f"Deploy notes: db password={SECRETS[0]}, billing key {SECRETS[1]}, "
            f"then docker login -u ops -p {SECRETS[2]} registry.example.com")
    call_tool(host, "memory", "memory-report-write", {"title": f"deploy password is {SECRETS[0]}", "body": body})
    host.close()
    con = sqlite3.connect(plughost_home / "graph.sqlite")
    try:
        raw = "\n".join(str(r) for r in con.execute("SELECT properties FROM nodes"))
    finally:
        con.close()
    assert "Deploy notes" in raw
    assert [s for s in SECRETS if s in raw] == []
