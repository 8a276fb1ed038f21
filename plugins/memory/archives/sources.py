"""Find what an archive path holds and read it: a file, a folder, or the ``.zip`` an export comes as.

``--format auto`` sniffs: a ``conversations.json`` whose conversations have ``chat_messages``
(Claude) or ``mapping`` (ChatGPT); a ``.txt`` whose first line is a WhatsApp line; a file that
starts with ``From `` (mbox); ``.eml`` files (a folder of mail). A folder or zip holding files of
more than one of these is refused: ``--format`` says which to import.

Nothing is read whole to sniff it (a prefix of :data:`HEAD` bytes); a file or zip entry larger than
``PLUGHOST_IMPORT_MAX_BYTES``, or a zip larger than it in all, is refused before it is read (and
read in chunks that stop at the limit, whatever its header says). Only regular files are read.
"""

from __future__ import annotations

import mailbox
import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple, TextIO, TypeVar

from plughost.api.util import Progress
from plughost.plugins.memory.archives import chats, mail, whatsapp
from plughost.plugins.memory.archives.model import FORMATS, ArchiveError, Parsed
from plughost.plugins.memory.settings import IMPORT_MAX_BYTES

_FROM_QUOTED = re.compile(rb"\n>(>*From )")  # mboxrd's quoting of body lines that start "From "
T = TypeVar("T")
HEAD = 1 << 20
"""The prefix read to sniff a file's format."""
CHUNK = 1 << 20
_KIND = re.compile(rb'"(chat_messages|mapping)"\s*:')  # the first conversation's telling key, in a prefix


class Entry(NamedTuple):
    """A name to report, its size as known before reading, and a reader of at most ``n`` of its bytes."""

    name: str
    size: int
    read_upto: Callable[[int], bytes]


def _file(path: Path) -> Entry:
    def read(n: int) -> bytes:
        with path.open("rb") as f:
            return f.read(n)

    return Entry(str(path), path.stat().st_size, read)


def _zip_entry(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Entry:
    def read(n: int) -> bytes:  # in chunks: a header that lies about the size stops at n all the same
        out = bytearray()
        with archive.open(info) as f:
            while len(out) < n:
                chunk = f.read(min(CHUNK, n - len(out)))
                if not chunk:
                    break
                out += chunk
        return bytes(out)

    return Entry(f"{path}:{info.filename}", info.file_size, read)


def _entries(path: Path, cap: int) -> list[Entry]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and not any(
            part.startswith(".") for part in p.relative_to(path).parts))
        return [_file(p) for p in files]
    if not path.is_file():
        raise ArchiveError(f"{path}: not a regular file or a folder" if path.exists() or path.is_symlink()
                           else f"{path}: no such file or folder")
    if zipfile.is_zipfile(path):
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise ArchiveError(f"{path}: not a readable zip ({exc})") from None
        infos = [i for i in archive.infolist() if not i.is_dir() and not i.filename.startswith("__MACOSX")]
        total = sum(i.file_size for i in infos)
        if total > cap:
            raise ArchiveError(f"{path}: its files hold {total} bytes uncompressed, more than "
                               f"PLUGHOST_IMPORT_MAX_BYTES={cap}")
        return [_zip_entry(path, archive, i) for i in infos]
    return [_file(path)]


def _too_large(name: str, cap: int) -> ArchiveError:
    return ArchiveError(f"{name}: larger than PLUGHOST_IMPORT_MAX_BYTES={cap} bytes")


def _read(entry: Entry, cap: int) -> bytes:
    """The entry's bytes; an :class:`ArchiveError` when it holds more than ``cap``."""
    if entry.size > cap:
        raise _too_large(entry.name, cap)
    data = _upto(entry, cap + 1)
    if len(data) > cap:
        raise _too_large(entry.name, cap)
    return data


