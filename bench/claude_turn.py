"""Benchmark one claude-runner admin turn through the real Claude Code CLI, without a model: spawn →
``init`` → tools ready (the first ``/v1/messages`` request that carries the plugins' MCP tools) →
reply, with a loopback stand-in for the Messages API (tests/support/fake_messages_api.py) that
answers at once. The default brand's payload is bundled and installed into a throwaway config dir.

Two ways of running the turn's CLI, alternated:

- ``runner``: the environment and argv :class:`ClaudeRunner` gives an admin turn
  (``MCP_CONNECTION_NONBLOCKING=0``: servers connected before the first request);
- ``background``: the same without it (the CLI's default for ``-p``: servers connect in the
  background, ``init`` lists them ``pending``, the first request may carry none of their tools).

The floors, measured in the same run: a bare ``claude --version`` (the CLI's own start) and a bare
``python -c 'import mcp.server'`` with the interpreter the plugin servers run on (one server's
cheapest start). The load average is printed with the figures.

    .venv/bin/python bench/claude_turn.py [--rounds 3] [--write-results]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import results as bench_results  # bench/RESULTS.md, with --write-results

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "support")]

from fake_messages_api import FakeMessagesAPI, mcp_tool_names  # noqa: E402

from plughost import AgentTurn  # noqa: E402
from plughost.api.principals import resolve  # noqa: E402
from plughost.plugins.channels.claude_runner import ClaudeRunner  # noqa: E402
from plughost.plugins.channels.runner import session_id_for  # noqa: E402

CLAUDE = REPO / ".tools" / "node_modules" / ".bin" / "claude"
PY = str(REPO / ".venv" / "bin" / "python")
ACCOUNT = "bench"


def install(tmp: Path) -> tuple[Path, dict[str, str]]:
    """The default brand bundled and installed for ``ACCOUNT``: (config dir, base environment)."""
    home, config = tmp / "plughost-home", tmp / "claude-config"
    for sub in ("no-premium", "home", "tmp"):
        (tmp / sub).mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp / "home"), "CLAUDE_CODE_TMPDIR": str(tmp / "tmp"),
           "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT}
    cli = [PY, "-m", "plughost.cli"]
    for args in (["account", "create", ACCOUNT, "--admin-phone", "+15550001"],
                 ["bundle", "default", "--out", str(tmp / "payload"), "--premium-dir", str(tmp / "no-premium")],
                 ["install", str(tmp / "payload"), "--config-dir", str(config), "--account", ACCOUNT]):
        subprocess.run(cli + args, env={**os.environ, **env}, check=True, capture_output=True)
    return config, env


def turn(runner: ClaudeRunner, api: FakeMessagesAPI, mode: str, n: int) -> dict[str, Any]:
    """One admin turn's milestones (seconds from spawn) and the MCP tools on its first request."""
    sid = session_id_for(ACCOUNT, f"bench:{mode}:{n}")
    turn = AgentTurn.from_dict({"role": "admin", "sessionId": f"bench:{mode}:{n}", "agentSession": sid,
                                "channel": "bench", "text": "hello", "payload": "hello"},
                               resolve({"ACCOUNT_ID": ACCOUNT}))
    env = runner.child_env(turn)
    if mode == "background":
        env.pop("MCP_CONNECTION_NONBLOCKING", None)
        env.pop("MCP_CONNECT_TIMEOUT_MS", None)
    argv = runner.argv(sid, "admin", resume=False)
    i = argv.index("--output-format")
    argv[i:i + 2] = ["--output-format", "stream-json", "--verbose"]
    api.clear()
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env, cwd=str(runner.config_dir.parent), start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("hello")
    proc.stdin.close()
    out: dict[str, Any] = {"init": None, "reply": None, "pending": None}
    for line in proc.stdout:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("type") == "system" and message.get("subtype") == "init":
            out["init"] = time.monotonic() - t0
            out["pending"] = sum(s.get("status") == "pending" for s in message.get("mcp_servers") or [])
            out["servers"] = len(message.get("mcp_servers") or [])
        elif message.get("type") == "result":
            out["reply"] = time.monotonic() - t0
    proc.wait(timeout=120)
    requests = list(api.requests)
    out["first"] = requests[0][0] - t0 if requests else None
    out["first_tools"] = len(mcp_tool_names(requests[0][1])) if requests else 0
    ready = [ts for ts, body in requests if mcp_tool_names(body)]
    out["ready"] = ready[0] - t0 if ready else None
    return out


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.monotonic()
    subprocess.run(cmd, env=env, capture_output=True, check=True)
    return time.monotonic() - t0


def med(values: list[float | None]) -> str:
    found = [v for v in values if v is not None]
    if not found:
        return "   never"
    return f"{statistics.median(found):6.2f} s" + ("" if len(found) == len(values) else f" ({len(found)}/{len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="turns per mode (alternated), floors per round")
    bench_results.add_flag(parser)
    args = parser.parse_args()
    if not CLAUDE.exists():
        raise SystemExit(f"no Claude Code CLI at {CLAUDE} (bash scripts/install-tools.sh)")
    bench_results.floor("bare `claude --version` and bare `python -c 'import mcp.server'` (the plugin servers' "
                        "interpreter), measured in the same run")
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="claude-turn-") as tmp, FakeMessagesAPI() as api:
        config, env = install(Path(tmp))
        env = {**env, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "dummy"}
        runner = ClaudeRunner([str(CLAUDE)], config_dir=config, home=Path(env["PLUGHOST_HOME"]), account=ACCOUNT,
                              admin_tools=[], env=env)
        turns: dict[str, list[dict[str, Any]]] = {"runner": [], "background": []}
        version, imports = [], []
        for n in range(args.rounds):
            for mode in turns:
                turns[mode].append(turn(runner, api, mode, n))
            version.append(timed([str(CLAUDE), "--version"], env))
            imports.append(timed([PY, "-c", "import mcp.server"], env))
    load_end = os.getloadavg()
    print(f"load average (1 / 5 / 15 min): {' / '.join(f'{x:.2f}' for x in load_start)} at the start, "
          f"{' / '.join(f'{x:.2f}' for x in load_end)} at the end, on {os.cpu_count()} cores")
    print(f"medians of {args.rounds} admin turn(s) per mode, seconds from spawn; fake Messages API answers at once")
    print(f"{'mode':<11} {'init':>9} {'1st request':>12} {'tools ready':>12} {'reply':>9}  mcp tools on 1st request"
          "  servers pending at init")
    for mode, rows in turns.items():
        tools = sorted({r["first_tools"] for r in rows})
        pending = sorted({f"{r['pending']}/{r.get('servers', 0)}" for r in rows})
        print(f"{mode:<11} {med([r['init'] for r in rows]):>9} {med([r['first'] for r in rows]):>12} "
              f"{med([r['ready'] for r in rows]):>12} {med([r['reply'] for r in rows]):>9}  "
              f"{','.join(map(str, tools)):>24}  {','.join(pending):>23}")
    v, m = statistics.median(version), statistics.median(imports)
    ready = [r["ready"] for r in turns["runner"] if r["ready"] is not None]
    print(f"floor: claude --version                {v:6.2f} s")
    print(f"floor: python -c 'import mcp.server'   {m:6.2f} s")
    if ready:
        r = statistics.median(ready)
        print(f"runner tools ready / (claude --version + import mcp.server): {r / (v + m):4.1f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(bench_results.run("claude_turn", main))
