#!/usr/bin/env python3
"""Print how many of the docs' sentences run long: per file and in total.

For each Markdown file (by default ``README.md`` and ``docs/*.md``) this prints the sentences
counted, the sentences over ``--words`` words (60), their share of the sentences and the share of
the prose's words that sit in them. ``--max-share 0.07`` exits 1 when the total share of long
sentences is above it (each file's share is printed, not bounded). Run from anywhere:

    .venv/bin/python scripts/prose.py --max-share 0.07
    .venv/bin/python scripts/prose.py --show docs/channels.md     # also print the long sentences

What is prose, and what a sentence is (one simple splitter, on purpose):

1. Left out before counting: fenced code blocks, tables (lines starting ``|``), HTML comments,
   headings, and the URLs of links (``[text](url)`` counts as ``text``).
2. An inline code span (```...```) counts as one word, whatever it holds.
3. A block is a paragraph or one list item; a sentence never crosses blocks, so a list cuts the
   sentence that introduces it.
4. Inside a block, a sentence ends at ``.``, ``!`` or ``?`` (optionally followed by a closing
   bracket, quote or ``*``) followed by whitespace and an upper-case letter, a digit or an
   opening mark; ``e.g. x`` does not end one. A block's tail is a sentence too.
5. A word is a whitespace-separated token holding a letter or a digit.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIMIT = 60

_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s+")
_CODE = re.compile(r"`+[^`]*?`+")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_END = re.compile(r"(?<=[.!?])[)\]\"'*_]*\s+(?=[A-Z0-9(\[`\"'*_])")
_WORD = re.compile(r"[A-Za-z0-9]")


@dataclass(frozen=True)
class Count:
    path: str
    sentences: int
    long: int
    words: int = 0
    long_words: int = 0

    @property
    def share(self) -> float:
        return self.long / self.sentences if self.sentences else 0.0


def blocks(text: str) -> Iterator[str]:
    """The prose blocks of a Markdown text: paragraphs and list items, each joined to one line."""
    text = _COMMENT.sub("", text)
    current: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        stripped = line.strip()
        starts_item = bool(_LIST_ITEM.match(line))
        if fenced or not stripped or stripped.startswith(("|", "#")) or starts_item:
            if current:
                yield " ".join(current)
            current = []
            if starts_item and not fenced:
                current = [_LIST_ITEM.sub("", line, count=1).strip()]
            continue
        current.append(stripped.lstrip("> ").strip())
    if current:
        yield " ".join(current)


def sentences(text: str) -> Iterator[str]:
    for block in blocks(text):
        block = _LINK.sub(r"\1", _CODE.sub("CODE", block))
        for sentence in _END.split(block):
            if _WORD.search(sentence):
                yield sentence


def words(sentence: str) -> int:
    return sum(1 for token in sentence.split() if _WORD.search(token))


def count(path: Path, limit: int = LIMIT) -> Count:
    lengths = [words(s) for s in sentences(path.read_text(encoding="utf-8"))]
    name = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
    return Count(name, len(lengths), sum(1 for n in lengths if n > limit), sum(lengths),
                 sum(n for n in lengths if n > limit))


def default_paths() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="Markdown files (default: README.md docs/*.md)")
    parser.add_argument("--words", type=int, default=LIMIT, help="a sentence over this many words is long")
    parser.add_argument("--max-share", type=float, help="exit 1 when the total share of long sentences is above it")
    parser.add_argument("--show", action="store_true", help="print each long sentence with its word count")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.paths] or default_paths()
    for path in paths:
        if not path.is_file():
            print(f"prose: no such file: {path}", file=sys.stderr)
            return 2
    counts = [count(p, args.words) for p in paths]
    total = Count("total", sum(c.sentences for c in counts), sum(c.long for c in counts),
                  sum(c.words for c in counts), sum(c.long_words for c in counts))
    width = max(len(c.path) for c in counts)
    print(f"{'file':<{width}}  sentences  over {args.words}  share  words in them")
    for path, c in [*zip(paths, counts, strict=True), (None, total)]:
        word_share = c.long_words / c.words if c.words else 0.0
        print(f"{c.path:<{width}}  {c.sentences:>9}  {c.long:>7}  {c.share:5.1%}  {word_share:13.1%}")
        if args.show and path is not None:
            for s in sentences(path.read_text(encoding="utf-8")):
                if words(s) > args.words:
                    print(f"    [{words(s)}] {s}")
    if args.max_share is not None and total.share > args.max_share:
        print(f"prose: {total.share:.1%} of sentences run over {args.words} words (at most {args.max_share:.1%})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
