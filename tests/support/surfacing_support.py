"""Helpers for the surfacing tests: a seeded account, Claude Code config dirs, the real hook process."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plughost import Principal

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "plugins" / "memory" / "hooks" / "surface-prompt.sh"
RECORDED = REPO / "tests" / "plugins" / "memory" / "surfacing" / "data" / "user_prompt_submit.json"
ACCOUNT = "acct-s"

NOTES = [
    ("falcon-budget", ["KnowledgeDocument"], {"title": "Project Falcon budget",
     "summary": "The board approved a budget of two million euros for Project Falcon", "scope": "admin"}),
    ("falcon-deadline", ["Event"], {"name": "Project Falcon deadline",
     "description": "Project Falcon launches on March 3rd; the budget review follows", "scope": "admin"}),
    ("falcon-public", ["KnowledgeDocument"], {"title": "Project Falcon announcement",
     "summary": "Project Falcon is our new public community garden; the board welcomes volunteers",
     "scope": "public"}),
    ("hours", ["KnowledgeDocument"], {"title": "Shop opening hours",
     "summary": "The shop opens at nine and closes at five", "scope": "public"}),
    ("falcon-chat", ["Message"], {"text": "Project Falcon budget: the board approved two million euros",
     "role": "user", "scope": "public"}),
]


def seed(home: Path, account: str = ACCOUNT, notes: list[tuple[str, list[str], dict[str, Any]]] = NOTES) -> None:
    from plughost.runtime.host import Host

    host = Host(env={**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": account,
                     "PLUGHOST_EMBEDDER": "none"}).load()
    try:
        rows = [{"id": i, "labels": labels, "properties": props} for i, labels, props in notes]
        host.store().upsert_many(rows, guards=Principal.system(account).guards)
    finally:
        host.close()


def config_dir(base: Path, name: str, **env: str) -> Path:
    """A Claude Code config dir whose settings.json ``env`` names the account (as an install leaves it)."""
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"env": env}), encoding="utf-8")
    return folder


@dataclass
class HookRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> dict[str, Any] | None:
        return json.loads(self.stdout) if self.stdout.strip() else None

    @property
    def context(self) -> str:
        out = self.output
        return out["hookSpecificOutput"]["additionalContext"] if out else ""

    def line(self, op: str) -> str:
        found = [ln for ln in self.stderr.splitlines() if ln.startswith(f"[surface] op={op}")]
        assert found, f"no [surface] op={op} line in:\n{self.stderr}"
        return found[-1]


def hook_input(prompt: str, session: str = "s-1", **extra: Any) -> bytes:
    data = json.loads(RECORDED.read_text(encoding="utf-8"))
    data.update(prompt=prompt, session_id=session, **extra)
    return json.dumps(data).encode("utf-8")


def run_hook(stdin: bytes, config: Path, cwd: Path, **env: str) -> HookRun:
    """The hook exactly as Claude Code starts it: ``sh hooks/surface-prompt.sh``, bare env, another cwd."""
    full = {"PATH": "/usr/bin:/bin", "CLAUDE_CONFIG_DIR": str(config), "HOME": str(cwd), **env}
    started = time.perf_counter()
    proc = subprocess.run(["sh", str(HOOK)], input=stdin, capture_output=True, env=full, cwd=cwd, timeout=60)
    return HookRun(proc.returncode, proc.stdout.decode(), proc.stderr.decode(), time.perf_counter() - started)


def start_serve(home: Path, account: str = ACCOUNT, timeout: float = 90, address_space: int | None = None,
                **env: str) -> subprocess.Popen[bytes]:
    """A real ``plughost serve --port 0`` for ``home``; returns once the surfacing listener is up.

    ``address_space`` (bytes) caps the child's virtual memory (``RLIMIT_AS``): a test that feeds it
    something endless can fail, never take the machine down.
    """
    import resource
    import sys

    def limit() -> None:
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    full = {**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": account, "PLUGHOST_EMBEDDER": "none", **env}
    discovery = home / "run" / "surface.json"
    discovery.unlink(missing_ok=True)
    err = open(home / f"serve-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "serve", "--port", "0"], stdout=subprocess.DEVNULL,
                            stderr=err, env=full, cwd=REPO, preexec_fn=limit)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if discovery.exists() and json.loads(discovery.read_text() or "{}").get("pid") == proc.pid:
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise AssertionError(f"serve did not start: {Path(err.name).read_text(errors='replace')[-2000:]}")
