"""The id a new conversation of a channel's sender gets in a test's home (docs/channels.md#conversation-ids):
keyed by the account's conversation-id secret, so tests compute it as the host does."""

from __future__ import annotations

import os
from pathlib import Path


def keyed_id(account: str, channel: str, sender: str, home: Path | None = None) -> str:
    from plughost.api.credentials import conversation_secret
    from plughost.api.store import keyed_conversation_id

    root = home if home is not None else Path(os.environ["PLUGHOST_HOME"])
    return keyed_conversation_id(conversation_secret(root, account), account, channel, sender)
