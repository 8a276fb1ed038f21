"""The Stop hook names a transcript path on stdin, and ``plughost serve`` reads it: only a regular
file, only its tail. ``/dev/zero``, a FIFO and a sparse 8 GiB file against a real serve (its
address space capped, so a regression fails the test instead of eating the machine), and the
cold path under ``ulimit -v``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from serve_helpers import stop_process
from surfacing_support import ACCOUNT, HOOK, config_dir, seed, start_serve

from plughost.plugins.memory.surfacing import sessions
from plughost.plugins.memory.transcript_tail import TAIL_BYTES, read_tail

REPLY = "The board approved a budget of two million euros for Project Falcon."
LIMIT = 3 << 30  # bytes of address space for serve / the cold hook


def _records() -> bytes:
    recs = [{"type": "user", "message": {"role": "user", "content": "What budget?"}},
            {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": REPLY}]}}]
    return b"\n" + b"\n".join(json.dumps(r).encode() for r in recs) + b"\n"


def _shown(home: Path, session: str) -> None:
    sessions.append(sessions.session_path(home, ACCOUNT, session), {
        "query": "budget", "base": "budget", "items": ["falcon-budget"],
        "shown": {"falcon-budget": {"title": "Project Falcon budget",
                                    "text": "The board approved a budget of two million euros for Project Falcon"}}})


def _stop(cfg: Path, cwd: Path, session: str, transcript: str, timeout: float = 60) -> str:
    stdin = json.dumps({"session_id": session, "transcript_path": transcript, "hook_event_name": "Stop"}).encode()
    env = {"PATH": "/usr/bin:/bin", "CLAUDE_CONFIG_DIR": str(cfg), "HOME": str(cwd)}
    proc = subprocess.run(["sh", "-c", f'ulimit -v {LIMIT >> 10}; exec sh "{HOOK}"'], input=stdin,
                          capture_output=True, env=env, cwd=cwd, timeout=timeout)
    assert proc.returncode == 0 and proc.stdout == b"", proc.stderr
    hook = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("[surface] op=hook")]
    assert hook, proc.stderr
    return hook[-1]


def _hostile(tmp: Path) -> dict[str, str]:
    fifo = tmp / "transcript.fifo"
    os.mkfifo(fifo)
    sparse = tmp / "sparse.jsonl"
    with open(sparse, "wb") as fh:  # 8 GiB, nearly all of it a hole; the last reply at its end
        fh.seek((8 << 30) - len(_records()))
        fh.write(_records())
    return {"dev-zero": "/dev/zero", "fifo": str(fifo), "sparse": str(sparse)}


def test_read_tail_takes_only_a_regular_files_end(tmp_path: Path) -> None:
    paths = _hostile(tmp_path)
    assert read_tail(paths["dev-zero"]) == (None, "not-a-regular-file")
    assert read_tail(paths["fifo"]) == (None, "not-a-regular-file")  # O_NONBLOCK: the open does not wait
    assert read_tail(str(tmp_path / "absent")) == (None, "missing-transcript")
    data, why = read_tail(paths["sparse"])
    assert why == "ok" and len(data) < TAIL_BYTES and data.endswith(_records()[1:])


def test_serve_reads_no_device_fifo_or_whole_huge_file(tmp_path: Path, plughost_home: Path) -> None:
    from plughost.runtime.accounts import create_account

    seed(plughost_home)
    create_account(ACCOUNT, plughost_home)
    paths = _hostile(tmp_path)
    proc = start_serve(plughost_home, address_space=LIMIT, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none",
                     PLUGHOST_SURFACE_COLD="0")
    try:
        for name in ("dev-zero", "fifo"):
            _shown(plughost_home, f"s-{name}")
            line = _stop(cfg, tmp_path, f"s-{name}", paths[name])  # the hook's timeout guards a hang
            assert "path=warm event=Stop result=ok reason=not-a-regular-file" in line, line
        _shown(plughost_home, "s-sparse")
        line = _stop(cfg, tmp_path, "s-sparse", paths["sparse"])
        assert "path=warm event=Stop result=ok reason=marked used=1" in line, line
        assert proc.poll() is None  # still serving
        log = (plughost_home / "logs" / "server.log").read_text()
        assert log.count("[recall] op=skip reason=not-a-regular-file") == 2
        assert threads(proc.pid) < 40  # no listener thread left behind on the FIFO
    finally:
        stop_process(proc, 20)


def test_cold_hook_reads_no_device_or_fifo(tmp_path: Path, plughost_home: Path) -> None:
    seed(plughost_home)
    paths = _hostile(tmp_path)
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none",
                     PLUGHOST_SURFACE_COLD_TIMEOUT_MS="20000")
    for name in ("dev-zero", "fifo"):
        _shown(plughost_home, f"c-{name}")
        line = _stop(cfg, tmp_path, f"c-{name}", paths[name])
        assert "path=cold event=Stop result=ok reason=not-a-regular-file" in line, line


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))
