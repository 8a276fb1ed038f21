"""The one resolver (host/ports/principal.py): every input, every role of the table, narrowing only."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plughost.ports.principal import ROLES, Role, child_env, resolve
from plughost.util.errors import UserError

A = "acct-a"


@pytest.mark.parametrize(("env", "role", "scopes", "admin", "session"), [
    ({}, Role.OPERATOR, None, True, None),
    ({"ACCOUNT_ID": A}, Role.OWNER, None, True, None),
    ({"ACCOUNT_ID": A, "ALLOWED_SCOPES": "public,shared"}, Role.SCOPED, ("public", "shared"), False, None),
    ({"ACCOUNT_ID": A, "ALLOWED_SCOPES": ""}, Role.SCOPED, (), False, None),
    ({"ACCOUNT_ID": A, "AGENT_SLUG": "bot"}, Role.AGENT, None, False, None),
    # the holes: a session alone, or a runner's public turn, acted as admin
    ({"ACCOUNT_ID": A, "SESSION_ID": "s1"}, Role.SESSION, ("public",), False, "s1"),
    ({"ACCOUNT_ID": A, "PLUGHOST_SESSION_ID": "r1"}, Role.SESSION, ("public",), False, "r1"),
    ({"ACCOUNT_ID": A, "PLUGHOST_SESSION_ROLE": "public", "PLUGHOST_SESSION_ID": "r1"}, Role.PUBLIC, ("public",),
     False, "r1"),
    ({"ACCOUNT_ID": A, "PLUGHOST_SESSION_ROLE": "Public"}, Role.PUBLIC, ("public",), False, None),
    ({"ACCOUNT_ID": A, "PLUGHOST_SESSION_ROLE": "specialist", "PLUGHOST_SESSION_ID": "r1"}, Role.SESSION,
     ("public",), False, "r1"),
    ({"ACCOUNT_ID": A, "PLUGHOST_SESSION_ROLE": "public", "ALLOWED_SCOPES": "shared"}, Role.PUBLIC, (), False, None),
    # an owner's session: admin, its conversation tools confined only when SESSION_ID says so
    ({"ACCOUNT_ID": A, "PLUGHOST_SESSION_ROLE": "admin", "PLUGHOST_SESSION_ID": "r1"}, Role.ADMIN_SESSION, None,
     True, None),
    ({"ACCOUNT_ID": A, "PLUGHOST_SESSION_ROLE": "admin", "SESSION_ID": "s1"}, Role.ADMIN_SESSION, None, True, "s1"),
    ({"ACCOUNT_ID": A, "PLUGHOST_SESSION_ROLE": "admin", "PLUGHOST_SESSION_ID": "r1", "ALLOWED_SCOPES": "public"},
     Role.ADMIN_SESSION, ("public",), False, None),
])
def test_every_role_of_the_table(env: dict[str, str], role: Role, scopes: tuple[str, ...] | None, admin: bool,
                                 session: str | None) -> None:
    p = resolve(env)
    assert (p.role, p.scopes, p.is_admin, p.session) == (role, scopes, admin, session)
    assert p.rights is ROLES[role]
    if not admin:
        with pytest.raises(UserError, match="admin only"):
            p.require_admin("tool-calls")


def test_account_option_and_missing_account() -> None:
    assert resolve({"ACCOUNT_ID": A}, account="acct-b").account == "acct-b"
    with pytest.raises(UserError, match="ACCOUNT_ID: not set"):
        resolve({}).guards  # noqa: B018
    assert resolve({"ACCOUNT_ID": "  "}).account is None


narrowing = st.fixed_dictionaries({}, optional={
    "ALLOWED_SCOPES": st.sampled_from(["", "public", "shared", "public,admin", " , "]),
    "AGENT_SLUG": st.sampled_from(["", "bot", "other"]),
    "SESSION_ID": st.sampled_from(["", "s1"]),
    "PLUGHOST_SESSION_ID": st.sampled_from(["", "r1"]),
    "PLUGHOST_SESSION_ROLE": st.sampled_from(["", "admin", "public", "x"]),
})


@given(env=narrowing, scopes=st.none() | st.lists(st.sampled_from(["public", "shared", "admin"])),
       role=st.sampled_from(["admin", "public", "x"]))
def test_nothing_widens(env: dict[str, str], scopes: list[str] | None, role: str) -> None:
    """Tool parameters, a visitor and a runner turn only narrow; a child resolves the same principal."""
    p = resolve({"ACCOUNT_ID": A, **env})

    def within(q: object) -> bool:
        qs, qa = q.scopes, q.agent  # type: ignore[attr-defined]
        return (p.scopes is None or (qs is not None and set(qs) <= set(p.scopes))) and (p.agent is None or qa == p.agent)

    for q in (p.narrowed_to(scopes=scopes), p.visitor("v1"), p.for_turn(role, "t1")):
        assert within(q), (p, q)
        assert not q.is_admin or p.is_admin
    assert p.visitor().is_public and p.visitor().scopes in (("public",), ())
    again = resolve(child_env({"PATH": "/usr/bin", **env, "ACCOUNT_ID": A}, p))
    assert (again.account, again.role, again.scopes, again.agent, again.is_admin) == \
        (p.account, p.role, p.scopes, p.agent, p.is_admin)
    assert again.session_key == p.session_key and again.session == p.session


def test_the_role_table_of_the_docs_is_rendered_from_roles() -> None:
    """The role table of ``docs/roles.md`` is rendered from :data:`plughost.ports.principal.ROLES`."""
    from pathlib import Path

    from plughost.ports.principal import role_table

    page = (Path(__file__).resolve().parents[2] / "docs" / "roles.md").read_text(encoding="utf-8")
    assert role_table() in page


@pytest.mark.parametrize("account", ["", "  ", None])
@pytest.mark.parametrize("who", ["owner", "system"])
def test_an_owner_or_the_system_is_always_some_accounts(who: str, account: object) -> None:
    """``Principal.owner("")`` / ``.system("")`` used to build, and failed later at its first guards."""
    from plughost.ports.principal import Principal

    with pytest.raises(ValueError, match=rf"^Principal\.{who}: account: expected the id of an account, got "):
        getattr(Principal, who)(account)
    assert getattr(Principal, who)(A).account_id == A


@pytest.mark.parametrize("account", ["../x", "a b/../..", "a/b", ".hidden", "-", "x" * 129])
@pytest.mark.parametrize("who", ["owner", "system"])
def test_an_id_no_account_may_have_is_refused(who: str, account: str) -> None:
    """The CLI's account-id rule (``plughost.runtime.accounts.check_id``) holds for a principal too."""
    from plughost.ports.principal import Principal
    from plughost.runtime.accounts import check_id

    with pytest.raises(ValueError, match=rf"^Principal\.{who}: account: '.*' is not a valid account id; expected "):
        getattr(Principal, who)(account)
    with pytest.raises(UserError, match="is not a valid account id"):
        check_id(account)
    assert getattr(Principal, who)("a.b_c-1").account == check_id("a.b_c-1")


