"""Build the import worker's compiled accelerator (:mod:`plugins.graph.accel`) if it is missing.

    .venv/bin/python scripts/build_accel.py

Compiles ``accel.MODULES`` with Cython into ``build/accel/<tag>/`` (built in a temporary
directory beside it, then renamed, so a build is either whole or absent) and removes builds of
older sources. Without Cython or a C compiler it says so and exits 0: the worker then runs the
source modules, only slower. Prints one ``[accel]`` line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plugins.graph import accel  # noqa: E402


def main() -> int:
    target = accel.directory()
    if (target / "complete").is_file():
        print(f"[accel] ok tag={target.name} built=earlier")
        return 0
    try:
        import Cython  # noqa: F401
    except ImportError:
        print("[accel] skipped reason=no-cython (the import worker runs the source modules)")
        return 0
    started = time.perf_counter()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        sources = []
        for rel in accel.MODULES:
            dest = work / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(accel.ROOT / rel, dest)
            sources.append(rel)
        for package in accel.PACKAGES:  # package markers, so each module gets its dotted name
            parts = package.split(".")
            for i in range(1, len(parts) + 1):
                (work.joinpath(*parts[:i]) / "__init__.py").touch()
        jobs = str(max(1, min(len(sources), os.cpu_count() or 1)))
        proc = subprocess.run([sys.executable, "-m", "Cython.Build.Cythonize", "-i", "-3", "-q", "-j", jobs, *sources],
                              cwd=work, capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}").splitlines()[-1]
            print(f"[accel] skipped reason=build-failed detail={last!r} (the import worker runs the source modules)")
            return 0
        for path in list(work.rglob("*")):
            if path.is_file() and not path.name.endswith(accel.extension_suffix()):
                path.unlink()
        for path in sorted(work.rglob("build"), reverse=True):
            shutil.rmtree(path, ignore_errors=True)
        (work / "complete").write_text(accel.tag() + "\n")
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    for old in target.parent.iterdir():  # builds of other sources or interpreters
        if old != target and not old.name.startswith("."):
            shutil.rmtree(old, ignore_errors=True)
    print(f"[accel] ok tag={target.name} built=now seconds={time.perf_counter() - started:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
