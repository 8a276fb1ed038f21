"""A ToolCall's output is redacted and cut to its budget (plugins/memory/toolcalls/trail.py): a long
text is cut to the budget plus a margin before it is redacted, and nothing of a secret kept
before the cut survives."""

from __future__ import annotations

import pytest

from plughost.plugins.memory.toolcalls.trail import REDACT_MARGIN, clean_clip, clip
from plughost.util.redact import MARKER, redact_value

KEY = "ghp_" + "a1B2" * 9
BLOCK = "-----BEGIN RSA PRIVATE KEY-----\n" + "QmFzZTY0Qm9keUxpbmU0Mg\n" * 400 + "-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize("at", [0, 3990, 3998])
def test_a_secret_at_or_across_the_cut_is_redacted(at: int) -> None:
    text = "x " * (at // 2) + f"token {KEY} " + "y " * 5000
    out, cut = clean_clip(text, 4000)
    assert cut and KEY[:8] not in out and out.endswith(f"…[+{len(text) - 4000} chars]")
    assert MARKER in out or at > 4000 - len("token [redacted]")  # the marker may fall past the cut


def test_a_key_block_longer_than_the_margin_is_redacted_to_the_cut() -> None:
    text = "note " + BLOCK + " tail" * 2000
    assert len(BLOCK) > REDACT_MARGIN
    out, cut = clean_clip(text, 4000)
    assert cut and "QmFzZTY0" not in out and MARKER in out


def test_short_and_structured_values_are_redacted_whole_as_before() -> None:
    value = {"stdout": f"token {KEY}", "n": 3}
    assert clean_clip(value, 4000) == clip(redact_value(value), 4000)
    text = f"token {KEY} " + "z" * (4000 + REDACT_MARGIN - 60)
    assert clean_clip(text, 4000) == clip(redact_value(text), 4000)
    assert clean_clip(None, 10) == ("", False)
