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
