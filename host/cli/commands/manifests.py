"""`plughost manifests check PATH` (validate PLUGIN.md files) and `plughost manifests generate PAYLOAD_DIR`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from plughost.payload import plugin_files
from plughost.payload.generator import generate
from plughost.runtime.manifest import manifest_errors, read_frontmatter
from plughost.runtime.plugin_checks import host_range_defects, import_warnings, tool_defects
from plughost.util.errors import UserError
from plughost.util.log import log


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="validate one plugin folder or a tree; exit 2 with one line per defect")
    check.add_argument("path", type=Path)
    check.set_defaults(_action=run_check)
    gen = sub.add_parser("generate", help="write .claude-plugin/plugin.json and marketplace.json over a payload tree")
    gen.add_argument("payload", type=Path, metavar="PAYLOAD_DIR")
    gen.add_argument("--brand", default=None, help="brand name for marketplace names (default: PAYLOAD_DIR/brand.json)")
    gen.set_defaults(_action=run_generate)


def find_manifests(path: Path) -> list[Path]:
    if path.is_file() and path.name == "PLUGIN.md":
        return [path]
    if (path / "PLUGIN.md").is_file():
        return [path / "PLUGIN.md"]
    skip = {".git", "node_modules", ".venv", "__pycache__"}
    return sorted(p for p in path.rglob("PLUGIN.md") if not skip.intersection(p.parts))


def run_check(args: argparse.Namespace, ctx: Any) -> int:
    if not args.path.exists():
        raise UserError(f"PATH: '{args.path}' does not exist; expected a plugin folder or a tree of them")
    manifests = find_manifests(args.path)
    files = claude_file_findings(args.path, manifests)
    if not manifests and not files.checked:
        raise UserError(f"PATH: no PLUGIN.md found under '{args.path}'")
    defects = [line for md in manifests for line in manifest_errors(md)]
    valid = not defects
    if not defects:
        defects = [d.line() for d in host_range_defects(manifests)]
    if not defects:
        defects = [d.line() for d in tool_defects(manifests, ctx.env)]
    defects += [f.line() for f in files.findings if f.severity == "error"]
    for line in defects:
        print(line, file=sys.stderr)
    for finding in files.findings:
        if finding.severity != "error":
            print(finding.line(), file=sys.stderr)
    for w in import_warnings(manifests) if valid else ():  # a warning: exit 0 stays exit 0
        log("manifests", "warn", file=str(w.file), line=w.line, module=w.module, detail=w.detail)
    if not defects:
        print(f"ok: {len(manifests)} PLUGIN.md file(s) valid, {files.checked} Claude Code folder(s) checked")
    return 2 if defects else 0


class _Files:
    def __init__(self) -> None:
        self.findings: list[Any] = []
        self.checked = 0


def claude_file_findings(path: Path, manifests: list[Path]) -> _Files:
    """The Claude Code files (plugin.json, hooks, skills, agents, marketplace.json) of every plugin folder
    under ``path`` (one with a PLUGIN.md or a generated plugin.json) and every marketplace folder, checked
    as the pinned Claude Code CLI checks them (:mod:`plughost.payload.plugin_files`)."""
    out = _Files()
    root = path.parent if path.is_file() else path
    skip = {".git", "node_modules", ".venv", "__pycache__"}
    folders: dict[Path, str | None] = {}
    for md in manifests:
        name = None
        if not manifest_errors(md):
            name = str(read_frontmatter(md)[0].get("name") or "") or None
        folders[md.parent] = name
    for pj in sorted(root.rglob(str(plugin_files.PLUGIN_JSON))):
        if not skip.intersection(pj.parts):
            folders.setdefault(pj.parent.parent, None)
    for folder, name in sorted(folders.items()):
        out.checked += 1
        out.findings.extend(plugin_files.check_plugin(folder, name, generated=False))
    for mj in sorted(root.rglob(str(plugin_files.MARKETPLACE_JSON))):
        if not skip.intersection(mj.parts):
            out.checked += 1
            out.findings.extend(plugin_files.check_marketplace(mj.parent.parent))
    return out


def run_generate(args: argparse.Namespace, ctx: Any) -> int:
    report = generate(args.payload, brand=args.brand)
    log("manifests", "op=generate", payload=str(args.payload.resolve()), plugins=report.plugins,
        marketplaces=report.marketplaces, written=len(report.written), unchanged=report.unchanged)
    print(f"generated: {report.plugins} plugin(s), {report.marketplaces} marketplace(s); "
          f"{len(report.written)} file(s) written, {report.unchanged} unchanged")
    return 0


def run(args: argparse.Namespace, ctx: Any) -> int:
    return args._action(args, ctx)
