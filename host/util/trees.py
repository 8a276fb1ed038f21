"""Folder trees built whole and swapped in: list, compare, materialize, replace.

The bundler (a payload) and the installer (a plugin's copy in Claude Code's cache) both build
a folder from a plan (relative path → source file or text), compare it with what is on disk so
a rerun writes nothing, and otherwise build it beside the target and rename it into place so
no reader ever sees a half-built folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Collection
from pathlib import Path

CACHE_NAMES = frozenset({"__pycache__", ".git", ".DS_Store", "node_modules", ".pytest_cache"})
CACHE_SUFFIXES = (".pyc", ".pyo")

Tree = dict[Path, "Path | str"]


def walk_files(src: Path, ignored: Collection[str] = CACHE_NAMES) -> list[str]:
    """Files under ``src`` (relative POSIX paths, sorted), skipping ``ignored`` names and bytecode."""
    out: list[str] = []
    base = str(src)
    cut = len(base) + 1
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in ignored)
        prefix = dirpath[cut:] + "/" if len(dirpath) > len(base) else ""
        out.extend(prefix + name for name in sorted(filenames)
                   if name not in ignored and not name.endswith(CACHE_SUFFIXES))
    return out


def same_file(src: Path | str, dest: Path) -> bool:
    """``dest`` holds exactly the bytes of ``src`` (a file, or text)."""
    try:
        if isinstance(src, str):
            data = src.encode("utf-8")
            return dest.stat().st_size == len(data) and dest.read_bytes() == data
        if src.stat().st_size != dest.stat().st_size:
            return False
        return src.read_bytes() == dest.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return False


def tree_matches(out: Path, tree: Tree, *, root_extras: Collection[str] = ()) -> bool:
    """True when ``out`` holds exactly ``tree`` (ignoring bytecode caches and ``root_extras``)."""
    if not out.is_dir():
        return False
    present = set()
    for dirpath, dirnames, filenames in os.walk(out):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        base = Path(dirpath)
        for name in filenames:
            if name.endswith(CACHE_SUFFIXES) or (base == out and name in root_extras):
                continue
            present.add((base / name).relative_to(out))
    if present != set(tree):
        return False
    return all(same_file(src, out / rel) for rel, src in tree.items())


def materialize(target: Path, tree: Tree) -> None:
    """Write ``tree`` under ``target`` (copies keep the executable bit)."""
    made: set[Path] = set()
    for rel, src in sorted(tree.items()):
        dest = target / rel
        if dest.parent not in made:
            dest.parent.mkdir(parents=True, exist_ok=True)
            made.add(dest.parent)
        if isinstance(src, str):
            dest.write_text(src, encoding="utf-8")
        else:
            shutil.copyfile(src, dest)
            mode = src.stat().st_mode
            if mode & 0o111:
                os.chmod(dest, mode & 0o777)


def build_and_swap(out: Path, fill: object) -> None:
    """Build a folder beside ``out`` with ``fill(tmp)``, then rename it into place.

    On any failure the temp folder is removed and ``out`` is left as it was.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.build-", dir=out.parent))
    old: Path | None = None
    try:
        fill(tmp)  # type: ignore[operator]
        os.chmod(tmp, 0o755)
        if out.exists() or out.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.rmdir(old)
            os.rename(out, old)
        os.rename(tmp, out)
    except BaseException:
        if old is not None and not out.exists():
            os.rename(old, out)
            old = None
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