def _upto(entry: Entry, n: int) -> bytes:
    try:
        return entry.read_upto(n)
    except (OSError, zipfile.BadZipFile, KeyError, EOFError) as exc:
        raise ArchiveError(f"{entry.name}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def _chat_kind(entry: Entry, cap: int) -> str | None:
    """``claude`` or ``chatgpt`` by the first telling key in the file's prefix, else by reading it."""
    found = _KIND.search(_upto(entry, HEAD))
    if found:
        return "claude" if found.group(1) == b"chat_messages" else "chatgpt"
    return chats.kind(chats.load_json(entry.name, _read(entry, cap)))


def _text(name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ArchiveError(f"{name}: not UTF-8 text (byte {exc.start})") from None


def _base(name: str) -> str:
    return name.rsplit(":", 1)[-1].replace("\\", "/").rsplit("/", 1)[-1].lower()


def _is_mbox(entry: Entry) -> bool:
    return _base(entry[0]).endswith(".mbox") or _base(entry[0]) == "mbox"


def _is_chat_txt(entry: Entry) -> bool:
    base = _base(entry[0])
    return base.endswith(".txt") and (base == "_chat.txt" or base.startswith("whatsapp chat"))


def _sniff(entries: list[Entry], cap: int) -> tuple[str, list[Entry]]:
    found = _named(entries, cap)
    if found:
        return found
    fmt = _sniff_one(entries[0], cap) if len(entries) == 1 else None
    if fmt:
        return fmt, entries
    raise ArchiveError(f"{entries[0][0] if entries else 'archive'}: cannot tell the format (no conversations.json, "
                       "WhatsApp chat .txt, mbox or .eml); give --format")


def _named(entries: list[Entry], cap: int) -> tuple[str, list[Entry]] | None:
    """The format the files' names say (a ``conversations.json`` read to tell Claude's from ChatGPT's), or None;
    an :class:`ArchiveError` when they name more than one (``--format`` picks)."""
    # a chat export; a folder of .eml files; a Google Takeout or Thunderbird folder (every mbox in
    # it); a folder of several chat exports (each is one conversation)
    kinds = [(what, [e for e in entries if wanted(e)]) for what, wanted in (
        ("a conversations.json", lambda e: _base(e[0]) == "conversations.json"),
        (".eml files", lambda e: _base(e[0]).endswith(".eml")), ("an mbox", _is_mbox),
        ("a WhatsApp chat", _is_chat_txt))]
    kinds = [k for k in kinds if k[1]]
    if len(kinds) > 1:
        where = os.path.commonpath([e.name.split(":", 1)[0] for e in entries])
        raise ArchiveError(f"{where}: holds {' and '.join(k[0] for k in kinds)}; give --format to say which to import")
    if not kinds:
        return None
    what, picked = kinds[0]
    if what == "a conversations.json":
        entry = picked[0]
        found = _chat_kind(entry, cap)
        if found is None:
            raise ArchiveError(f"{entry[0]}: neither a Claude export (conversations with chat_messages) "
                               "nor a ChatGPT one (conversations with mapping)")
        return found, [entry]
    return {".eml files": "eml", "an mbox": "mbox"}.get(what, "whatsapp"), picked


def archive_format(path: Path) -> str | None:
    """The archive ``path`` plainly is (a folder holding an export's files, a ``.zip`` holding an
    export, or a file named as one or starting as an mbox or a WhatsApp chat does), else None: ``memory import`` points to
    ``import-archive`` for it instead of reading it as JSON lines."""
    cap = IMPORT_MAX_BYTES.default
    try:
        if path.is_dir():  # its own files only: a walk of a large folder is not worth a better message
            entries = [_file(p) for p in sorted(path.iterdir()) if p.is_file()]
        else:
            entries = _entries(path, cap)
        found = _named(entries, cap)
        if found:
            return found[0]
        if path.is_file() and not zipfile.is_zipfile(path):
            head = _upto(entries[0], 4096)
            if head.lstrip().startswith(b"From "):
                return "mbox"
            if whatsapp.looks_like(head.decode("utf-8-sig", "ignore")):
                return "whatsapp"
    except (ArchiveError, OSError):
        return None
    return None


def _sniff_one(entry: Entry, cap: int) -> str | None:
    """The format of a lone file, by its first bytes, or None."""
    name = entry.name
    head = _upto(entry, 4096)
    if head.lstrip().startswith(b"From "):
        return "mbox"
    if head.lstrip()[:1] == b"[" and _base(name).endswith(".json"):
        found = _chat_kind(entry, cap)
        if found:
            return found
    try:
        if whatsapp.looks_like(head.decode("utf-8-sig", "ignore")):
            return "whatsapp"
    except UnicodeDecodeError:
        pass
    if b"\nFrom:" in head or head.startswith(b"From:") or b"Message-ID:" in head:
        return "eml"
    return None


_PICK = {
    "whatsapp": lambda e: _base(e[0]).endswith(".txt"),
    "eml": lambda e: _base(e[0]).endswith(".eml"),
    "mbox": _is_mbox,
}


def _pick(fmt: str, entries: list[Entry]) -> list[Entry]:
    lone = entries if len(entries) == 1 else []
    if fmt in ("claude", "chatgpt"):
        picked = [e for e in entries if _base(e[0]) == "conversations.json"] or [
            e for e in entries if _base(e[0]).endswith(".json")] or lone
    else:
        wanted = _PICK.get(fmt, _is_mbox)
        picked = [e for e in entries if wanted(e)] or lone
    if not picked:
        raise ArchiveError(f"{entries[0][0] if entries else 'archive'}: holds no {fmt} file")
    return picked[:1] if fmt in ("claude", "chatgpt") else picked


def _mbox_messages(entry: Entry, cap: int) -> Iterator[tuple[str, bytes]]:
    name = entry[0]
    data = _read(entry, cap)
    if not data.lstrip().startswith(b"From "):
        line = data[:40].split(b"\n", 1)[0].decode("utf-8", "replace")
        raise ArchiveError(f"{name}:1: not an mbox (expected a 'From ' line, got {line!r})")
    fd, tmp = tempfile.mkstemp(suffix=".mbox")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        box = mailbox.mbox(tmp, create=False)
        try:
            for i, key in enumerate(box.keys(), 1):
                yield f"{name}: message {i}", _FROM_QUOTED.sub(rb"\n\1", box.get_bytes(key))
        finally:
            box.close()
    finally:
        os.unlink(tmp)


def _reading(items: Iterable[T], progress: bool | None, stream: TextIO | None) -> Iterator[T]:
    """``items`` with a count on the terminal while they are read (mail is read whole before the
    write's own bar starts: threads need every message; a large mbox takes minutes)."""
    bar = Progress(0, stream or sys.stderr, progress, unit="mails read")
    count = 0
    for count, item in enumerate(items, 1):
        yield item
        if count % 100 == 0:
            bar.update(count)
    if count % 100:
        bar.update(count)
    bar.finish()


def load(path: Path, fmt: str = "auto", *, progress: bool | None = False,
         stream: TextIO | None = None, max_bytes: int | None = None) -> tuple[str, Parsed]:
    """The archive's format and its threads (an unreadable archive raises :class:`ArchiveError`).
    ``progress``: count the mails read on ``stream`` (None: when it is a terminal). ``max_bytes``:
    the most read from one file or zip entry, and from a zip in all (None: PLUGHOST_IMPORT_MAX_BYTES's default)."""
    cap = IMPORT_MAX_BYTES.default if max_bytes is None else max_bytes
    if fmt != "auto" and fmt not in FORMATS:
        raise ArchiveError(f"--format: expected auto or one of {', '.join(FORMATS)}, got {fmt!r}")
    entries = _entries(path, cap)
    if not entries:
        raise ArchiveError(f"{path}: an empty folder or zip")
    if fmt == "auto":
        fmt, picked = _sniff(entries, cap)
    else:
        picked = _pick(fmt, entries)
    if fmt in ("claude", "chatgpt"):
        name = picked[0][0]
        items = chats.load_json(name, _read(picked[0], cap))
        if items and chats.kind(items) not in (fmt, None):
            raise ArchiveError(f"{name}: a {chats.kind(items)} export, not {fmt} (--format)")
        return fmt, (chats.parse_claude if fmt == "claude" else chats.parse_chatgpt)(name, items)
    if fmt == "whatsapp":
        parsed = Parsed()
        for entry in picked:
            name = entry[0]
            title = whatsapp.chat_title(name.rsplit(":", 1)[-1]) or (
                whatsapp.chat_title(str(path)) if len(picked) == 1 else "")
            one = whatsapp.parse(name, _text(name, _read(entry, cap)), title)
            parsed.threads += one.threads
            parsed.skipped += one.skipped
        return fmt, parsed
    if fmt == "mbox":
        mails = (m for entry in picked for m in _mbox_messages(entry, cap))
    else:
        mails = ((e[0], _read(e, cap)) for e in picked)
    return fmt, mail.thread(_reading(mails, progress, stream), str(path))
