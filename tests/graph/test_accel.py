"""The import worker's compiled accelerator (plugins/graph/accel.py, scripts/build_accel.py).

A build is used only for the exact source it was compiled from; the worker then runs the
compiled modules, and the staged-import differential test (tests/graph/test_staged_import.py)
holds its results to the ordinary upsert path's, as it does the source modules'.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plugins.graph import accel
from plugins.graph.staging import staged_batches
from tests.conftest import REPO, REQUIRE_EXTERNAL


def _copy_sources(root: Path) -> None:
    for rel in accel.MODULES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(accel.ROOT / rel, root / rel)


def test_a_build_serves_only_the_source_it_was_compiled_from(tmp_path: Path) -> None:
    _copy_sources(tmp_path)
    assert accel.tag(tmp_path) == accel.tag(accel.ROOT)
    assert accel.available({}, tmp_path) is None  # nothing built
    built = accel.directory(tmp_path)
    built.mkdir(parents=True)
    assert accel.available({}, tmp_path) is None  # a build that never finished
    (built / "complete").write_text("")
    assert accel.available({}, tmp_path) == built
    assert accel.available({"PLUGHOST_IMPORT_ACCEL": "0"}, tmp_path) is None  # turned off
    with open(tmp_path / accel.MODULES[1], "a") as fh:
        fh.write("\n# edited\n")
    assert accel.directory(tmp_path) != built and accel.available({}, tmp_path) is None  # stale
    (tmp_path / accel.MODULES[0]).unlink()
    assert accel.available({}, tmp_path) is None  # a partial install


def _built() -> Path:
    built = accel.available({})
    if built is None:
        if REQUIRE_EXTERNAL:
            pytest.fail("no accelerator built for this source: scripts/setup.sh runs scripts/build_accel.py")
        pytest.skip("no accelerator built for this source (run scripts/build_accel.py)")
    return built


def test_the_worker_runs_the_compiled_modules(tmp_path: Path) -> None:
    built = _built()
    code = ("from plugins.graph import accel; assert accel.activate()\n"
            "import host.jsonl, plugins.graph.common, plugins.graph.staging\n"
            "print(host.jsonl.__file__, plugins.graph.common.__file__, plugins.graph.staging.__file__)")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         check=True).stdout.split()
    assert [Path(p).parent.relative_to(built).as_posix() for p in out] == ["host", "plugins/graph", "plugins/graph"]
    assert all(p.endswith(accel.extension_suffix()) for p in out)


def test_the_worker_log_names_the_build(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    built = _built()
    src = tmp_path / "one.jsonl"
    src.write_text('{"id": "x", "labels": ["Person"], "properties": {}}\n')
    assert len(list(staged_batches(src, "acct", 10, worker=True))) == 2  # the batch, then the final frame
    assert f"[graph-import] worker accel={built.name}" in capfd.readouterr().err


def test_the_accelerator_can_be_turned_off(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLUGHOST_IMPORT_ACCEL", "0")
    src = tmp_path / "one.jsonl"
    src.write_text('{"id": "x", "labels": ["Person"], "properties": {}}\n')
    assert len(list(staged_batches(src, "acct", 10, worker=True))) == 2
    assert "[graph-import] worker accel=none" in capfd.readouterr().err
