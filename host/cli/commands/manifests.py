"""`plughost manifests check PATH` (validate PLUGIN.md files) and `plughost manifests generate PAYLOAD_DIR`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from plughost.payload import plugin_files
from plughost.payload.generator import generate
from plughost.runtime import hostrange
from plughost.runtime.host import Host
from plughost.runtime.manifest import load_manifest, manifest_errors, read_frontmatter
from plughost.util import settings
from plughost.util.errors import UserError
from plughost.util.log import log

HELP = "validate PLUGIN.md files (check) and generate Claude Code manifests (generate)"


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
    if not defects:
        defects = host_range_defects(manifests)
    if not defects:
        defects = tool_defects(manifests, ctx.env)
    defects += [f.line() for f in files.findings if f.severity == "error"]
    for line in defects:
        print(line, file=sys.stderr)
    for finding in files.findings:
        if finding.severity != "error":
            print(finding.line(), file=sys.stderr)
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


def host_range_defects(manifests: list[Path]) -> list[str]:
    """A PLUGIN.md whose ``requires-plughost`` excludes this host: the plugin would never load here."""
    out = []
    for md in manifests:
        problem = hostrange.problem(load_manifest(md).requires_plughost)
        if problem:
            out.append(f"{md}: requires-plughost: {problem}")
    return out


def tool_defects(manifests: list[Path], env: Any = None) -> list[str]:
    """Load the plugins with a ``python:`` module and join their tools (the host's tool table):
    a handler PLUGIN.md does not declare, a declaration without handler or an ``inputSchema``
    the handler cannot take is a defect of that PLUGIN.md."""
    by_parent: dict[Path, dict[str, Path]] = {}
    for md in manifests:
        manifest = load_manifest(md)
        if manifest.python:
            by_parent.setdefault(md.parent.parent, {})[manifest.name] = md
    out: list[str] = []
    for parent, named in sorted(by_parent.items()):
        full = dict(os.environ if env is None else env)
        full[settings.LOAD_PLUGINS.name] = ",".join(sorted(named))
        full.pop(settings.DISABLE_PLUGINS.name, None)
        host = Host(plugins_dir=parent, premium_dir=None, env=full).load()
        table = host.tools()
        for name, md in sorted(named.items()):
            record = host.records.get(name)
            if record is None or not record.loaded:
                out.append(f"{md}: python: {record.reason if record else 'not loaded'}")
                continue
            problems = [f"{md}: tools: '{p.tool}' {p.detail}" for p in table.problems_of(name)]
            out.extend(problems)
            if not any("plughost_tools failed" in line for line in problems):  # not already named above
                out.extend(f"{md}: tools: plughost_tools failed: {e.reason}" for e in table.hook_errors
                           if e.plugin == name)
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
