"""A real ``plughost serve --port 0`` for a bench: started, its port read off its first line, its
output drained so it never blocks. Shared by the benches that load a running server."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def start_serve(env: Mapping[str, str], timeout: float = 120) -> tuple[subprocess.Popen[str], int]:
    """The server process and its port; exit (one line) when it does not come up within ``timeout``."""
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "serve", "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=dict(env), cwd=REPO)
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        match = re.search(r"serving on http://127\.0\.0\.1:(\d+)", line)
        if match:
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
            return proc, int(match.group(1))
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("serve did not start")
