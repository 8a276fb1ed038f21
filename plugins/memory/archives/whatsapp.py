"""A WhatsApp chat export (``_chat.txt`` from iOS, ``WhatsApp Chat with X.txt`` from Android).

iOS lines read ``[12/03/2024, 14:05:09] Ada: text``, Android ones ``12/03/2024, 14:05 - Ada: text``
(either with ``AM``/``PM``); a line that does not start so continues the message before it.
Day/month order is not in the file: a first or second number above 12 settles it, else the order
in which the times run forward. Attachments (``<attached: 0001-PHOTO.jpg>``, ``IMG-....jpg (file
attached)``, ``<Media omitted>``, ``image omitted``) are listed; system lines (encryption notice,
joins, subject changes) are left out. Times are the phone's local time, stored without a zone.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import PurePath

from plughost.plugins.memory.archives.model import ArchiveError, Parsed, Thread, Turn, attachment

_LRM = "\u200e\u200f\u202a\u202c\ufeff"
_STAMP = r"(\d{1,2})[./-](\d{1,2})[./-](\d{2,4}),?\s(\d{1,2})[:.](\d{2})(?:[:.](\d{2}))?(?:\s?([AaPp])\.?\s?[Mm]\.?)?"
IOS = re.compile(rf"^\[{_STAMP}\]\s(.*)$")
ANDROID = re.compile(rf"^{_STAMP}\s[-\u2013]\s(.*)$")
ATTACHED = re.compile(r"^<attached:\s*(.+?)>\s*(.*)$", re.S)
FILE_ATTACHED = re.compile(r"^(.+?\.\w{2,5}) \(file attached\)\s*(.*)$", re.S)
OMITTED = re.compile(r"^<?(image|video|audio|sticker|GIF|document|Media) omitted>?$", re.I)
SYSTEM = ("messages and calls are end-to-end encrypted", "created group", "created this group", " added ",
          " left", " removed ", "changed the subject", "changed this group", "changed the group",
          "joined using this group", "security code changed", "message was deleted", "this message was deleted",
          "missed voice call", "missed video call", "you deleted this message")


def chat_title(name: str) -> str:
    """The chat's name from the export's file or folder name (``WhatsApp Chat with Ada.txt``,
    ``WhatsApp Chat - Ada/_chat.txt``); empty when it names none."""
    for part in reversed(PurePath(name).parts):
        stem = re.sub(r"\.(txt|zip)$", "", part, flags=re.I)
        found = re.match(r"^WhatsApp Chat (?:with|-|–) (.+)$", stem, re.I)
        if found:
            return found.group(1).strip()
    return ""


def looks_like(text: str) -> bool:
    for line in text.splitlines()[:20]:
        line = line.strip(_LRM)
        if line:
            return bool(IOS.match(line) or ANDROID.match(line))
    return False


def _day_first(stamps: list[tuple[int, int, int, int, int, int]]) -> bool:
    if any(a > 12 for a, *_ in stamps):
        return True
    if any(b > 12 for _, b, *_ in stamps):
        return False

    def forward(day_first: bool) -> int:
        keys = [(y, b, a, *t) if day_first else (y, a, b, *t) for a, b, y, *t in stamps]
        return sum(x <= y for x, y in zip(keys, keys[1:], strict=False))

    return forward(True) >= forward(False)


_Stamp = tuple[int, int, int, int, int, int]  # first, second, year, hour, minute, second


def _lines(name: str, text: str) -> list[tuple[int, _Stamp, str, bool]]:
    """The export's messages as (line, stamp, rest, marked); a line without a stamp continues the one before."""
    raw: list[tuple[int, _Stamp, str, bool]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip(_LRM)
        found = IOS.match(stripped) or ANDROID.match(stripped)
        if not found:
            if not raw:
                if not line.strip():
                    continue
                raise ArchiveError(f"{name}:{lineno}: not a WhatsApp chat line (expected '[DD/MM/YYYY, HH:MM:SS] "
                                   "Name: text' or 'DD/MM/YYYY, HH:MM - Name: text')")
            at, stamp, rest, marked = raw[-1]
            raw[-1] = (at, stamp, rest + "\n" + line, marked)
            continue
        a, b, y, hh, mm, ss, ampm, rest = found.groups()
        hour = int(hh) % 12 + (12 if ampm and ampm.lower() == "p" else 0) if ampm else int(hh)
        year = int(y) + (2000 if len(y) == 2 else 0)
        raw.append((lineno, (int(a), int(b), year, hour, int(mm), int(ss or 0)), rest, rest[:1] in _LRM if rest else False))
    if not raw:
        raise ArchiveError(f"{name}: no messages (an empty chat export)")
    return raw


def _body(body: str) -> tuple[str, list[str]]:
    """A message's text without its attachment markers, and the attachments they name."""
    files: list[str] = []
    for pattern in (ATTACHED, FILE_ATTACHED):
        got = pattern.match(body)
        if got:
            files.append(attachment(got.group(1).strip()))
            body = got.group(2).strip()
    if OMITTED.match(body.strip()):
        files.append(attachment(f"({body.strip().strip('<>')})"))
        body = ""
    return body, files


def _turn(when: datetime, rest: str, marked: bool, title: str) -> Turn | None:
    """One message as a turn; None for a system line, a deleted message or an empty one."""
    sender, sep, body = rest.partition(": ")
    if not sep or len(sender) > 80:  # "Ada created group", "Messages ... encrypted": no speaker
        return None
    sender = sender.strip(_LRM + " ")
    marked = marked or body[:1] in _LRM if body else marked
    body = body.lstrip(_LRM)
    lowered = body.lower()
    if (marked or sender == title) and any(s in lowered for s in SYSTEM):
        return None
    body, files = _body(body)
    if body.strip().lower() in ("this message was deleted", "you deleted this message", "null"):
        return None
    if not body.strip() and not files:
        return None
    return Turn(None, sender, "user", when.isoformat(timespec="seconds"), body.rstrip(), files)


def parse(name: str, text: str, title: str | None = None) -> Parsed:
    raw = _lines(name, text)
    day_first = _day_first([s for _, s, _, _ in raw])
    title = chat_title(name) if title is None else title
    thread = Thread("", title, source=name)
    out = Parsed()
    for lineno, (a, b, year, hour, minute, second), rest, marked in raw:
        day, month = (a, b) if day_first else (b, a)
        try:
            when = datetime(year, month, day, hour, minute, second)
        except ValueError as exc:
            raise ArchiveError(f"{name}:{lineno}: not a date and time ({exc})") from None
        turn = _turn(when, rest, marked, title)
        if turn is not None:
            thread.turns.append(turn)
    if not title:
        people = sorted({t.sender for t in thread.turns})
        thread.title = ", ".join(people)[:200] or "WhatsApp chat"
    thread.key = thread.title
    thread.title = f"WhatsApp chat with {thread.title}"
    if thread.turns:
        out.threads.append(thread)
    return out
