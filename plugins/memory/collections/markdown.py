"""The built-in Markdown source: frontmatter, title, ``[[wikilinks]]`` and relative Markdown links.

Title: the frontmatter ``title``, else the first ``# heading``, else the file name. Links inside
fenced code are ignored; ``[[target|alias]]`` / ``[[target#heading]]`` keep the target;
``[text](other.md)`` keeps relative paths to Markdown files (URLs and anchors are not notes).
"""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from plughost import CollectionSource

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_WIKILINK = re.compile(r"!?\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_MDLINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.S | re.M)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


_SIMPLE_KEY = re.compile(r"^([A-Za-z_][\w-]*):(?:[ \t]+(.*?))?[ \t]*$")
_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9 ._()/+'-]*$")
_INT = re.compile(r"^-?(?:0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"^-?(?:0|[1-9][0-9]*)\.[0-9]+$")
_YAML_WORDS = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False, "null": None}
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _scalar(text: str) -> Any:
    """A plain or quoted YAML scalar as YAML reads it; raises ValueError for anything fancier."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        inner = text[1:-1]
        if "\\" in inner or text[0] in inner:
            raise ValueError(text)
        return inner
    if text == "~":
        return None
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if not _PLAIN.match(text) or text.endswith(" ") or " #" in text:
        raise ValueError(text)
    if text.lower() in _YAML_WORDS:
        if text not in (text.lower(), text.upper(), text.capitalize()):
            raise ValueError(text)  # "tRue" is a string to YAML; not worth mirroring
        return _YAML_WORDS[text.lower()]
    return text


_NON_STRING_KEYS = frozenset(
    f(word) for word in ("yes", "no", "true", "false", "on", "off", "null") for f in (str.lower, str.title, str.upper))


def simple_yaml(block: str) -> dict[str, Any]:
    """The frontmatter most notes have (``key: scalar``, ``key: [a, b]``, ``key:`` + ``- item`` lines)
    without a YAML parser; ValueError for anything else, which then goes to the real one."""
    out: dict[str, Any] = {}
    open_keys: set[str] = set()  # ``key:`` with nothing after it: null, or a block list that follows
    key: str | None = None
    for line in block.splitlines():
        if not line.strip():
            continue
        if line.lstrip().startswith("- ") and key in open_keys:
            out[key].append(_scalar(line.strip()[2:].strip()))
            continue
        key = None
        m = _SIMPLE_KEY.match(line)
        if not m or m.group(1) in out:
            raise ValueError(line)
        key, value = m.group(1), (m.group(2) or "").strip()
        if key in _NON_STRING_KEYS:  # YAML reads `on:` or `null:` as a bool or null key: the real parser decides
            raise ValueError(line)
        if not value:
            out[key] = []
            open_keys.add(key)
        elif value.startswith("[") and value.endswith("]"):
            inner = value[1:-1].strip()
            out[key] = [_scalar(v.strip()) for v in inner.split(",")] if inner else []
        else:
            out[key] = _scalar(value)
    return {k: (None if k in open_keys and v == [] else v) for k, v in out.items()}


_OPENING = re.compile(r"\A---[ \t]*\r?\n")
_KEY_LINE = re.compile(r"^[A-Za-z_][\w-]*:(?:\s|$)")


def read_frontmatter(text: str) -> tuple[dict[str, Any], str, str | None]:
    """``(frontmatter, body, warning)``. A block that is not valid YAML, or a ``---`` opening
    ``key: value`` lines that is never closed, is broken frontmatter: left out of the body (it
    would end up in the summary) with a warning. A block YAML reads as text is Markdown (a rule
    and a heading) and stays."""
    m = _FRONTMATTER.match(text)
    if not m:
        opening = _OPENING.match(text)
        if opening:
            after = text[opening.end():]
            lines = after.splitlines(keepends=True)
            first = next((line for line in lines if line.strip()), "")
            if _KEY_LINE.match(first):
                kept = 0  # the block is its key lines (with their list items and continuations), no more
                for line in lines:
                    if line.strip() and not (_KEY_LINE.match(line) or line[:1] in " \t-"):
                        break
                    if not line.strip() and kept and not lines[kept - 1].strip():
                        break
                    kept += 1
                return {}, "".join(lines[kept:]).lstrip("\r\n"), "frontmatter not closed by '---'; left out"
        return {}, text, None
    try:
        return simple_yaml(m.group(1)), text[m.end():], None
    except ValueError:
        pass
    try:
        data = yaml.load(m.group(1), Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        return {}, text[m.end():], f"frontmatter is not valid YAML{where}; left out"
    if not isinstance(data, dict):
        return {}, text[m.end():] if data is None else text, None
    return {str(k): v for k, v in data.items()}, text[m.end():], None


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """``(frontmatter, body)`` (see :func:`read_frontmatter`)."""
    front, body, _ = read_frontmatter(text)
    return front, body


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v.strip().lstrip("#") for v in value.split(",") if v.strip().lstrip("#")]
    if isinstance(value, list):
        return [str(v).strip() for v in value if isinstance(v, (str, int, float)) and str(v).strip()]
    return []


def _without_code(body: str) -> str:
    """The body with fenced code blocks removed (the regex only runs when a fence can be there)."""
    return _FENCE.sub("", body) if "```" in body or "~~~" in body else body


def links(body: str) -> list[tuple[str, str]]:
    return _links(_without_code(body))


def _links(text: str) -> list[tuple[str, str]]:
    """Links of code-free text; each pattern runs only when its opening can be there."""
    out: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for m in _WIKILINK.finditer(text) if "[[" in text else ():
        key = ("wikilink", m.group(1).strip())
        if key[1] and key not in seen:
            seen.add(key)
            out.append(key)
    for m in _MDLINK.finditer(text) if "](" in text else ():
        target = m.group(1).split("#", 1)[0]
        if not target or _SCHEME.match(target) or not target.lower().endswith((".md", ".markdown")):
            continue
        from urllib.parse import unquote

        key = ("markdown", unquote(target))
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def parse(text: str, relpath: str) -> dict[str, Any]:
    front, body, warning = read_frontmatter(text)
    code_free = _without_code(body)
    title = front.get("title") if isinstance(front.get("title"), (str, int, float)) else None
    if not title:
        m = _H1.search(code_free)
        title = m.group(1) if m else os.path.splitext(os.path.basename(relpath))[0]
    return {
        "title": " ".join(str(title).split())[:200] or relpath,
        "body": body,
        "frontmatter": front,
        "links": _links(code_free),
        "aliases": _strings(front.get("aliases") or front.get("alias")),
        "keywords": _strings(front.get("tags") or front.get("keywords")),
        "warnings": [warning] if warning else [],
    }


MARKDOWN = CollectionSource("markdown", ("**/*.md", "**/*.markdown"), parse)
