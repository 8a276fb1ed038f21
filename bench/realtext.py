"""A real-text evaluation set: the Debian FAQ split into passages, with hand-written questions.

The text is read at bench time from the installed Debian package ``debian-faq``
(``apt-get install -y debian-faq``; /usr/share/doc/debian/FAQ/debian-faq.en.txt.gz), never
committed: the repository holds only the questions and the ids of their evidence passages
(bench/data/realtext_questions.json, which records the package version the ids were read from).
The FAQ is (C) Software in the Public Interest, under a verbatim-copying and modified-versions
permission notice (/usr/share/doc/debian-faq/copyright); the bench reads it in place.

Passages: every numbered section (``7.4. What is a Debian control file?``) is cut into its
paragraphs; a bullet list, an indented example or a very short paragraph joins the paragraph
before it (up to :data:`PASSAGE_CAP` characters), so a passage is about one paragraph or one
short answer. A passage id is ``faq:<section>#<n>`` (``faq:ch<chapter>#<n>`` for the
paragraphs before a chapter's first section), n counting from 1 within the section: stable
for a given package version. The FAQ is not threaded, so the passages go in as
KnowledgeDocument nodes (title = the section heading, content = the paragraph), not as Messages.

Question types: ``single`` (one evidence passage), ``multi-hop`` (two or more passages, the
answer needs each), ``temporal`` (asks when, or about dates and release order) and
``open-domain`` (an inference from what a passage says rather than a fact it states).
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "debian-faq"
SOURCE = Path("/usr/share/doc/debian/FAQ/debian-faq.en.txt.gz")
QUESTIONS = Path(__file__).resolve().parent / "data" / "realtext_questions.json"
PASSAGE_CAP = 1600
SHORT = 80
TYPES = ("single", "multi-hop", "temporal", "open-domain")

_HEADING = re.compile(r"^(\d+(?:\.\d+)+)\.\s+(\S.*)$")
_CHAPTER = re.compile(r"^Chapter\s+(\d+)\.\s+(\S.*)$")


@dataclass(frozen=True)
class Passage:
    id: str
    section: str
    heading: str
    text: str

    @property
    def document(self) -> str:
        """What is embedded and what the bench's own BM25 reads: the heading, then the paragraph."""
        return f"{self.heading}\n{self.text}"


@dataclass(frozen=True)
class RealQuestion:
    text: str
    type: str
    evidence: tuple[str, ...]


class MissingSource(RuntimeError):
    pass


def installed_version(package: str = PACKAGE) -> str | None:
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True,
                             check=False)
    except OSError:
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _blocks(lines: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        if line.strip():
            current.append(line)
        elif current:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def _flat(block: list[str]) -> str:
    return re.sub(r"\s+", " ", " ".join(x.strip() for x in block)).strip()


def split(source: str) -> list[Passage]:
    """The numbered sections of the FAQ's text rendering, and each chapter's introduction, cut into
    passages (the table of contents, indented, is not read)."""
    sections: list[tuple[str, list[str], list[str]]] = []  # (number, heading lines, body lines)
    in_heading = False
    for line in source.splitlines():
        m = _HEADING.match(line)
        if m:
            sections.append((m.group(1), [m.group(2)], []))
            in_heading = True
            continue
        c = _CHAPTER.match(line)
        if c:  # a chapter's own introduction, before its first section: "faq:ch3#1"
            sections.append((f"ch{c.group(1)}", [c.group(2)], []))
            in_heading = True
            continue
        if not sections:
            continue
        if in_heading and line.strip() and not line.startswith(" "):
            sections[-1][1].append(line)  # a heading wrapped onto the next line
            continue
        in_heading = False
        sections[-1][2].append(line)
    passages: list[Passage] = []
    for number, heading_lines, body in sections:
        heading = _flat(heading_lines)
        texts: list[str] = []
        for block in _blocks(body):
            text = _flat(block)
            indent = len(block[0]) - len(block[0].lstrip())
            joins = bool(texts) and (indent > 4 or text.startswith(("*", "o ")) or len(text) < SHORT
                                     or len(texts[-1]) < SHORT or texts[-1].endswith(":"))
            if joins and len(texts[-1]) + len(text) < PASSAGE_CAP:
                texts[-1] = f"{texts[-1]} {text}"
            else:
                texts.append(text)
        for n, text in enumerate(texts, start=1):
            passages.append(Passage(f"faq:{number}#{n}", number, heading, text))
    return passages


def passages(path: Path = SOURCE) -> list[Passage]:
    if not path.is_file():
        raise MissingSource(f"realtext: {path} is missing: apt-get install -y {PACKAGE}")
    return split(gzip.decompress(path.read_bytes()).decode("utf-8"))


def load_questions(path: Path = QUESTIONS) -> tuple[dict, list[RealQuestion]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["source"], [RealQuestion(q["question"], q["type"], tuple(q["evidence"])) for q in data["questions"]]


def check(questions: list[RealQuestion], ids: set[str]) -> list[str]:
    """Problems with the questions against the passages: unknown locators, bad types, empty evidence."""
    problems = []
    for q in questions:
        if q.type not in TYPES:
            problems.append(f"{q.text!r}: unknown type {q.type!r}")
        if not q.evidence or len(set(q.evidence)) != len(q.evidence):
            problems.append(f"{q.text!r}: evidence empty or repeated")
        if q.type == "multi-hop" and len(q.evidence) < 2:
            problems.append(f"{q.text!r}: multi-hop with one evidence passage")
        problems += [f"{q.text!r}: no passage {e}" for e in q.evidence if e not in ids]
    return problems


def load() -> tuple[list[Passage], list[RealQuestion], str]:
    """The passages and the questions, or :class:`MissingSource` with one line saying what to install
    or which locators no longer resolve; the third value notes a package version other than the one
    the questions were written against."""
    source, questions = load_questions()
    found = passages()
    problems = check(questions, {p.id for p in found})
    version = installed_version(source["package"])
    if problems:
        raise MissingSource(f"realtext: {len(problems)} evidence locators do not resolve in {source['package']} "
                            f"{version} (written against {source['version']}), first: {problems[0]}")
    note = "" if version == source["version"] else f" (questions written against {source['version']})"
    return found, questions, f"{source['package']} {version}{note}"


if __name__ == "__main__":  # list the passages, for writing and checking questions
    for p in passages():
        print(f"[{p.id}] ({p.heading}) {p.text}\n")
