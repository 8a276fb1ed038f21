"""The install's brand (plughost.runtime.install_brand): one resolver for the host, the gates and the
plugins; the installer's record; the install-brand gate; and an account-less install's tool error."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import anyio

from plughost.runtime.install_brand import check_install_brand, install_brand
from plughost.runtime.install_record import account_fix

BRAND = {"name": "acme-desk", "productName": "Acme Desk", "plugins": {"excluded": ["memory"]},
         "hostnames": {"public": "help.acme.test"}}


def payload(root: Path, brand: dict | None = None) -> Path:
    (root / "plugins").mkdir(parents=True)
    (root / "brand.json").write_text(json.dumps(brand or BRAND))
    return root


def test_the_payloads_brand_then_the_record_then_none(tmp_path: Path) -> None:
    p = payload(tmp_path / "payload")
    found = install_brand({}, p / "plugins")
    assert (found.source, found.name, found.product, found.excluded) == ("payload", "acme-desk", "Acme Desk", ["memory"])
    assert found.hostnames == {"public": "help.acme.test"}
    recorded = install_brand({"PLUGHOST_BRAND_FILE": str(p / "brand.json")}, tmp_path / "elsewhere" / "plugins")
    assert (recorded.source, recorded.product) == ("install", "Acme Desk")
    assert install_brand({}, tmp_path / "nowhere" / "plugins").source == "none"


def test_a_name_finds_the_payloads_brand_and_a_shipped_one(tmp_path: Path) -> None:
    p = payload(tmp_path / "payload")
    assert install_brand({"PLUGHOST_BRAND": "acme-desk"}, p / "plugins").path == p / "brand.json"
    assert install_brand({"PLUGHOST_BRAND": "bakery"}, p / "plugins").name == "bakery"
    nope = install_brand({"PLUGHOST_BRAND": "nope"}, p / "plugins")
    assert nope.problem and nope.problem.startswith("PLUGHOST_BRAND: brand 'nope' not found")


def test_a_missing_record_is_the_gates_finding_naming_the_file(tmp_path: Path) -> None:
    gone = tmp_path / "moved-away" / "brand.json"
    found = install_brand({"PLUGHOST_BRAND_FILE": str(gone)}, None)
    assert found.problem and str(gone) in found.problem and found.data == {}
    env = {"PLUGHOST_HOME": str(tmp_path / "home"), "ACCOUNT_ID": "acme", "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}
    ctx = SimpleNamespace(extras={"install_brand": found}, env=env, host=SimpleNamespace(plugins_dir=None))
    result = check_install_brand(ctx)  # type: ignore[arg-type]
    assert result.status == "fail"
    assert result.lines[0].startswith(f"[install-brand] FATAL reason=brand-file-missing source=install path={gone} fix=")
    # the fix names this install's config dir and account; only the payload's new place is the user's to say
    assert f"plughost install PAYLOAD --config-dir {tmp_path / 'cc'} --account acme" in result.lines[0], result.lines[0]
    ok = check_install_brand(SimpleNamespace(extras={"install_brand": install_brand({}, payload(tmp_path / "p") / "plugins")},
                                             env={}, host=SimpleNamespace(plugins_dir=None)))  # type: ignore[arg-type]
    assert ok.status == "ok" and ok.lines[0].startswith("[install-brand] op=resolved brand=acme-desk source=payload")


def test_an_invalid_brand_file_is_a_finding(tmp_path: Path) -> None:
    p = payload(tmp_path / "payload", {"name": "Acme Desk"})  # not kebab-case, no productName
    result = check_install_brand(SimpleNamespace(extras={}, env={}, host=SimpleNamespace(plugins_dir=p / "plugins")))  # type: ignore[arg-type]
    assert result.status == "fail" and "reason=brand-unusable source=payload" in result.lines[0]


def test_the_installer_records_the_payloads_copy_and_retires_the_name(tmp_path: Path, plughost_home: Path, cli) -> None:
    from plughost.runtime import accounts

    brand = tmp_path / "acme.json"
    brand.write_text(json.dumps({**BRAND, "plugins": {"excluded": []}}))
    out = tmp_path / "payload"
    assert cli("bundle", str(brand), "--out", str(out)).returncode == 0
    accounts.create_account("acme", plughost_home)
    (plughost_home / ".env").write_text("PLUGHOST_BRAND=acme-desk\n")  # what an earlier install wrote
    done = cli("install", str(out), "--config-dir", str(tmp_path / "cfg"), "--account", "acme")
    assert done.returncode == 0, done.stderr
    text = (plughost_home / ".env").read_text()
    assert f"PLUGHOST_BRAND_FILE={out / 'brand.json'}\n" in text and "PLUGHOST_BRAND=" not in text
    assert json.loads((out / "brand.json").read_text())["productName"] == "Acme Desk"


def test_a_tool_that_needs_the_account_names_the_fix(tmp_path: Path, plughost_home: Path) -> None:
    from plughost.mcp.server import call_served_tool
    from plughost.runtime.tooltable import ServedTool
    from plughost.util.errors import AccountUnset

    def needs() -> str:
        raise AccountUnset("ACCOUNT_ID: not set; expected the account")

    tool = ServedTool(name="t", description="", schema={"type": "object", "properties": {}}, eager=False, handler=needs,
                      validator=SimpleNamespace(iter_errors=lambda _args: []))
    env = {"PLUGHOST_HOME": str(plughost_home), "PLUGHOST_PLUGINS_DIR": str(tmp_path / "payload" / "plugins" / "memory" / ".."),
           "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    result = anyio.run(lambda: call_served_tool("memory", {"t": tool}, "t", {}, env=env))
    text = result.content[0].text
    assert result.is_error and text.startswith("ACCOUNT_ID: not set; expected the account: this install has no account")
    assert text.endswith(f"run: plughost account create ID && plughost install {tmp_path / 'payload'} "
                         f"--config-dir {tmp_path / 'cfg'} --account ID")
    (plughost_home / "accounts" / "acme").mkdir(parents=True)
    (plughost_home / "accounts" / "acme" / "account.json").write_text("{}")
    assert account_fix(env).endswith(f"--config-dir {tmp_path / 'cfg'} --account acme")
