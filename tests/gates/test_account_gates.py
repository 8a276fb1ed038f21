"""account-id-env (fatal) and admin-identity-binding (informational), one test per defect class."""

from __future__ import annotations

from gates_support import assert_all_ran, write


def test_account_id_env_unset_refuses_boot(install):
    report = install.boot(ACCOUNT_ID="")
    [line] = report.outcome("account-id-env").lines
    assert line.startswith("[graph-health] account-id-env FATAL reason=unset fix=")  # and it says what to do
    assert "ACCOUNT_ID" in line
    assert report.exit_code == 1
    assert_all_ran(report)


def test_account_id_env_unknown_refuses_boot(install):
    report = install.boot(ACCOUNT_ID="nobody-at-all")
    lines = report.outcome("account-id-env").lines
    assert len(lines) == 1 and lines[0].startswith("[graph-health] account-id-env FATAL reason=not-on-disk id=nobody-a")
    assert report.exit_code == 1
    assert_all_ran(report)


def test_account_id_env_malformed_refuses_boot(install):
    report = install.boot(ACCOUNT_ID="../etc")
    assert report.outcome("account-id-env").lines == ["[graph-health] account-id-env FATAL reason=malformed id=../etc"]
    assert report.exit_code == 1


def test_account_id_env_gate_logic_rejects_an_invalid_account_json(install):
    """plughost.runtime.accounts' version of the gate also validates account.json against its schema."""
    from plughost.runtime.accounts import check_account_id_env
    from plughost.runtime.types import GateContext

    write(install.home / "accounts" / "broken" / "account.json", '{"accountId": "broken"}')
    host = install.host()
    result = check_account_id_env(GateContext(host=host, env={**host.env, "ACCOUNT_ID": "broken"}))
    assert result.status == "fail"
    line = result.lines[0]
    assert line.startswith("[graph-health] account-id-env FATAL reason=invalid-account-json id=broken detail=")
    assert "enabledPlugins: required field is missing" in line


def test_account_id_env_valid(install):
    install.account("acme-corporation")
    report = install.boot(ACCOUNT_ID="acme-corporation")
    lines = report.outcome("account-id-env").lines
    assert lines[0] == "[graph-health] account-id-env present=true id=acme-cor matches-on-disk=true"
    assert lines[1].startswith("startup-self-test account-id-env=ok inspected=")
    assert report.exit_code == 0
    assert_all_ran(report)


def _bindings(install, users):
    install.account("acme", admin_phones=["+1 555 0001", "+15550002", "+15550003"], admins=["owner"], users=users)


def test_admin_phone_without_users_binding_is_reported_and_boot_goes_on(install):
    _bindings(install, [{"userId": "owner", "phone": "+15550001"}, {"userId": "bob", "phone": "+15550002"}])
    report = install.boot()
    lines = report.outcome("admin-identity-binding").lines
    assert "[admin-identity] binding-drift accountId=acme phone=+15550003 reason=no-users-binding" in lines
    assert report.outcome("admin-identity-binding").status == "warn"
    assert report.exit_code == 0
    assert_all_ran(report)


def test_admin_phone_bound_to_non_admin_user_is_reported(install):
    _bindings(install, [{"userId": "owner", "phone": "+15550001"}, {"userId": "bob", "phone": "+1-555-0002"},
                        {"userId": "carol", "phone": "+15550003"}])
    report = install.boot()
    assert report.outcome("admin-identity-binding").lines == [
        "[admin-identity] binding-drift accountId=acme phone=+15550002 reason=userid-not-admin userId=bob",
        "[admin-identity] binding-drift accountId=acme phone=+15550003 reason=userid-not-admin userId=carol",
    ]
    assert report.exit_code == 0
    assert_all_ran(report)


def test_consistent_bindings_are_silent_but_for_the_ok_line(install):
    install.account("acme", admin_phones=["+15550001", "+15550002"], admins=["owner", {"userId": "bob"}],
                    users=[{"userId": "owner", "phone": "+1 (555) 0001"}, {"userId": "bob", "phone": "+15550002"}])
    report = install.boot()
    assert report.outcome("admin-identity-binding").lines == ["startup-self-test admin-identity-binding=ok inspected=2"]
    assert not any(line.startswith("[admin-identity]") for line in report.lines)
