"""The typed agent turn (host/runtime/types.py): its JSON form in and out (docs/channels.md#runners)."""

from __future__ import annotations

import pytest

from plughost import AgentTurn, Principal
from plughost.runtime.types import TURN_REQUIRED

WIRE = {"sessionId": "conv", "agentSession": "agent-s", "channel": "webchat", "sender": "v", "messageId": "m1",
        "payload": "## Context\nhi", "text": "hi"}


def test_a_turn_from_its_required_keys_alone() -> None:
    turn = AgentTurn.from_dict(WIRE, Principal.owner("acct"))
    assert (turn.conversation, turn.agent_session, turn.prompt, turn.text) == ("conv", "agent-s", "## Context\nhi", "hi")
    assert turn.principal.is_public and turn.principal.session == "conv"  # no role: the narrowest
    assert set(TURN_REQUIRED) == set(WIRE)


def test_an_empty_dict_is_refused_naming_every_missing_key() -> None:
    with pytest.raises(ValueError) as caught:
        AgentTurn.from_dict({}, Principal.owner("acct"))
    message = str(caught.value)
    assert message.startswith("AgentTurn.from_dict: sessionId: missing; agentSession: missing;"), message
    assert all(f"{key}: missing" in message for key in TURN_REQUIRED), message
    assert "\n" not in message


@pytest.mark.parametrize("key", TURN_REQUIRED)
def test_each_required_key_is_named_when_missing(key: str) -> None:
    wire = {k: v for k, v in WIRE.items() if k != key}
    with pytest.raises(ValueError, match=rf"^AgentTurn\.from_dict: {key}: missing \(the turn's JSON form"):
        AgentTurn.from_dict(wire, Principal.owner("acct"))


def test_a_key_of_the_wrong_type_or_an_empty_conversation_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^AgentTurn\.from_dict: messageId: expected a string, got int \("):
        AgentTurn.from_dict({**WIRE, "messageId": 7}, Principal.owner("acct"))
    with pytest.raises(ValueError, match=r"^AgentTurn\.from_dict: sessionId: empty \(the conversation"):
        AgentTurn.from_dict({**WIRE, "sessionId": " "}, Principal.owner("acct"))


def test_the_json_form_goes_round() -> None:
    turn = AgentTurn.from_dict({**WIRE, "role": "admin", "userId": "u1", "scheduled": True}, Principal.owner("acct"))
    assert AgentTurn.from_dict(turn.as_dict(), Principal.owner("acct")) == turn


@pytest.mark.parametrize("payload", ["x", None, 7, ["sessionId"]])
def test_anything_but_a_mapping_is_refused_as_an_empty_one(payload: object) -> None:
    with pytest.raises(ValueError) as empty:
        AgentTurn.from_dict({}, Principal.owner("acct"))
    with pytest.raises(ValueError) as caught:
        AgentTurn.from_dict(payload, Principal.owner("acct"))  # type: ignore[arg-type]
    assert str(caught.value) == str(empty.value)


@pytest.mark.parametrize("env", [{"ACCOUNT_ID": "acct", "ALLOWED_SCOPES": "public"},
                                 {"ACCOUNT_ID": "acct", "AGENT_SLUG": "bot"},
                                 {"ACCOUNT_ID": "acct", "PLUGHOST_SESSION_ROLE": "public"},
                                 {"ACCOUNT_ID": "acct", "SESSION_ID": "s1"}])
def test_an_admin_role_never_widens_a_narrower_principal(env: dict[str, str]) -> None:
    """A scoped, agent, session or public principal given a form saying ``role: admin`` is refused,
    never made an admin's session; an admin's principal (narrowed or not) keeps its turn admin."""
    from plughost.api.principals import resolve

    with pytest.raises(ValueError, match=r"^AgentTurn\.from_dict: role: 'admin' but the principal given is not an "
                                         r"admin's \(role [a-z]+[^\n]*\)") as caught:
        AgentTurn.from_dict({**WIRE, "role": "admin"}, resolve(env))
    assert "\n" not in str(caught.value)
    assert not AgentTurn.from_dict(WIRE, resolve(env)).admin  # a visitor's turn is still theirs
    narrowed_admin = resolve({"ACCOUNT_ID": "acct", "PLUGHOST_SESSION_ROLE": "admin", "ALLOWED_SCOPES": "public"})
    turn = AgentTurn.from_dict({**WIRE, "role": "admin"}, narrowed_admin)
    assert turn.admin and turn.principal.scopes == ("public",) and not turn.principal.is_admin
