"""A known-item evaluation set from the installed manual pages (built at run time, never committed).

Query = the NAME line's description ("ls - list directory contents" → "list directory contents");
relevant document = that page's DESCRIPTION section as plain text, capped at 1,200 characters.
Both man(7) and mdoc(7) sources are read directly (no groff), gzip or plain.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAN_ROOT = Path("/usr/share/man")
DOC_CAP = 1200

_ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),       # font changes
    (re.compile(r"\\s[+-]?\d"), ""),                    # size changes
    (re.compile(r"\\\*(\[[^\]]*\]|\(..|.)"), ""),      # strings
    (re.compile(r"\\\((em|en|hy|mi)"), "-"),
    (re.compile(r"\\\((lq|rq|dq|oq|cq)"), '"'),
    (re.compile(r"\\\(..|\\\[[^\]]*\]"), ""),           # other special characters
    (re.compile(r"\\[-]"), "-"),
    (re.compile(r"\\[&|^%:)/,!]"), ""),
    (re.compile(r"\\[e\\]"), "\\\\"),
    (re.compile(r"\\ "), " "),
    (re.compile(r'\\".*$'), ""),                        # comments
    (re.compile(r"\\[a-zA-Z]"), ""),
]


def unescape(text: str) -> str:
    for pattern, repl in _ESCAPES:
        text = pattern.sub(repl, text)
    return text.replace("\\", "")


_MACRO_TEXT = re.compile(r"^\.\s*(B|I|BR|RB|IR|RI|BI|IB|SM|SB|Nm|Nd|Fl|Ar|Op|Cm|Pa|Xr|Em|Sy|Dq|Ql|Va|Fn|Fa|Ic|Li|Ev|"
                         r"Dv|Er|Ft|Tn|Ux|It|Sq|Pq|Ns|Xo|Xc|Bq|Aq|Ql|Vt|St|At|Bx|Dl|TP|IP|HP|Lk|Mt|UR|MT|SS|Ss)\b(.*)$")


def _line_text(line: str) -> str | None:
    """Plain text of one source line, or None for a macro without text."""
    if line.startswith(("'", ".\\\"")) or line.startswith('.\\"'):
        return None
    if line.startswith("."):
        m = _MACRO_TEXT.match(line)
        if not m:
            return None
        args = m.group(2).strip()
        if m.group(1) in ("TP", "IP", "HP", "UR", "MT"):
            args = args.split('"')[1] if args.startswith('"') else ""
        args = re.sub(r'"', "", args)
        # mdoc call macros inside the line (e.g. ".Fl l Ar file") lose their names
        args = re.sub(r"\b(Fl|Ar|Op|Cm|Pa|Xr|Em|Sy|Dq|Ql|Ns|Nm|Li|Ic|Ev|Va|Fa|Fn|Pq|Sq|Aq|Bq)\s+", "", args)
        return args
    return line


def sections(source: str) -> dict[str, list[str]]:
    """Section name (upper case) → its raw source lines."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in source.splitlines():
        m = re.match(r'^\.\s*(SH|Sh)\s+"?([^"]*)"?\s*$', line)
        if m:
            current = unescape(m.group(2)).strip().upper()
            out.setdefault(current, [])
            continue
        if current is not None:
            out[current].append(line)
    return out


def text_of(lines: list[str]) -> str:
    parts = [t for t in (_line_text(x) for x in lines) if t]
    return re.sub(r"\s+", " ", unescape(" ".join(parts))).strip()


def name_description(lines: list[str]) -> str | None:
    for line in lines:
        m = re.match(r"^\.\s*Nd\s+(.*)$", line)
        if m:
            return text_of([m.group(1)])
    text = text_of(lines)
    m = re.search(r"\s-{1,2}\s+(.*)$", text) or re.search(r"\\?-\s*(.*)$", text)
    return m.group(1).strip() if m else None


@dataclass(frozen=True)
class Page:
    name: str
    section: str
    query: str
    document: str


def read_source(path: Path) -> str | None:
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    return raw.decode("utf-8", errors="replace")


def parse(path: Path) -> Page | None:
    source = read_source(path)
    if not source or source.lstrip().startswith(".so "):
        return None
    secs = sections(source)
    if "NAME" not in secs or "DESCRIPTION" not in secs:
        return None
    query = name_description(secs["NAME"])
    document = text_of(secs["DESCRIPTION"])[:DOC_CAP].strip()
    if not query or len(query.split()) < 3 or len(document) < 80:
        return None
    stem = path.name[:-3] if path.suffix == ".gz" else path.name
    name, _, section = stem.rpartition(".")
    return Page(name or stem, section, query.rstrip(". "), document)


def pages(root: Path = MAN_ROOT, limit: int | None = None) -> Iterator[Page]:
    """Distinct pages: queries and documents that occur once only, so each query has one answer."""
    files = sorted(p for p in root.glob("man[1-8]/*") if p.is_file() and not p.is_symlink())
    parsed = [pg for pg in (parse(p) for p in files) if pg is not None]
    queries = Counter(pg.query.casefold() for pg in parsed)
    docs = Counter(hashlib.sha256(pg.document.encode()).hexdigest() for pg in parsed)
    count = 0
    for pg in parsed:
        if queries[pg.query.casefold()] > 1 or docs[hashlib.sha256(pg.document.encode()).hexdigest()] > 1:
            continue
        yield pg
        count += 1
        if limit is not None and count >= limit:
            return
