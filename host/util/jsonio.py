"""Deterministic JSON rendering and atomic, write-only-when-changed file updates.

The generator, bundler and installer all promise idempotence: a rerun over unchanged input
writes no byte and leaves every mtime alone. They get it from here: render with sorted keys
and a trailing newline, compare with what is on disk, and only then write a temp file beside
the target and ``os.replace`` it (a reader never sees a half-written file).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from plughost.util.jsonparse import BadLine, parse_line


def render(data: Any, *, sort_keys: bool = True) -> str:
    """Stable text for a JSON document: 2-space indent, sorted keys, trailing newline."""
    return json.dumps(data, indent=2, sort_keys=sort_keys, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write via a temp file in the same folder and ``os.replace`` (atomic on POSIX)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_if_changed(path: Path, text: str | bytes) -> bool:
    """Write only when the bytes differ from the file on disk. Returns True when it wrote."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        if path.read_bytes() == data:
            return False
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        pass
    write_atomic(path, data)
    return True


def read_json(path: Path, *, default: Any = None) -> Any:
    """Parse a JSON file; ``default`` when it does not exist. Bad JSON (deep nesting, bytes that are
    not UTF-8 included) raises ValueError naming the file, with :func:`plughost.util.jsonparse.parse_line`'s reason."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return default
    try:
        return parse_line(raw, surrogates=False)
    except BadLine as exc:
        raise ValueError(f"{path}: {exc}") from None


def jsonl_file_problem(path: Path, sample: int = 64 * 1024) -> str | None:
    """Why ``path`` cannot be a JSON-lines file to import, in one line; None when it may be.

    Checked before a single line is read, so a folder or a binary file (an archive, a database)
    is one clear line, not "no such file" or a skip line per chunk of bytes."""
    if path.is_dir():
        return f"{path}: is a folder; expected a JSON-lines file"
    if not path.is_file():
        return f"{path}: no such file (expected a JSON-lines file)"
    try:
        with path.open("rb") as fh:
            head = fh.read(sample)
    except OSError as exc:
        return f"{path}: cannot read it ({exc.strerror or exc}); expected a JSON-lines file"
    if b"\0" in head:
        return f"{path}: not a text JSON-lines file (it holds binary data)"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the sample's end
            return f"{path}: not a text JSON-lines file (not UTF-8 text at byte {exc.start})"
    return None
