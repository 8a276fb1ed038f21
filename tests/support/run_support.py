"""``bash scripts/run.sh`` as a user starts it: the process (its own group), its output up to the
``serving at`` line, and the webchat exchange the page makes."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def start_run_script(env: Mapping[str, str], cwd: Path) -> subprocess.Popen[str]:
    """run.sh in a new session (its own process group), stdout and stderr as one text stream."""
    return subprocess.Popen(["bash", str(REPO / "scripts" / "run.sh")], cwd=cwd, env=dict(env), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def read_until_serving(proc: subprocess.Popen[str], seconds: float) -> list[str]:
    """The lines run.sh prints up to and including ``serving at ...`` (or all of them when it ends first)."""
    lines: list[str] = []
    deadline = time.time() + seconds
    assert proc.stdout is not None
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("serving at "):
            break
    return lines


def ask(base: str, text: str, session: str | None, after: int) -> tuple[str, str, int, float]:
    """Post one message the way the page does and wait for the reply: (reply, session, last seq, seconds)."""
    t0 = time.perf_counter()
    body = json.dumps({"text": text, **({"session": session} if session else {})}).encode()
    req = urllib.request.Request(f"{base}/channels/webchat/messages", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        session = json.load(resp)["session"]
    while time.perf_counter() - t0 < 90:  # a hang guard: a turn on a busy machine can take seconds
        with urllib.request.urlopen(f"{base}/channels/webchat/messages?session={session}&after={after}&wait=5",
                                    timeout=10) as resp:
            events = json.load(resp)["events"]
        if events:
            after = events[-1]["seq"]
        replies = [e["text"] for e in events if e["role"] == "assistant"]
        if replies:
            return replies[-1], session, after, time.perf_counter() - t0
    raise AssertionError(f"no reply to {text!r}")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
