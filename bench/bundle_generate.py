"""Bundle + manifest generation over a synthetic tree (bench/RESULTS.md#bundle_generate): 500 plugins, 200 with MCP
servers, 20 premium bundles. Targets: bundle + generate < 3 s wall; the rerun < 1 s and
writes no file. Prints figures and ratios to a raw baseline measured in the same run
(``shutil.copytree`` of the same sources: the cost of just copying the files).

Run: ``.venv/bin/python bench/bundle_generate.py [--plugins 500 --mcp 200 --bundles 20]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def make_plugin(folder: Path, name: str, *, mcp: bool, index: int) -> None:
    folder.mkdir(parents=True)
    tools = "".join(
        f"  - name: {name}-tool-{t}\n    description: \"Tool {t} of {name}.\"\n"
        f"    adminAllowlist: {'true' if t == 0 else 'false'}\n"
        "    inputSchema:\n      type: object\n      properties:\n        text: {type: string}\n"
        for t in range(2 + index % 4)
    ) if mcp else ""
    front = [f"name: {name}", f"description: \"Synthetic plugin {name}.\"", f"version: 1.{index % 7}.0",
             "author: bench"]
    if mcp:
        front += ["tools:", tools.rstrip("\n"), "mcp:", "  command: python",
                  "  args: [\"${CLAUDE_PLUGIN_ROOT}/mcp/__main__.py\"]", f"python: {name.replace('-', '_')}_tools"]
        (folder / "mcp").mkdir()
        (folder / "mcp" / "__main__.py").write_text(
            f"from plughost.mcp.server import run_plugin_server\n\nrun_plugin_server({name!r})\n")
        (folder / f"{name.replace('-', '_')}_tools.py").write_text("# handlers\n")
    (folder / "PLUGIN.md").write_text("---\n" + "\n".join(front) + "\n---\n# " + name + "\n\nDocs.\n")
    skill = folder / "skills" / f"{name}-skill"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: {name}-skill\ndescription: a skill\n---\nDo it.\n")
    if index % 3 == 0:
        (folder / "agents").mkdir()
        (folder / "agents" / f"{name}-agent.md").write_text(f"---\nname: {name}-agent\ndescription: x\n---\nAct.\n")
    if index % 5 == 0:
        (folder / "hooks").mkdir()
        (folder / "hooks" / "hooks.json").write_text('{"hooks": {}}\n')


def make_tree(root: Path, plugins: int, with_mcp: int, bundles: int) -> tuple[Path, Path, Path, int]:
    """Platform folder, premium folder, brand file; half the bundles standalone, half nested (3 subs)."""
    platform, premium = root / "src-plugins", root / "src-premium"
    standalone = bundles // 2
    nested = bundles - standalone
    premium_count = standalone + nested * 3
    platform_count = plugins - premium_count
    mcp_every = plugins / max(with_mcp, 1)
    made = 0
    mcp_made = 0

    def next_mcp() -> bool:
        nonlocal made, mcp_made
        want = mcp_made < with_mcp and made >= mcp_made * mcp_every
        made += 1
        mcp_made += want
        return want

    for i in range(platform_count):
        make_plugin(platform / f"p{i:03d}", f"p{i:03d}", mcp=next_mcp(), index=i)
    for b in range(standalone):
        make_plugin(premium / f"solo{b:02d}", f"solo{b:02d}", mcp=next_mcp(), index=b)
    for b in range(nested):
        top = premium / f"suite{b:02d}"
        (top / "agents").mkdir(parents=True)
        (top / "agents" / f"suite{b:02d}-lead.md").write_text("---\nname: lead\ndescription: x\n---\nLead.\n")
        for s in range(3):
            make_plugin(top / "plugins" / f"suite{b:02d}-s{s}", f"suite{b:02d}-s{s}", mcp=next_mcp(), index=s)
    brand = root / "bench-brand.json"
    all_bundles = sorted(p.name for p in premium.iterdir())
    brand.write_text(json.dumps({"name": "bench", "productName": "Bench", "plugins": {"excluded": ["p000", "p001"]},
                                 "shipsPremiumBundles": all_bundles}))
    return platform, premium, brand, mcp_made


class Timer:
    """Wall and CPU seconds of a block (CPU time shows the cost when the machine is shared)."""

    def __enter__(self) -> Timer:
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0

    def __str__(self) -> str:
        return f"{self.wall:6.3f} s wall ({self.cpu:.3f} s cpu)"


def snapshot(root: Path) -> dict[str, int]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            out[p] = os.stat(p).st_mtime_ns
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plugins", type=int, default=500)
    parser.add_argument("--mcp", type=int, default=200)
    parser.add_argument("--bundles", type=int, default=20)
    bench_results.add_flag(parser)
    args = parser.parse_args()
    bench_results.floor("shutil.copytree of the same source trees (measured in the same run)")

    os.environ.setdefault("PLUGHOST_HOME", tempfile.mkdtemp(prefix="plughost-bench-home-"))
    os.environ["PLUGHOST_LOG_FILE"] = os.environ.get("PLUGHOST_LOG_FILE", "1")
    from plughost.payload.bundler import bundle
    from plughost.payload.generator import generate

    with tempfile.TemporaryDirectory(prefix="plughost-bench-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        platform, premium, brand, mcp_made = make_tree(root, args.plugins, args.mcp, args.bundles)
        print(f"synthetic tree: {args.plugins} plugins ({mcp_made} with MCP servers), {args.bundles} premium "
              f"bundles; built in {time.perf_counter() - t0:.2f} s")

        # raw baseline: copying the same source trees
        with Timer() as raw:
            shutil.copytree(platform, root / "raw" / "plugins")
            shutil.copytree(premium, root / "raw" / "premium-plugins")

        out = root / "payload"
        with Timer() as first:
            report = bundle(str(brand), out, plugins_dir=platform, premium_dir=premium)
        assert report.changed
        before = snapshot(out)
        with Timer() as rerun:
            again = bundle(str(brand), out, plugins_dir=platform, premium_dir=premium)
        written = sum(1 for p, m in snapshot(out).items() if before.get(p) != m) + len(set(before) ^ set(snapshot(out)))
        assert not again.changed

        # generation alone over a payload without manifests (the raw copy), then its rerun
        with Timer() as gen_first:
            gen = generate(root / "raw", brand="bench")
        with Timer() as gen_rerun:
            gen_again = generate(root / "raw", brand="bench")

        # the whole command as an operator runs it (interpreter start included)
        env = dict(os.environ, PLUGHOST_LOG_FILE="0")
        cmd = [sys.executable, "-m", "plughost.cli", "bundle", str(brand), "--out", str(root / "cli-payload"),
               "--premium-dir", str(premium)]
        cmd[3:3] = ["--plugins-dir", str(platform)]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=REPO)
        cli_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=REPO)
        cli_rerun = time.perf_counter() - t0

    print(f"payload: {len(report.payload.plugins)} plugins in {len(report.payload.marketplaces)} marketplaces, "
          f"{report.files} files")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"raw baseline (copytree of the sources):   {raw}")
    print(f"bundle + generate (first build):          {first}   ({first.wall / raw.wall:.1f}x raw)   target < 3 s")
    print(f"bundle rerun (unchanged):                 {rerun}   ({rerun.wall / raw.wall:.2f}x raw)   target < 1 s; "
          f"files written: {written}")
    print(f"manifests generate alone (first):         {gen_first}   ({len(gen.written)} files written)")
    print(f"manifests generate rerun:                 {gen_rerun}   ({len(gen_again.written)} files written)")
    print(f"plughost bundle CLI wall (first / rerun): {cli_first:6.3f} s / {cli_rerun:.3f} s")


if __name__ == "__main__":
    raise SystemExit(bench_results.run("bundle_generate", main))
