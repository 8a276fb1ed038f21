"""Prompt-time surfacing end to end: the UserPromptSubmit hook process, warm (serve) and cold, at 100k nodes.

    python bench/surfacing.py [--nodes 100000] [--prompts 100] [--cold 10] [--work DIR]

Builds (or reuses, with ``--work``) the embedded store of ``bench/search_latency.py`` (N nodes of
man-page vocabulary, 384-dim vectors, two edges each), starts a real ``plughost serve`` with the
local embedder, and times the hook exactly as Claude Code runs it: ``sh
plugins/memory/hooks/surface-prompt.sh`` with the hook input on stdin, a bare environment and
the account named by the config dir's ``settings.json``. Wall time per call covers the shell,
the interpreter start, the loopback round trip, query embedding, search, budget and the
session record. Then the same prompts cold (no server: the hook loads the host in process).
Floors in the same run: the bare interpreter start (``sh`` + ``python -S -I -c pass``) and the
in-server surfacing time (from serve's ``[surface]`` lines).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import results as bench_results  # bench/RESULTS.md, with --write-results

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPO = Path(__file__).resolve().parent.parent
HOOK = REPO / "plugins" / "memory" / "hooks" / "surface-prompt.sh"
ACCOUNT = "bench-latency"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def prompts(words: list[str], n: int, rng: random.Random) -> list[str]:
    starts = ["what do we know about", "remind me how", "find the notes on", "how does", "explain"]
    return [f"{rng.choice(starts)} {' '.join(rng.choices(words[:4000], k=rng.randint(3, 6)))}" for _ in range(n)]


def hook_env(config: Path, work: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "CLAUDE_CONFIG_DIR": str(config), "HOME": str(work)}


def run_hook(prompt: str, session: str, env: dict[str, str], cwd: Path) -> tuple[float, str, str]:
    data = json.dumps({"session_id": session, "transcript_path": "/dev/null", "cwd": str(cwd),
                       "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    t = time.perf_counter()
    proc = subprocess.run(["sh", str(HOOK)], input=data.encode(), capture_output=True, env=env, cwd=cwd, timeout=120)
    return (time.perf_counter() - t) * 1000, proc.stdout.decode(), proc.stderr.decode()


def start_serve(home: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Path]:
    log = home / "bench-serve.log"
    discovery = home / "run" / "surface.json"
    discovery.unlink(missing_ok=True)
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "serve", "--port", "0"], env=env,
                                stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "[surface] op=warm" in text:
            return proc, log
        if proc.poll() is not None:
            raise SystemExit(f"serve exited: {text[-2000:]}")
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("serve did not warm up within 600 s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--prompts", type=int, default=100)
    ap.add_argument("--cold", type=int, default=10, help="cold calls (each loads the host and the store)")
    ap.add_argument("--work", type=Path, default=None, help="keep (and reuse) the store here")
    ap.add_argument("--embedder", default="local", help="PLUGHOST_EMBEDDER for serve and the cold hook")
    bench_results.add_flag(ap)
    args = ap.parse_args()
    bench_results.floor("sh + python -S -I -c pass (the interpreter start every hook pays); memory-search in process on the same prompts")

    work = (args.work or Path(tempfile.mkdtemp(prefix="plughost-bench-surfacing-"))).resolve()
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PLUGHOST_HOME": str(home), "PLUGHOST_LOG_FILE": "0", "ACCOUNT_ID": ACCOUNT,
           "PLUGHOST_EMBED_DIMENSIONS": "384", "PLUGHOST_EMBEDDER": args.embedder}
    os.environ.update({k: env[k] for k in ("PLUGHOST_HOME", "PLUGHOST_LOG_FILE", "ACCOUNT_ID",
                                           "PLUGHOST_EMBED_DIMENSIONS")})
    os.environ["PLUGHOST_EMBEDDER"] = "none"  # building needs no model

    import search_latency

    from plughost.ports.graph import Guards
    from plughost.runtime.accounts import account_dir, create_account
    from plughost.runtime.host import Host

    rng = random.Random(42)
    words, weights = search_latency.vocabulary()
    host = Host(env=dict(os.environ)).load()
    have = host.store().count(guards=Guards(ACCOUNT))
    if have != args.nodes:
        if have:
            print(f"work dir holds {have} nodes, not {args.nodes}: use another --work", file=sys.stderr)
            return 2
        secs = search_latency.build(host.store(), args.nodes, words, weights, rng)
        print(f"built {args.nodes} nodes in {secs:.1f} s")
    host.close()
    if not (account_dir(ACCOUNT, home) / "account.json").is_file():
        create_account(ACCOUNT, home)
    for old in (home / "surfacing").glob("*/*.jsonl"):
        old.unlink()

    config = work / "claude-config"
    config.mkdir(exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"env": {
        "ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(home), "PLUGHOST_EMBEDDER": args.embedder,
        "PLUGHOST_LOG_FILE": "0", "PLUGHOST_PYTHON": sys.executable}}))
    cwd = work / "project"
    cwd.mkdir(exist_ok=True)
    henv = hook_env(config, work)
    henv["PLUGHOST_PYTHON"] = sys.executable
    texts = prompts(words, args.prompts, rng)

    # floor: the interpreter start every hook pays
    floor = []
    for _ in range(30):
        t = time.perf_counter()
        subprocess.run(["sh", "-c", f'"{sys.executable}" -S -I -c pass'], env=henv, cwd=cwd, check=True)
        floor.append((time.perf_counter() - t) * 1000)

    proc, serve_log = start_serve(home, env)
    warm, paths, items = [], [], []
    try:
        for i, prompt in enumerate(texts):
            ms, out, err = run_hook(prompt, f"bench-warm-{i // 10}", henv, cwd)
            warm.append(ms)
            paths.append(re.search(r"path=(\w+)", err).group(1) if "path=" in err else "?")
            items.append(len(re.findall(r"\(id: ", json.loads(out)["hookSpecificOutput"]["additionalContext"]))
                         if out.strip() else 0)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    server_ms = [float(m) for m in re.findall(r"\[surface\] op=(?:surfaced|empty) .* ms=([\d.]+)",
                                              serve_log.read_text(errors="replace"))]
    search_ms = [float(m) for m in re.findall(r"\[surface\] op=(?:surfaced|empty) .* searchMs=([\d.]+)",
                                              serve_log.read_text(errors="replace"))]
    (home / "run" / "surface.json").unlink(missing_ok=True)

    # floor: memory-search itself (the tool's call, query embedding included) in this process
    os.environ["PLUGHOST_EMBEDDER"] = args.embedder
    from plughost.plugins.memory.retrieval.pipeline import SearchRequest, search

    host = Host(env=dict(os.environ)).load()
    store, embedder, guards = host.store(), host.embedder(), Guards(ACCOUNT)
    search(store, SearchRequest("warm up"), guards=guards, embedder=embedder, emit_log=False)
    tool = []
    for prompt in texts[:30]:
        t = time.perf_counter()
        search(store, SearchRequest(prompt), guards=guards, embedder=embedder, emit_log=False)
        tool.append((time.perf_counter() - t) * 1000)
    host.close()

    cold, cold_paths = [], []
    for i, prompt in enumerate(texts[: args.cold]):
        ms, _out, err = run_hook(prompt, f"bench-cold-{i}", henv, cwd)
        cold.append(ms)
        cold_paths.append(re.search(r"path=(\w+)", err).group(1) if "path=" in err else "?")

    print()
    print(f"{args.nodes} nodes, {len(texts)} warm prompts, {len(cold)} cold, embedder {args.embedder}")
    print("| measurement | p50 ms | p95 ms |")
    print("|---|---|---|")
    rows = [("hook end to end, warm (serve running)", warm), ("hook end to end, cold (no serve)", cold),
            ("floor: sh + python -S -I -c pass", floor), ("in serve: surfacing call (embed + search + record)", server_ms),
            ("in serve: search alone (plughost_surface_context)", search_ms),
            ("floor: memory-search in process, same prompts (limit 10, 1 hop)", tool)]
    for name, samples in rows:
        if samples:
            print(f"| {name} | {pct(samples, 0.5):.1f} | {pct(samples, 0.95):.1f} |")
    f50 = pct(floor, 0.5) + pct(tool, 0.5)
    w50, w95 = pct(warm, 0.5), pct(warm, 0.95)
    print(f"\nwarm paths: {sorted(set(paths))}, cold paths: {sorted(set(cold_paths))}; "
          f"items per prompt: mean {sum(items) / max(1, len(items)):.1f}")
    print(f"warm hook p50 / (interpreter start p50 + memory-search p50): {w50 / f50:.2f}x; "
          f"cold p50 / warm p50: {pct(cold, 0.5) / w50:.1f}x")
    if server_ms:
        over = w50 - pct(server_ms, 0.5)
        print(f"hook process overhead (warm p50 - in-serve p50): {over:.1f} ms = interpreter start p50 "
              f"{pct(floor, 0.5):.1f} ms + {over - pct(floor, 0.5):.1f} ms (reading the config, the loopback "
              f"round trip, serve's request handling)")
    ok = w50 < 150 and w95 < 400 and set(paths) == {"warm"}
    print(f"targets (warm): p50 < 150 ms, p95 < 400 ms: p50 {w50:.1f} ms, p95 {w95:.1f} ms -> {'PASS' if ok else 'MISS'}")
    print(f"load average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; work dir: {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(bench_results.run("surfacing", main))
