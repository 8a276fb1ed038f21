"""Adapter parsing: Telegram Updates and WhatsApp webhook payloads into channel-neutral inbounds."""

from __future__ import annotations

import pytest
from channels_support import telegram_update, whatsapp_payload

from plughost.plugins.channels.telegram import parse_update
from plughost.plugins.channels.whatsapp import parse_payload, signature, signature_ok


def test_telegram_contact_only_counts_for_the_sender_themself() -> None:
    own = parse_update(telegram_update(5, 1, "", contact_phone="+44 7700 900002"))
    assert own.phone == "+44 7700 900002" and own.text == "[shared their contact]"
    other = telegram_update(5, 2, "", contact_phone="+44 7700 900002")
    other["message"]["contact"]["user_id"] = 6  # forwarding someone else's card
    assert parse_update(other).phone is None


def test_telegram_reply_media_and_edits() -> None:
    update = telegram_update(5, 3, "see this", reply_to={"message_id": 2, "text": "earlier", "from": {"username": "bot"}})
    update["message"]["photo"] = [{"file_id": "small"}, {"file_id": "large"}]
    msg = parse_update(update)
    assert (msg.reply.id, msg.reply.text, msg.reply.sender) == ("2", "earlier", "bot")
    assert msg.media_notes == ("[media: photo id=large]",) and msg.platform_id == "5:3"
    assert msg.target == {"chat_id": 5, "message_id": 3}
    edited = {"update_id": 9, "edited_message": {**update["message"], "edit_date": 1764464500}}
    assert parse_update(edited).platform_id == "5:3:edit:1764464500"
    assert parse_update({"update_id": 10, "callback_query": {}}) is None
    with pytest.raises(ValueError, match="message:"):
        parse_update({"update_id": 11, "message": {"text": "no chat"}})


def test_whatsapp_payload_kinds() -> None:
    image = parse_payload(whatsapp_payload("447700900002", "wamid.1",
                                           image={"id": "M1", "mime_type": "image/png", "caption": "menu?"}))
    msg, quoted = image[0]
    assert (msg.text, msg.media_notes, quoted, msg.name) == ("menu?", ("[media: image image/png id=M1]",), None, "Sam")
    ctx = parse_payload(whatsapp_payload("447700900002", "wamid.2", "this one", context_id="wamid.OUT9"))
    assert ctx[0][1] == "wamid.OUT9" and ctx[0][0].target == {"to": "447700900002", "message_id": "wamid.2"}
    statuses = {"object": "whatsapp_business_account", "entry": [{"changes": [{"value": {"statuses": [{"id": "x"}]}}]}]}
    assert parse_payload(statuses) == []
    with pytest.raises(ValueError, match="entry"):
        parse_payload({"object": "x"})


def test_signature_constant_time_check() -> None:
    raw = b'{"a":1}'
    good = signature("s3cret", raw)
    assert signature_ok("s3cret", raw, good)
    assert not signature_ok("s3cret", raw + b" ", good)
    assert not signature_ok("s3cret", raw, None) and not signature_ok("s3cret", raw, good.upper())
