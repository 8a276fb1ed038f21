#!/usr/bin/env python3
"""Print the cyclomatic-complexity report (radon) for ``host/`` and ``plugins/``.

Every function or method above the limit (25) is listed with its reason, the text of a
``# cc: <reason>`` comment on its ``def`` line or the line above. The exit status is 1 when a
function above the limit has no reason, else 0. Run from anywhere:

    .venv/bin/python scripts/cc.py            # the report
    .venv/bin/python scripts/cc.py --limit 20 # a stricter look (reasons still read the same way)
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Function

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("host", "plugins")
LIMIT = 25
REASON = re.compile(r"#\s*cc:\s*(?P<reason>\S.*?)\s*$")
# Files being reshaped by the one-import-pipeline step of issue #46: a function above the limit
# here is reported as exempt, not as a failure, until that step lands.
EXEMPT = frozenset({
    "host/ports/jsonl.py",
    "plugins/graph/staging.py",
    "plugins/graph/neo4j_store/bulk.py",
    "plugins/memory/bulk_import.py",
    "plugins/memory/commands/bulk_import.py",
})


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    name: str
    complexity: int
    reason: str  # "" when none is written


def _functions(blocks: list) -> list[Function]:
    """Functions and methods (radon lists each method once as a block of its own, and a class
    block whose complexity sums its methods, which is left out here)."""
    return [block for block in blocks if isinstance(block, Function)]


def _reason(lines: list[str], lineno: int) -> str:
    """The ``# cc:`` reason on the def line (1-based ``lineno``) or the line above it."""
    for index in (lineno - 1, lineno - 2):
        if 0 <= index < len(lines):
            match = REASON.search(lines[index])
            if match:
                return match.group("reason")
    return ""


def scan(repo: Path = REPO, limit: int = LIMIT) -> list[Finding]:
    """Every function above ``limit`` under the roots, worst first."""
    found: list[Finding] = []
    for root in ROOTS:
        for path in sorted((repo / root).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            lines = source.splitlines()
            rel = path.relative_to(repo).as_posix()
            for func in _functions(cc_visit(source)):
                if func.complexity > limit:
                    name = f"{func.classname}.{func.name}" if func.classname else func.name
                    found.append(Finding(rel, func.lineno, name, func.complexity,
                                         _reason(lines, func.lineno)))
    return sorted(found, key=lambda f: (-f.complexity, f.path, f.line))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=LIMIT, help=f"report functions above this (default {LIMIT})")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to read (default: this one)")
    args = parser.parse_args(argv)
    findings = scan(args.repo, limit=args.limit)
    missing = 0
    for f in findings:
        if f.reason:
            note = f"reason: {f.reason}"
        elif f.path in EXEMPT:
            note = "exempt: file under rework (issue #46, one import pipeline)"
        else:
            note = "NO REASON"
            missing += 1
        print(f"{f.path}:{f.line} {f.name} cc={f.complexity} {note}")
    print(f"[cc] limit={args.limit} above={len(findings)} without_reason={missing}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
