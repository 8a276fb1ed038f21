"""The import worker's optional compiled accelerator.

The staging worker (:mod:`plugins.graph.staging`) spends its time in CPython's interpreter:
parsing, validating and row building, line by line. ``scripts/build_accel.py`` compiles the
modules it runs (``MODULES``, unchanged Python source) with Cython into
``build/accel/<tag>/``; the worker process loads them from there instead of the source, which
cuts its instructions by about a fifth. The importing process and every other command keep the
source modules.

``<tag>`` hashes the exact source of every compiled module and the interpreter's ABI, so a
build is only ever used for the source it was compiled from: an edited module, another Python,
or no build at all means the worker runs the source, with the same results (the staged-import
differential test compares both against the ordinary upsert path).
``PLUGHOST_IMPORT_ACCEL=0`` turns it off.

This module is imported by the worker before any module it accelerates, so it imports none.
"""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The install root: the compiled modules' source paths are relative to it."""
MODULES = ("host/jsonl.py", "plugins/graph/common.py", "plugins/graph/staging.py")
"""What the accelerator compiles: the worker's per-line path (line reader, validation, stager)."""
PACKAGES = ("host", "plugins.graph")
"""The packages of ``MODULES``, whose search path the worker extends."""


def tag(root: Path = ROOT) -> str:
    """The build's name: the compiled sources and the interpreter ABI they were compiled for."""
    h = hashlib.sha256()
    h.update(f"{sys.version}\0{extension_suffix()}\0".encode())
    for rel in MODULES:
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def extension_suffix() -> str:
    """The file ending of this interpreter's compiled modules (``.cpython-311-x86_64-linux-gnu.so``)."""
    return str(sysconfig.get_config_var("EXT_SUFFIX"))


def directory(root: Path = ROOT) -> Path:
    return root / "build" / "accel" / tag(root)


def available(env: dict[str, str] | os._Environ[str] | None = None, root: Path = ROOT) -> Path | None:
    """The build for this exact source and interpreter, or None (none built, stale, or turned off)."""
    if ((env if env is not None else os.environ).get("PLUGHOST_IMPORT_ACCEL") or "1").strip() == "0":
        return None
    try:
        built = directory(root)
    except OSError:  # a source file is missing (a partial install): no accelerator
        return None
    return built if (built / "complete").is_file() else None


def activate() -> bool:
    """Put the build first on the search path of ``PACKAGES`` (before anything imports their
    compiled modules). Returns whether it did."""
    built = available()
    if built is None:
        return False
    for name in (rel[:-3].replace("/", ".") for rel in MODULES):
        if name in sys.modules:  # imported already: too late to load the compiled one
            raise RuntimeError(f"plugins.graph.accel: {name} was imported before the accelerator")
    import importlib

    for package in PACKAGES:
        module = importlib.import_module(package)
        module.__path__.insert(0, str(built.joinpath(*package.split("."))))
    return True
