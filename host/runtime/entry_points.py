"""The plugins' entry points (group ``plughost.plugins``), read without importlib.metadata when plughost
alone declares them (docs/architecture.md#discovery).

``importlib.metadata`` costs a process ~18 ms on the 2-core machine (its email and csv imports, every
installed distribution's ``entry_points.txt`` parsed, a distribution's METADATA parsed through
``email`` for its name), and every ``plughost`` command that loads plugins asks it once. The usual
install has one distribution declaring the group, plughost itself: :func:`entry_points` finds the
distributions as importlib.metadata does (the ``*.dist-info`` / ``*.egg-info`` folders of each
``sys.path`` folder, the first of a name winning) and reads only their ``entry_points.txt``. When
another distribution declares the group, or anything is out of the ordinary (an egg or zip on
``sys.path``, another finder of distributions, a file it cannot read as importlib.metadata would),
the answer is importlib.metadata's own.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import re
import sys
from functools import reduce
from typing import Any

OWN = "plughost"
"""The distribution whose entry points are read here; any other declaring the group goes to importlib.metadata."""

_INFO = (".dist-info", ".egg-info")
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class OwnDistribution:
    """plughost's distribution as an entry point names it: ``name`` and ``version`` from its METADATA."""

    __slots__ = ("name", "version")

    def __init__(self, name: str, version: str) -> None:
        self.name, self.version = name, version


class OwnEntryPoint:
    """One entry point of plughost's distribution: what ``importlib.metadata.EntryPoint`` gives discovery."""

    __slots__ = ("name", "value", "group", "dist")

    def __init__(self, name: str, value: str, group: str, dist: OwnDistribution) -> None:
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def __repr__(self) -> str:
        return f"OwnEntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"

    @property
    def module(self) -> str:
        return self._match().group("module")

    @property
    def attr(self) -> str | None:
        return self._match().group("attr")

    def load(self) -> Any:
        target = importlib.import_module(self.module)
        return reduce(getattr, filter(None, (self.attr or "").split(".")), target)

    def _match(self) -> re.Match[str]:
        found = _VALUE.match(self.value)
        if found is None:  # pragma: no cover - values are checked when read
            raise ValueError(f"entry point {self.name!r}: {self.value!r} is not module[:attr]")
        return found


def entry_points(group: str) -> list[Any]:
    """The group's entry points: :class:`OwnEntryPoint` when plughost alone declares the group,
    else ``importlib.metadata.entry_points(group=group)``."""
    own = _own_only(group)
    if own is not None:
        return own
    import importlib.metadata

    return list(importlib.metadata.entry_points(group=group))


def _normalize(name: str) -> str:
    """importlib.metadata's ``Prepared.normalize``."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _own_only(group: str) -> list[Any] | None:
    """plughost's entry points in ``group`` when no other distribution declares it; None to ask importlib.metadata."""
    if any(getattr(finder, "find_distributions", None) is not None for finder in sys.meta_path
           if finder is not importlib.machinery.PathFinder):
        return None
    header = f"[{group}]"
    seen: set[str] = set()
    found: list[Any] = []
    for entry in sys.path:
        root = entry or "."
        if not isinstance(entry, str) or os.path.basename(root).lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.exists(root):  # a zip on sys.path: its distributions are importlib.metadata's to read
                return None
            continue
        infos = [c for c in children if c.lower().endswith(_INFO)]
        for child in infos:
            stem, ext = os.path.splitext(child)
            if ext not in _INFO:  # an upper-case suffix: importlib.metadata reads the name from METADATA
                return None
            name = _normalize(stem.partition("-")[0])
            if name in seen:
                continue
            seen.add(name)
            text = _read(os.path.join(root, child, "entry_points.txt"))
            if text is None:
                return None
            if header not in text:
                continue
            if name != OWN:
                return None
            own = _entries(text, group, os.path.join(root, child))
            if own is None:
                return None
            found.extend(own)
    return found


def _read(path: str) -> str | None:
    """The file's text; "" when importlib.metadata would find none; None when it would fail."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return ""
    except (OSError, ValueError):
        return None


def _entries(text: str, group: str, info: str) -> list[OwnEntryPoint] | None:
    """The group's entries in an ``entry_points.txt`` (importlib.metadata's ``Sectioned`` reading);
    None when a line is not ``name = module[:attr]`` or the METADATA cannot be read."""
    dist = _distribution(info)
    if dist is None:
        return None
    section: str | None = None
    out = []
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        name, sep, value = line.partition("=")
        if not sep or not _VALUE.match(value.strip()):
            return None
        if section == group:
            out.append(OwnEntryPoint(name.strip(), value.strip(), group, dist))
    return out


def _distribution(info: str) -> OwnDistribution | None:
    """Name and Version from the METADATA (or PKG-INFO) headers, before its first blank line."""
    for file in ("METADATA", "PKG-INFO"):
        text = _read(os.path.join(info, file))
        if text is None:
            return None
        headers: dict[str, str] = {}
        for line in text.splitlines():
            if not line.strip():
                break
            key, sep, value = line.partition(":")
            if sep and key in ("Name", "Version") and key not in headers:
                headers[key] = value.strip()
        if "Name" in headers and "Version" in headers:
            return OwnDistribution(headers["Name"], headers["Version"])
    return None
