"""Benchmark `plughost boot --check` (bench/RESULTS.md#boot): the default install and a synthetic large one.

Prints wall times of the real console path (process start included) against a raw baseline
(`python -c pass`, and `python -c "import plughost.cli"`), plus where the time goes inside one
boot: imports, plugin loading, the tool surface, and each gate.

    .venv/bin/python bench/boot.py [--runs 5] [--plugins 500 --specialists 2000 --tools 10000] [--baseline REF]

``--baseline REF`` (a commit of this repository, e.g. ``main``) also runs that commit's boot over
the same install, interleaved with this checkout's: a change measured against what it changed, in one
run, under one load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

REPO = Path(__file__).resolve().parent.parent

PHASES = r"""
import json, os, sys, time
os.environ["ACCOUNT_ID"] = "acme"
t0 = time.perf_counter()
from plughost.runtime.host import Host
from plughost.runtime import boot
t1 = time.perf_counter()
args = json.loads(sys.argv[1])
from pathlib import Path
host = Host(plugins_dir=args["plugins_dir"] and Path(args["plugins_dir"]),
            premium_dir=args["premium_dir"] and Path(args["premium_dir"])).load()
t2 = time.perf_counter()
extras = boot.boot_context_extras(account=args["account"], config_dir=args["config_dir"])
report = boot.run_gates(host, extras=extras, echo=None)
t3 = time.perf_counter()
print(json.dumps({"lines": [line for o in report.outcomes for line in o.lines if "FATAL" in line or "failed" in line],
                  "import_ms": (t1 - t0) * 1000, "load_ms": (t2 - t1) * 1000,
                  "surface_ms": report.timings["surface"], "gates_ms": report.timings["gates"],
                  "per_gate_ms": {o.gate: round(o.ms, 1) for o in report.outcomes}, "exit": report.exit_code,
                  "inspected": {o.gate: o.inspected for o in report.outcomes}}))
