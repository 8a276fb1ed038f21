"""A bad ``account.json`` (deeply nested, malformed, not an object, a wrong-typed field) is one line
naming the file and what was expected, exit 2, from every command that reads it: all of them read
it through ``plughost.runtime.accounts.read_account_json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

ACCOUNT = "acme"
EXPECTED = "expected a JSON object of account settings (account.schema.json)"
BAD = {
    "deep": ("[" * 100_000, f"nested more than 32 levels deep; {EXPECTED}"),
    "malformed": ('{"accountId": "acme",', f"invalid JSON at line 1 column 22 (Expecting property name enclosed in "
                                            f"double quotes); {EXPECTED}"),
    "not-an-object": ('["acme"]', f"(top level): {EXPECTED}, got an array"),
    "huge-number": ('{"accountId": "acme", "n": ' + "9" * 5000 + "}",
                    "invalid JSON (a number of more than 4300 digits); " + EXPECTED),
    "wrong-type": (json.dumps({"accountId": ACCOUNT, "enabledPlugins": [], "agents": {"sales": "pricing"}}),
                   "agents.sales: expected object (got str 'pricing')"),
}


def _one_line(done, path: Path, what: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"plughost: {path}: {what}"


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_account_json_is_one_line_from_every_command(plughost_home: Path, case: str) -> None:
    assert run_cli("account", "create", ACCOUNT).returncode == 0
    path = plughost_home / "accounts" / ACCOUNT / "account.json"
    text, what = BAD[case]
    path.write_text(text)
    env = {"ACCOUNT_ID": ACCOUNT}
    _one_line(run_cli("memory", "search", "opening hours", env={**env, "AGENT_SLUG": "sales"}), path, what)
    listed = run_cli("account", "list", env=env)
    assert listed.returncode == 0 and f"invalid  {path}: {what}" in listed.stdout, listed.stdout
    for argv in (["boot", "--check"], ["memory", "search", "x"], ["memory", "audit"], ["report", "list"],
                 ["channels", "retry"], ["schedule", "list"], ["admin", "http-token"], ["graph", "purge"]):
        _one_line(run_cli(*argv, env=env), path, what)  # before it does anything
    (path.parent / "users.json").unlink()  # a stub account: `account create` reads what it would keep
    _one_line(run_cli("account", "create", ACCOUNT, env=env), path, what)
