"""`plughost doctor`: start every installed MCP server exactly as Claude Code would and compare what
it serves with what its plugin declares (docs/gates.md#doctor).

Boot's gates read files; only a real start shows an interpreter that cannot import ``host``, a
server file that is gone, or a tool renamed in code but not in PLUGIN.md. Each server is started
from the folder Claude Code resolves (:mod:`plughost.payload.launch`), with Claude Code's environment on a
user's machine (minimal PATH, ``settings.json`` ``env``, the entry's own ``env``) in a scratch
working directory, then asked ``initialize`` and ``tools/list`` over stdio (newline-delimited
JSON-RPC, no MCP SDK import). One line per finding; the caller exits 1 on any. It also reports the
hooks each plugin registers and runs each hook command once in Claude Code's hook environment, a
missing command file or a failing run being a finding (:mod:`plughost.payload.doctor_hooks`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plughost.payload import doctor_hooks
from plughost.payload.launch import Launch, installed_launches
from plughost.runtime import agent_files, plugin_model
from plughost.runtime.agent_files import Reach
from plughost.runtime.install_record import account_fix, account_on_record
from plughost.runtime.plugin_model import PluginModel
from plughost.util import settings
from plughost.util.errors import UserError
from plughost.util.jsonio import write_atomic
from plughost.util.log import format_line

EAGER_META_KEY = "anthropic/alwaysLoad"
WITHHELD_META_KEY = "plughost/withheld"
PROTOCOL_VERSION = "2025-06-18"


@dataclass
class Finding:
    key: str
    server: str
    reason: str
    fields: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return format_line("doctor", "FAIL", plugin=self.key, server=self.server, reason=self.reason, **self.fields)


@dataclass
class ServerCheck:
    launch: Launch
    findings: list[Finding] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    ms: float = 0.0

    def lines(self) -> list[str]:
        if self.findings:
            return [f.line() for f in self.findings]
        return [format_line("doctor", "ok", plugin=self.launch.key, server=self.launch.server,
                            tools=len(self.tools), ms=f"{self.ms:.0f}")]


def declared(model: PluginModel | None) -> dict[str, bool] | None:
    """Tool name → eager, as the plugin's model declares them (None: no model, not a plughost plugin)."""
    if model is None:
        return None
    return {t.name: t.eager for t in model.tools}


def model_of(launch: Launch, models: Mapping[str, PluginModel] | None = None) -> PluginModel | None:
    """The model of the plugin a server belongs to: the loaded host's (``models``, what the gates read),
    else the model of the folder Claude Code starts it from (plughost.runtime.plugin_model.of_folder)."""
    model = (models or {}).get(launch.plugin)
    return model if model is not None else plugin_model.of_folder(launch.root)


def _which(command: str, env: dict[str, str]) -> str | None:
    if os.sep in command:
        return command if os.access(command, os.X_OK) and os.path.isfile(command) else None
    return shutil.which(command, path=env.get("PATH", ""))


class _Session:
    """Newline-delimited JSON-RPC over a child's stdin/stdout, with a deadline."""

    def __init__(self, proc: subprocess.Popen[bytes], deadline: float) -> None:
        self.proc, self.deadline, self.next_id = proc, deadline, 1
        self.lines: list[bytes] = []
        self.done = threading.Event()
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            with self.cond:
                self.lines.append(raw)
                self.cond.notify_all()
        with self.cond:
            self.done.set()
            self.cond.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False) -> int | None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        ident = None
        if not notify:
            ident = self.next_id
            msg["id"] = ident
            self.next_id += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        return ident

    def wait(self, ident: int) -> dict[str, Any]:
        """The response to ``ident``; TimeoutError, or EOFError when the server exited first."""
        with self.cond:
            while True:
                while self.lines:
                    raw = self.lines.pop(0)
                    try:
                        msg = json.loads(raw)
                    except ValueError:
                        raise ValueError(f"not JSON-RPC on stdout: {raw[:80]!r}") from None
                    if isinstance(msg, dict) and msg.get("id") == ident:
                        return msg
                if self.done.is_set():
                    raise EOFError("the server exited")
                left = self.deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self.cond.wait(left)


