"""Lay the checkout out as it installs, for the static checks (mypy, lint-imports).

`host/` is the `plughost` package and `plugins/` is `plughost.plugins` (setup.py); the editable
install maps them at import time, which static tools do not follow. This writes
`.venv/srctree/plughost/`: real folders, each source file a symlink to the checkout's, so a
finding's line is the checkout's line. Rebuilt from scratch on every run (cheap: ~400 links).
Prints the folder to put first on the tools' path.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOTS = {"plughost": ROOT / "host", "plughost/plugins": ROOT / "plugins"}


def build(out: Path) -> Path:
    shutil.rmtree(out, ignore_errors=True)
    for rel, src in ROOTS.items():
        for folder, dirs, files in os.walk(src):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            target = out / rel / Path(folder).relative_to(src)
            target.mkdir(parents=True, exist_ok=True)
            for name in files:
                if name.endswith((".py", ".pyi", ".typed")):
                    (target / name).symlink_to(Path(folder) / name)
    return out


if __name__ == "__main__":
    print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".venv" / "srctree"))
