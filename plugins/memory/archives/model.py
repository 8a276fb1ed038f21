"""The parsed form of an archive: threads of turns, whatever the format they came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from plughost import UserError

FORMATS = ("claude", "chatgpt", "whatsapp", "mbox", "eml")


class ArchiveError(UserError):
    """An archive that cannot be read at all: one line naming the file and the line or field (exit 2)."""


@dataclass
class Turn:
    """One message: ``key`` is the source's own id when it has one (None: derived from content)."""

    key: str | None
    sender: str
    role: str
    sent_at: str | None
    text: str
    attachments: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    owner: bool = False
    participants: tuple[str, ...] = ()  # mail: every address the message went to or came from (not stored)


@dataclass
class Thread:
    """One conversation or mail thread; ``key`` identifies it in its source across exports."""

    key: str
    title: str
    turns: list[Turn] = field(default_factory=list)
    source: str = ""


@dataclass
class Parsed:
    """What a reader found: the threads, and the items it skipped (``where: why``)."""

    threads: list[Thread] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def iso(at: datetime) -> str:
    """An aware time as UTC ``...Z`` with milliseconds; a naive one (a local time) as it is."""
    if at.tzinfo is None:
        return at.isoformat(timespec="seconds")
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def size_text(size: int | None) -> str:
    if size is None:
        return ""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def attachment(name: str, size: int | None = None) -> str:
    """An attachment as listed (never stored): ``name (12 KB)``."""
    shown = size_text(size)
    return f"{name} ({shown})" if shown else name


def mark_owner(fmt: str, parsed: Parsed, me: list[str]) -> bool:
    """Mark the turns the archive's owner wrote; whether the owner was found.

    ``me`` (``--me``): names or addresses as the archive shows them. Without it: the human side of
    a Claude or ChatGPT export; in a one-to-one WhatsApp chat named after the other person, the
    other sender; in mail, the one address every message was from or to.
    """
    wanted = {m.strip().lower() for m in me if m.strip()}
    turns = [t for th in parsed.threads for t in th.turns]
    if wanted:
        for t in turns:
            t.owner = t.sender.lower() in wanted or str(t.extra.get("senderAddress") or "").lower() in wanted
        return any(t.owner for t in turns)
    if fmt in ("claude", "chatgpt"):
        for t in turns:
            t.owner = t.role == "user"
        return True
    if fmt == "whatsapp":
        found = False
        for th in parsed.threads:
            senders = {t.sender for t in th.turns}
            other = th.key
            if len(senders) == 2 and other in senders:
                for t in th.turns:
                    t.owner = t.sender != other
                found = True
        return found
    common: set[str] | None = None
    for t in turns:
        common = set(t.participants) if common is None else common & set(t.participants)
    if common is not None and len(common) == 1:
        address = next(iter(common))
        for t in turns:
            t.owner = str(t.extra.get("senderAddress") or "").lower() == address
        return any(t.owner for t in turns)
    return False