"""


def wall(cmd: list[str], env: dict[str, str], runs: int) -> tuple[float, float, int, float]:
    """(min wall, median wall, exit code, median CPU user+sys) over `runs` runs of a subprocess."""
    times, cpu, code = [], [], 0
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
        code = proc.returncode
        if code not in (0,):
            sys.stderr.write(proc.stderr[-2000:])
    return min(times), statistics.median(times), code, statistics.median(cpu)


def phases(env: dict[str, str], **kw: str | None) -> dict:
    proc = subprocess.run([sys.executable, "-c", PHASES, json.dumps(kw)], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout)


def synthetic(root: Path, n_plugins: int, n_specialists: int, n_tools: int, account: str, home: Path) -> dict:
    """A payload of `n_plugins` tool-plugins (generated manifests, tee servers), their specialists,
    the three Claude Code registration files, and one account enabling every plugin."""
    plugins, config = root / "plugins", root / "claude"
    per_plugin = max(1, n_tools // n_plugins)
    per_agents = max(1, n_specialists // n_plugins)
    installed, known, enabled_cc = {}, {}, {}
    now = "2026-01-01T00:00:00.000Z"
    names = []
    for i in range(n_plugins):
        name = f"synth-{i:04d}"
        names.append(name)
        folder = plugins / name
        (folder / "mcp").mkdir(parents=True)
        (folder / "agents").mkdir()
        (folder / ".claude-plugin").mkdir()
        tools = "".join(f"  - name: tool-{j}\n    description: synthetic tool {j}\n"
                        + ("    adminAllowlist: true\n" if j == 0 else "") for j in range(per_plugin))
        (folder / "PLUGIN.md").write_text(
            f"---\nname: {name}\ndescription: synthetic\nversion: 1.0.0\ntools:\n{tools}"
            f"mcp:\n  command: python3\n  args: [\"${{CLAUDE_PLUGIN_ROOT}}/mcp/__main__.py\"]\n---\n# {name}\n")
        (folder / "mcp" / "__main__.py").write_text("pass\n")
        (folder / ".claude-plugin" / "plugin.json").write_text(json.dumps({
            "name": name, "version": "1.0.0", "mcpServers": {name: {
                "command": sys.executable,
                "args": ["-m", "plughost.mcp.tee", name, "--", sys.executable, "${CLAUDE_PLUGIN_ROOT}/mcp/__main__.py"]}}}))
        for k in range(per_agents):
            tools_line = ", ".join(["Read", "Grep"] + [f"mcp__plugin_{name}_{name}__tool-{(k + j) % per_plugin}"
                                                       for j in range(3)])
            (folder / "agents" / f"agent-{k}.md").write_text(
                f"---\nname: {name}-agent-{k}\ndescription: synthetic\ntools: {tools_line}\n---\nBody\n")
        key = f"{name}@synth-platform"
        installed[key] = [{"scope": "user", "installPath": str(folder), "version": "1.0.0",
                           "installedAt": now, "lastUpdated": now}]
        enabled_cc[key] = True
    known["synth-platform"] = {"source": {"source": "directory", "path": str(plugins)},
                               "installLocation": str(plugins), "lastUpdated": now}
    (config / "plugins").mkdir(parents=True)
    (config / "plugins" / "known_marketplaces.json").write_text(json.dumps(known))
    (config / "plugins" / "installed_plugins.json").write_text(json.dumps({"version": 2, "plugins": installed}))
    (config / "settings.json").write_text(json.dumps({"enabledPlugins": enabled_cc}))
    acct = home / "accounts" / account
    acct.mkdir(parents=True)
    (acct / "account.json").write_text(json.dumps({"accountId": account, "enabledPlugins": names, "adminPhones": [],
                                                   "admins": ["owner"]}))
    (acct / "users.json").write_text(json.dumps([{"userId": "owner"}]))
    return {"plugins_dir": str(plugins), "config_dir": str(config)}


def baseline_tree(ref: str, into: Path) -> Path:
    """``ref``'s ``host/`` and ``plugins/`` laid out as the ``plughost`` package under ``into`` (put it
    first on PYTHONPATH: the path finder answers before this checkout's editable install), compiled
    as an installed package is."""
    src = into / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "host", "plugins"], capture_output=True,
                             check=False)
    if archive.returncode != 0:
        raise SystemExit(f"--baseline: {ref}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    package = into / "pkg" / "plughost"
    package.parent.mkdir()
    shutil.move(str(src / "host"), package)
    shutil.move(str(src / "plugins"), package / "plugins")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=False, capture_output=True)
    return package.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--plugins", type=int, default=500)
    ap.add_argument("--specialists", type=int, default=2000)
    ap.add_argument("--tools", type=int, default=10000)
    ap.add_argument("--baseline", metavar="REF", default=None,
                    help="also run this commit's boot (e.g. main), interleaved with this checkout's")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("python -c pass, python -c 'import plughost.cli' and the import floor python -c 'import pluggy, "
                        "yaml, jsonschema' (process start and the libraries of a plugin host with YAML manifests and "
                        "JSON Schemas, as earlier rounds measured it), beside boot's own libraries python -c 'import "
                        "pluggy, yaml, fastjsonschema' (boot imports jsonschema only to explain a failure), measured "
                        "interleaved with the boot in the same run")
    plughost = [sys.executable, "-m", "plughost.cli"]
    # An installed package has its bytecode compiled; this checkout may run with PYTHONDONTWRITEBYTECODE.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "host"), str(REPO / "plugins")],
                   check=False, capture_output=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="plughost-bench-boot-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "PLUGHOST_HOME": str(root / "home"), "PLUGHOST_LOG_FILE": "0"}
        env.pop("ACCOUNT_ID", None)
        for step in (["bundle", "default", "--out", str(root / "payload")],
                     ["account", "create", "acme", "--admin-phone", "+15550001"],
                     ["install", str(root / "payload"), "--config-dir", str(root / "cc"), "--account", "acme"]):
            subprocess.run(plughost + step, env=env, check=True, capture_output=True)
        payload_env = {"plugins_dir": str(root / "payload" / "plugins"), "premium_dir": None}

        cmd = plughost + ["boot", "--check", "--account", "acme", "--config-dir", str(root / "cc")]
        floor_cmd = [sys.executable, "-c", "import pluggy, yaml, jsonschema"]
        own_cmd = [sys.executable, "-c", "import pluggy, yaml, fastjsonschema"]
        runs: list[tuple[str, list[str], dict[str, str]]] = [
            ("pass", [sys.executable, "-c", "pass"], env), ("cli", [sys.executable, "-c", "import plughost.cli"], env),
            ("floor", floor_cmd, env), ("own", own_cmd, env), ("boot", cmd, env)]
        if args.baseline:
            old = baseline_tree(args.baseline, root / "baseline")
            runs.append(("baseline", cmd, {**env, "PYTHONPATH": os.pathsep.join(
                [str(old), *filter(None, [env.get("PYTHONPATH")])])}))
        # interleaved: one run of each in turn, so a load swing hits them alike
        samples: dict[str, list[tuple[float, float, int, float]]] = {key: [] for key, _, _ in runs}
        for _ in range(args.runs):
            for key, argv, run_env in runs:
                samples[key].append(wall(argv, run_env, 1))

        def agg(key: str) -> tuple[float, float, int, float]:
            rows = samples[key]
            return (min(r[0] for r in rows), statistics.median(r[1] for r in rows), rows[-1][2],
                    statistics.median(r[3] for r in rows))

        base_min, base_med, _, base_cpu = agg("pass")
        imp_min, imp_med, _, _ = agg("cli")
        fl_min, fl_med, _, fl_cpu = agg("floor")
        own_min, own_med, _, own_cpu = agg("own")
        d_min, d_med, d_code, d_cpu = agg("boot")
        d_ph = phases(env, **payload_env, account="acme", config_dir=str(root / "cc"))
        print("== default install (bundle default + account create + install; boot reads the install's .env)")
        print(f"python -c pass            min {base_min * 1000:7.1f} ms  median {base_med * 1000:7.1f} ms  "
              f"cpu {base_cpu * 1000:6.1f} ms")
        print(f"python -c 'import plughost.cli' min {imp_min * 1000:5.1f} ms  median {imp_med * 1000:7.1f} ms")
        print(f"import floor: python -c 'import pluggy, yaml, jsonschema'  min {fl_min * 1000:5.1f} ms  median "
              f"{fl_med * 1000:7.1f} ms  cpu {fl_cpu * 1000:6.1f} ms")
        print(f"plughost boot --check     min {d_min * 1000:7.1f} ms  median {d_med * 1000:7.1f} ms  "
              f"cpu {d_cpu * 1000:6.1f} ms  exit={d_code}  target < 1000 ms  ({d_med / base_med:.1f}x bare python)")
        ratio, cpu_ratio = d_med / fl_med, d_cpu / max(fl_cpu, 1e-9)
        print(f"boot / import floor: median wall {ratio:.2f}x, min wall {d_min / fl_min:.2f}x, cpu {cpu_ratio:.2f}x "
              f"-> {'PASS' if ratio <= 2 else 'MISS'} (target <= 2x; load {os.getloadavg()[0]:.2f} on "
              f"{os.cpu_count()} cores)")
        print(f"boot's own libraries: python -c 'import pluggy, yaml, fastjsonschema'  min {own_min * 1000:5.1f} ms  "
              f"median {own_med * 1000:7.1f} ms  cpu {own_cpu * 1000:6.1f} ms; boot / them: median wall "
              f"{d_med / own_med:.2f}x, cpu {d_cpu / max(own_cpu, 1e-9):.2f}x")
        if args.baseline:
            b_min, b_med, b_code, b_cpu = agg("baseline")
            print(f"baseline {args.baseline} boot --check  min {b_min * 1000:7.1f} ms  median {b_med * 1000:7.1f} ms  "
                  f"cpu {b_cpu * 1000:6.1f} ms  exit={b_code}; / import floor: median wall {b_med / fl_med:.2f}x, "
                  f"cpu {b_cpu / max(fl_cpu, 1e-9):.2f}x; this checkout / baseline: median wall {d_med / b_med:.2f}x, "
                  f"cpu {d_cpu / max(b_cpu, 1e-9):.2f}x")
        print(f"  in-process: import {d_ph['import_ms']:.1f} ms, load {d_ph['load_ms']:.1f} ms, "
              f"surface {d_ph['surface_ms']:.1f} ms, gates {d_ph['gates_ms']:.1f} ms  {d_ph['per_gate_ms']}")

        t0 = time.perf_counter()
        home2 = root / "home-synth"
        synth = synthetic(root / "synth", args.plugins, args.specialists, args.tools, "acme", home2)
        build = time.perf_counter() - t0
        env2 = {**env, "PLUGHOST_HOME": str(home2)}
        cmd2 = plughost + ["--plugins-dir", synth["plugins_dir"], "boot", "--check", "--account", "acme",
                           "--config-dir", synth["config_dir"]]
        s_min, s_med, s_code, s_cpu = wall(cmd2, env2, max(1, args.runs // 2))
        s_ph = phases(env2, plugins_dir=synth["plugins_dir"], premium_dir=None, account="acme",
                      config_dir=synth["config_dir"])
        print(f"== synthetic install: {args.plugins} plugins, {args.specialists} specialists, {args.tools} tools "
              f"(built in {build:.1f} s)")
        print(f"plughost boot --check     min {s_min * 1000:7.1f} ms  median {s_med * 1000:7.1f} ms  "
              f"cpu {s_cpu * 1000:6.1f} ms  exit={s_code}  target < 5000 ms  ({s_med / base_med:.1f}x bare python)")
        print(f"  in-process: import {s_ph['import_ms']:.1f} ms, load {s_ph['load_ms']:.1f} ms, "
              f"surface {s_ph['surface_ms']:.1f} ms, gates {s_ph['gates_ms']:.1f} ms  {s_ph['per_gate_ms']}")
        print(f"  inspected: {s_ph['inspected']}")
        for label, ph in (("default", d_ph), ("synthetic", s_ph)):
            for line in ph["lines"][:5]:
                print(f"  {label} defect: {line}")


if __name__ == "__main__":
    raise SystemExit(bench_results.run("boot", main))