@pytest.mark.parametrize(("bound_env", "given", "role", "scopes", "agent"), [
    ({"ALLOWED_SCOPES": "public"}, "owner", Role.SCOPED, ("public",), None),
    ({"ALLOWED_SCOPES": "public,shared"}, "scoped-shared-admin", Role.SCOPED, ("shared",), None),
    ({"AGENT_SLUG": "bot"}, "owner", Role.AGENT, None, "bot"),
    ({"PLUGHOST_SESSION_ROLE": "public", "PLUGHOST_SESSION_ID": "s1"}, "owner", Role.PUBLIC, ("public",), None),
    ({"PLUGHOST_SESSION_ROLE": "admin"}, "owner", Role.ADMIN_SESSION, None, None),
    ({}, "visitor", Role.PUBLIC, ("public",), None),
    ({}, "owner", Role.OWNER, None, None),
])
def test_a_principal_within_the_process_is_never_wider(bound_env: dict[str, str], given: str, role: Role,
                                                      scopes: tuple[str, ...] | None, agent: str | None) -> None:
    """``Principal.within``: what a plugin hands the host, narrowed to the process's own principal."""
    from plughost.ports.principal import Principal

    bound = resolve({"ACCOUNT_ID": A, **bound_env})
    p = {"owner": Principal.owner(A), "visitor": Principal.owner(A).visitor(),
         "scoped-shared-admin": Principal.owner(A).narrowed_to(scopes=("shared", "admin"))}[given]
    got = p.within(bound, "call")
    assert (got.account, got.role, got.scopes, got.agent) == (A, role, scopes, agent)
    assert not got.is_admin or bound.is_admin
    assert got.session is None  # none was given: no conversation at all, narrower than the bound's own


@pytest.mark.parametrize("bound_env", [{}, {"ACCOUNT_ID": "other"}])
def test_another_accounts_principal_is_refused(bound_env: dict[str, str]) -> None:
    from plughost.ports.principal import Principal

    with pytest.raises(UserError, match=r"^call: parameter 'principal': account 'acct-a' is not this process's account"):
        Principal.owner(A).within(resolve(bound_env), "call")


def test_within_keeps_no_conversation_but_the_bounds_own() -> None:
    from dataclasses import replace

    bound = resolve({"ACCOUNT_ID": A, "PLUGHOST_SESSION_ROLE": "public", "PLUGHOST_SESSION_ID": "s1"})
    assert replace(bound, session="s2").within(bound, "call").session is None
    assert bound.within(bound, "call") == bound
