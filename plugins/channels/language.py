"""The language of an inbound message, for screening's ``lang`` (an ISO 639-1 code, or ``und``).

``py3langid`` (langid.py's maintained fork: 97 languages, its model shipped in the wheel, numpy
only) classifies in well under a millisecond, but loading its model takes about a second: it is
imported on the first message (never at boot) or by :func:`warm_in_background` when the server
starts. A message with fewer than :data:`MIN_WORDS` words of letters ("Hi", "ok", an email
address, a phone number) or a guess below :data:`MIN_CONFIDENCE` is ``und``: a short text has
too few letters to tell, and a wrong language is worse than none.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

from plughost import log

if TYPE_CHECKING:
    from py3langid.langid import LanguageIdentifier

UNDETERMINED = "und"
MIN_WORDS = 2
MIN_CONFIDENCE = 0.4
_WORD = re.compile(r"[^\W\d_]{2,}")
_LOCK = threading.Lock()
_IDENTIFIER: list[LanguageIdentifier | None] = []  # [identifier] once loaded, [None] when the library is missing


def _identifier() -> LanguageIdentifier | None:
    if not _IDENTIFIER:
        with _LOCK:
            if not _IDENTIFIER:
                try:
                    from py3langid.langid import MODEL_FILE, LanguageIdentifier

                    _IDENTIFIER.append(LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True))
                except ImportError as exc:  # screening goes on without it: lang=und
                    log("screening", "op=lang-unavailable", reason=str(exc)[:120])
                    _IDENTIFIER.append(None)
    return _IDENTIFIER[0]


def detect(text: str) -> str:
    """The message's language code, or ``und`` when it is too short or the guess is unsure."""
    letters = " ".join(_WORD.findall(text or ""))
    if len(letters.split()) < MIN_WORDS:
        return UNDETERMINED
    identifier = _identifier()
    if identifier is None:
        return UNDETERMINED
    lang, confidence = identifier.classify(letters)
    return str(lang) if confidence >= MIN_CONFIDENCE else UNDETERMINED


def warm_in_background() -> None:
    """Load the model off the serving loop, so the first visitor does not wait for it."""
    threading.Thread(target=_identifier, name="screening-lang-warm", daemon=True).start()
