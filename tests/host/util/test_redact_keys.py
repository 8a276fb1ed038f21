"""The fragment-led key scan finds exactly the matches ``_KEY.finditer`` finds (host/util/redact.py)."""

from __future__ import annotations

import random

import pytest

from plughost.util.redact import _KEY, _key_matches, redact_text

PIECES = ("password", "api_key", "PASS", "token", "x-auth-token", "pin", "author", "sid", "otp", "keyboard",
          "a" * 70 + "key", "b" * 60 + "token", "secretary", "my.cred", "cookie", "Bearer", "jwt", "pw",
          "=", ":", " = ", ": ", "=>", ":=", "\"", "'", "\\\"", "\\\\\"", "\\'", " ", "\n", "\t", ",", "{", "}",
          "[", "]", "abc", "s3cr3tVALUE", "é", "naïve", "_", ".", "-", "1", "9key", "ÉKEY", "bearer ", "token ")


def _texts(seed: int, n: int) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, 40))) for _ in range(n)]


def _spans(matches: object) -> list[tuple[tuple[int, int], dict[str, str | None]]]:
    return [(m.span(), m.groupdict()) for m in matches]  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", range(8))
def test_the_same_matches_as_finditer(seed: int) -> None:
    for text in _texts(seed, 400):
        assert _spans(_key_matches(text)) == _spans(_KEY.finditer(text)), text


def test_a_secret_pair_is_still_redacted() -> None:
    text = 'title: x\napi_key = "s3cr3tVALUE123"\n"password": "hunter2hunter2" and \\"token\\": \\"abcdEFGH1234\\"'
    out = redact_text(text)
    assert "s3cr3tVALUE123" not in out and "hunter2hunter2" not in out and "abcdEFGH1234" not in out
    assert out.startswith("title: x")
