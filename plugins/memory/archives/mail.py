"""Mail: an mbox file or a folder of ``.eml`` files, as threads.

Messages are threaded by ``Message-ID`` / ``In-Reply-To`` / ``References`` (a message without
them joins the thread of the same subject, ``Re:``/``Fwd:`` and the like set aside). The body is
the ``text/plain`` part (else the HTML one, tags stripped), with the quoted earlier messages
(``> ...``, "On ... wrote:") cut; attachments are listed by name and size, never stored.
"""

from __future__ import annotations

import email
import hashlib
import html
import re
from collections.abc import Iterable
from email import policy
from email.errors import HeaderParseError
from email.header import decode_header, make_header
from email.message import EmailMessage
from email.utils import getaddresses, parsedate_to_datetime
from html.parser import HTMLParser

from plughost.plugins.memory.archives.model import Parsed, Thread, Turn, attachment, iso

PREFIX = re.compile(r"^\s*((re|fw|fwd|aw|sv|wg|tr|vs|rv)(\[\d+\])?\s*:\s*)+", re.I)
QUOTE_HEAD = re.compile(r"^(On .{4,200} wrote:|Le .{4,200} a écrit ?:|Am .{4,200} schrieb .{1,80}:|"
                        r"-{2,}\s*Original Message\s*-{2,}|From: .+)$", re.I)
IDS = re.compile(r"<[^<>\s]+>")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, _attrs: object) -> None:
        if tag in ("script", "style", "head"):
            self.skip += 1
        elif tag in ("br", "p", "div", "li", "tr", "h1", "h2", "h3", "blockquote"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head") and self.skip:
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_text(markup: str) -> str:
    parser = _Text()
    parser.feed(markup)
    parser.close()
    text = html.unescape("".join(parser.parts))
    return re.sub(r"\n\s*\n+", "\n\n", re.sub(r"[ \t\xa0]+", " ", text)).strip()


def subject_key(subject: str) -> str:
    return " ".join(PREFIX.sub("", subject or "").lower().split())


def strip_quoted(text: str) -> str:
    """The new words of a reply: up to the first quoted block, trailing quoted lines dropped."""
    lines = text.replace("\r\n", "\n").split("\n")
    kept: list[str] = []
    for i, line in enumerate(lines):
        rest = [x for x in lines[i + 1:] if x.strip()]
        if QUOTE_HEAD.match(line.strip()) and kept and (not rest or rest[0].lstrip().startswith(">")
                                                        or "original message" in line.lower()):
            break
        if line.lstrip().startswith(">"):
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def _body(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError, AssertionError):  # an unknown charset: the bytes as Latin-1
        payload = part.get_payload(decode=True)
        content = payload.decode("latin-1") if isinstance(payload, bytes) else ""
    if not isinstance(content, str):
        return ""
    return html_text(content) if part.get_content_type() == "text/html" else content


def _attachments(msg: EmailMessage) -> list[str]:
    out = []
    for part in msg.iter_attachments():
        payload = part.get_payload(decode=True)
        size = len(payload) if isinstance(payload, bytes) else None
        out.append(attachment(part.get_filename() or part.get_content_type(), size))
    return out


HEADERS = ("from", "to", "cc", "delivered-to", "date", "subject", "message-id", "references", "in-reply-to")


def _decoded(value: str) -> str:
    """A header's raw value as text: encoded words (RFC 2047) decoded, 8-bit bytes read as UTF-8."""
    if any("\udc80" <= c <= "\udcff" for c in value):  # undecoded bytes (surrogateescape): UTF-8 as sent
        value = value.encode("ascii", "surrogateescape").decode("utf-8", "replace")
    value = re.sub(r"\r?\n(?=[ \t])", "", value).strip()  # unfolded (RFC 5322 3.2.2)
    if "=?" not in value:
        return value
    try:
        words = decode_header(value)
    except (HeaderParseError, ValueError):  # a broken encoded word: as written
        return value
    try:
        return str(make_header(words))
    except (LookupError, UnicodeError):  # a charset Python does not know: its bytes as UTF-8
        return "".join(w.decode("utf-8", "replace") if isinstance(w, bytes) else w for w, _ in words)


def _headers(msg: EmailMessage) -> dict[str, str]:
    """The headers read here, each once (the first of a name), decoded: the policy's structured
    parse of every address header cost ~10 ms a message, most of a large mbox's import."""
    found: dict[str, str] = {}
    for name, value in msg.raw_items():
        key = name.lower()
        if key in HEADERS and key not in found:
            found[key] = _decoded(str(value)).strip()
    return found


def read_message(where: str, raw: bytes) -> tuple[list[str], Turn] | str:
    """A message's ids (its own, then those it answers) and its turn; or why it is not a message."""
    msg = email.message_from_bytes(raw, policy=policy.default)
    assert isinstance(msg, EmailMessage)
    head = _headers(msg)
    sender_raw = head.get("from", "")
    date_raw = head.get("date", "")
    if not sender_raw and not date_raw and not head.get("message-id"):
        return f"{where}: not an email (no From, Date or Message-ID header)"
    when = None
    if date_raw:
        try:
            when = iso(parsedate_to_datetime(date_raw))
        except (TypeError, ValueError, IndexError):
            return f"{where}: Date: not a date ({date_raw[:40]!r})"
    addresses = getaddresses([sender_raw]) if sender_raw else []
    name, address = addresses[0] if addresses else ("", "")
    subject = head.get("subject", "")
    own = IDS.findall(head.get("message-id", ""))
    refs = IDS.findall(head.get("references", "")) + IDS.findall(head.get("in-reply-to", ""))
    key = own[0] if own else "hash:" + hashlib.sha256(raw).hexdigest()[:32]
    text = strip_quoted(_body(msg))
    extra = {"subject": subject, "senderAddress": address.lower() or None}
    everyone = getaddresses([head[h] for h in ("from", "to", "cc", "delivered-to") if head.get(h)])
    turn = Turn(key, name or address or "unknown sender", "user", when, text, _attachments(msg), extra,
                participants=tuple(sorted({a.lower() for _, a in everyone if "@" in a})))
    return [key, *dict.fromkeys(r for r in refs if r != key)], turn


def thread(where_raw: Iterable[tuple[str, bytes]], source: str) -> Parsed:
    out = Parsed()
    ids: list[list[str]] = []
    turns: list[Turn] = []
    for where, raw in where_raw:
        got = read_message(where, raw)
        if isinstance(got, str):
            out.skipped.append(got)
            continue
        if got[0][0] in {t.key for t in turns}:
            continue  # the same message twice (an mbox holding a copy)
        ids.append(got[0])
        turns.append(got[1])
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra

    by_subject: dict[str, str] = {}
    for chain in ids:
        for other in chain[1:]:
            union(chain[0], other)
        find(chain[0])
    for chain, turn in zip(ids, turns, strict=True):  # no threading headers: the thread of the same subject
        subject = subject_key(turn.extra.get("subject") or "")
        if subject and len(chain) == 1 and subject in by_subject:
            union(by_subject[subject], chain[0])
        elif subject:
            by_subject.setdefault(subject, chain[0])
    groups: dict[str, list[Turn]] = {}
    for chain, turn in zip(ids, turns, strict=True):
        groups.setdefault(find(chain[0]), []).append(turn)
    for members in groups.values():
        members.sort(key=lambda t: (t.sent_at or "", t.key or ""))
        first = members[0]
        title = (first.extra.get("subject") or "").strip() or "(no subject)"
        out.threads.append(Thread(str(first.key), title, members, source=source))
    return out