def _stderr_tail(proc: subprocess.Popen[bytes]) -> str:
    try:
        _, err = proc.communicate(timeout=2)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        return ""
    lines = [line for line in (err or b"").decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def check_server(launch: Launch, timeout: float = 30.0, models: Mapping[str, PluginModel] | None = None) -> ServerCheck:
    """Start one server, list its tools, compare with what its plugin's model declares; always stops the process."""
    check = ServerCheck(launch)
    add = lambda reason, **f: check.findings.append(Finding(launch.key, launch.server, reason, f))  # noqa: E731
    if launch.unset:
        add("unset-variable", names=",".join(launch.unset), manifest=str(launch.manifest))
        return check
    if not launch.root.is_dir():
        add("plugin-folder-missing", path=str(launch.root))
        return check
    if _which(launch.command, launch.env) is None:
        add("start-failed", detail=f"command not found: {launch.command}", manifest=str(launch.manifest))
        return check
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="plughost-doctor-") as cwd:
        try:
            proc = subprocess.Popen(launch.argv, cwd=cwd, env=launch.env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            add("start-failed", detail=str(exc), manifest=str(launch.manifest))
            return check
        session = _Session(proc, t0 + timeout)
        try:
            ident = session.send("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                                "clientInfo": {"name": "plughost-doctor", "version": "1"}})
            init = session.wait(ident or 0)
            if "error" in init:
                add("initialize-failed", detail=json.dumps(init["error"])[:200])
                return check
            session.send("notifications/initialized", notify=True)
            listed = session.wait(session.send("tools/list") or 0)
            if "error" in listed:
                add("tools-list-failed", detail=json.dumps(listed["error"])[:200])
                return check
            result = listed.get("result") or {}
            served = {t.get("name"): t for t in result.get("tools") or [] if isinstance(t, dict)}
            meta = result.get("_meta")
            meta = meta if isinstance(meta, dict) else {}
            withheld = {str(n) for n in meta.get(WITHHELD_META_KEY) or [] if isinstance(n, str)}
        except TimeoutError:
            add("start-failed", detail=f"no answer within {timeout:.0f}s")
            return check
        except (EOFError, ValueError, BrokenPipeError, OSError) as exc:
            proc.kill()
            add("start-failed", detail=str(exc), stderr=_stderr_tail(proc))
            return check
        finally:
            _stop(proc)
    check.ms = (time.monotonic() - t0) * 1000
    check.tools = sorted(str(n) for n in served)
    compare(check, served, declared(model_of(launch, models)), add, withheld)
    return check


def compare(check: ServerCheck, served: dict[Any, dict[str, Any]], decl: dict[str, bool] | None, add: Any,
            withheld: set[str] | None = None) -> None:
    """Missing, extra and `_meta` (eager) differences between served and declared tools; a declared
    tool the server says it withholds in this configuration (``_meta["plughost/withheld"]``) is not missing."""
    if decl is None:
        return  # not a plughost plugin folder: nothing declared to compare with
    for name in sorted(set(decl) - set(served) - (withheld or set())):
        add("missing-tool", tool=name)
    for name in sorted(str(n) for n in set(served) - set(decl)):
        add("extra-tool", tool=name)
    for name in sorted(set(decl) & set(served)):
        meta = served[name].get("_meta") or {}
        eager = isinstance(meta, dict) and meta.get(EAGER_META_KEY) is True
        if eager != decl[name]:
            add("meta-differs", tool=name, expected=f"{EAGER_META_KEY}={str(decl[name]).lower()}",
                served=f"{EAGER_META_KEY}={str(eager).lower()}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for stream in (proc.stdin,):
        try:
            stream and stream.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class DoctorReport:
    config_dir: Path
    checks: list[ServerCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)  # one ``[doctor] hooks`` line per installed plugin
    agents: list[Reach] = field(default_factory=list)  # every public agent's files (docs/agents.md)

    @property
    def findings(self) -> int:
        return (len(self.problems) + sum(len(c.findings) for c in self.checks)
                + sum(not r.reachable for r in self.agents))

    @property
    def exit_code(self) -> int:
        return 1 if self.findings or not self.checks else 0

    def lines(self) -> list[str]:
        out = [f"[doctor] FAIL {p}" for p in self.problems]
        for check in self.checks:
            out.extend(check.lines())
        out.extend(self.hooks)
        out.extend(format_line("doctor", *(() if r.reachable else ("FAIL",)), "agent", **r.fields())
                   for r in self.agents)
        if not self.checks and not self.problems:
            out.append(format_line("doctor", "FAIL", reason="no-servers", **{"config-dir": str(self.config_dir)}))
        out.append(format_line("doctor", "op=done", servers=len(self.checks), findings=self.findings,
                               exit=self.exit_code))
        return out

    def to_json(self) -> dict[str, Any]:
        return {"configDir": str(self.config_dir), "exit": self.exit_code, "problems": self.problems,
                "hooks": self.hooks, "agents": [r.fields() for r in self.agents],
                "servers": [{"plugin": c.launch.key, "server": c.launch.server, "tools": c.tools,
                             "findings": [{"reason": f.reason, **f.fields} for f in c.findings]}
                            for c in self.checks]}


LAST_RUN = "doctor-last.json"


def record(plughost_home: Path, report: DoctorReport) -> None:
    """Keep the last run's report (``<PLUGHOST_HOME>/doctor-last.json``) for the owner's console."""
    body = {**report.to_json(), "finishedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "findings": report.findings, "lines": report.lines()}
    try:
        plughost_home.mkdir(parents=True, exist_ok=True)
        write_atomic(plughost_home / LAST_RUN, json.dumps(body, indent=1, default=str))
    except OSError:
        pass  # the report was printed; keeping it is a convenience


def last(plughost_home: Path) -> dict[str, Any] | None:
    """The last recorded run, or None when doctor never ran (or its record is unreadable)."""
    try:
        body = json.loads((plughost_home / LAST_RUN).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def account_problems(launches: list[Any]) -> list[str]:
    """``reason=account-unset``: servers are installed but none of them would run as an account (no
    ``ACCOUNT_ID`` in Claude Code's environment nor in the data root's ``.env``), with the one command
    that fixes it (what every tool that needs the account answers too)."""
    if not launches or any(account_on_record(launch.env) for launch in launches):
        return []
    name = settings.PLUGINS_DIR.name
    env = next((launch.env for launch in launches if launch.env.get(name)),
               {**launches[0].env, name: str(launches[0].root.parent)})
    return [format_line(None, reason="account-unset", **{"config-dir": env.get("CLAUDE_CONFIG_DIR", "")},
                        fix=account_fix(env))]


def agent_reach(plughost_home: Path | None) -> tuple[list[Reach], list[str]]:
    """Every account's public agents with what their folder lacks, or the one line saying why not."""
    if plughost_home is None:
        return [], []
    try:
        return agent_files.audit(plughost_home), []
    except UserError as exc:
        return [], [format_line(None, reason="agents-unreadable", detail=str(exc))]


def run(config_dir: Path, *, home: str | None = None, timeout: float = 30.0, workers: int = 4,
        models: Mapping[str, PluginModel] | None = None, plughost_home: Path | None = None) -> DoctorReport:
    """``models``: the loaded host's plugin models (``host.surface.models``, what the gates read); a plugin
    it lacks is read from the folder Claude Code starts it from. ``plughost_home``: whose accounts'
    public agents are checked for their files (``[doctor] agent ... reachable=``)."""
    launches, problems = installed_launches(config_dir, home)
    hooks, hook_problems = doctor_hooks.report(config_dir, home=home, timeout=timeout)
    agents, agent_problems = agent_reach(plughost_home)
    report = DoctorReport(config_dir, problems=problems + hook_problems + account_problems(launches) + agent_problems,
                          hooks=hooks, agents=agents)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        report.checks = list(pool.map(lambda launch: check_server(launch, timeout, models), launches))
    return report
