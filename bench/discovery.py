"""Discovery + tool-surface computation over a synthetic tree of 500 folder plugins / 10,000 tools.

Prints the wall time of `Host(...).load()` and of the surface, and the ratio against a raw floor
measured in the same run: reading and YAML-parsing the same 500 files with no validation.
Target (issue 2): discovery + surface under 1 s on this machine.

    python bench/discovery.py [--plugins 500] [--tools 10000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def build_tree(root: Path, plugins: int, tools: int) -> None:
    per = tools // plugins
    for i in range(plugins):
        folder = root / f"p{i:04d}"
        folder.mkdir(parents=True)
        lines = [f"name: p{i:04d}", "version: 1.0.0", "description: synthetic plugin", "tools:"]
        for t in range(per):
            lines += [f"  - name: tool-{t:02d}", f"    description: tool {t} of plugin {i}",
                      f"    adminAllowlist: {'true' if t % 5 == 0 else 'false'}"]
        lines += ["mcp:", "  command: python", '  args: ["${CLAUDE_PLUGIN_ROOT}/mcp/__main__.py"]']
        (folder / "PLUGIN.md").write_text("---\n" + "\n".join(lines) + "\n---\n# doc\n", encoding="utf-8")


def raw_floor(root: Path) -> float:
    import yaml

    t0 = time.perf_counter()
    for md in sorted(root.glob("*/PLUGIN.md")):
        text = md.read_text(encoding="utf-8")
        yaml.load(text.split("---")[1], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugins", type=int, default=500)
    ap.add_argument("--tools", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("a bare YAML parse of the same PLUGIN.md files")
    from plughost.runtime.host import Host

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "plugins"
        build_tree(root, args.plugins, args.tools)
        env = dict(os.environ, PLUGHOST_HOME=str(Path(tmp) / "home"))
        loads, surfaces, floors = [], [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            host = Host(plugins_dir=root, env=env).load()
            t1 = time.perf_counter()
            surface = host.surface
            t2 = time.perf_counter()
            loads.append(t1 - t0)
            surfaces.append(t2 - t1)
            floors.append(raw_floor(root))
        total = statistics.median(a + b for a, b in zip(loads, surfaces, strict=True))
        floor = statistics.median(floors)
        print(f"plugins={args.plugins} tools={len(surface.all)} admin={len(surface.admin)} "
              f"mcpServers={len(surface.mcp_servers)}")
        print(f"discovery_s={statistics.median(loads):.3f} surface_s={statistics.median(surfaces):.3f} "
              f"total_s={total:.3f} (target < 1.0)")
        print(f"raw_floor_yaml_s={floor:.3f} ratio_to_floor={total / floor:.2f}x")


if __name__ == "__main__":
    raise SystemExit(bench_results.run("discovery", main))
