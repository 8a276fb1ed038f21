"""A ``FatalError`` from a ``plughost_startup`` hook refuses to serve (the documented exception to
isolation: a gate meant to refuse boot); any other startup failure stays that plugin's error."""

from __future__ import annotations

from pathlib import Path

from serve_helpers import make_account, start_serve

from tests.conftest import REPO, run_cli

HOOKS = """from plughost.util.errors import FatalError
from plughost.runtime.hookspecs import hookimpl


@hookimpl
def plughost_startup(host):
    raise {exc}("store vectors have 8 dimensions, the embedder makes 4")
"""


def _plugin(root: Path, exc: str) -> Path:
    (root / "guard").mkdir(parents=True)
    (root / "guard" / "PLUGIN.md").write_text("---\nname: guard\npython: guard_hooks\n---\n", encoding="utf-8")
    (root / "guard" / "guard_hooks.py").write_text(HOOKS.format(exc=exc), encoding="utf-8")
    return root


def test_a_fatal_startup_error_refuses_to_serve(plughost_home: Path, tmp_path: Path) -> None:
    make_account(plughost_home, "acct-a")
    refused = run_cli("--plugins-dir", str(_plugin(tmp_path / "p", "FatalError")), "serve", "--port", "0",
                      env={"ACCOUNT_ID": "acct-a", "PLUGHOST_HOME": str(plughost_home)}, cwd=REPO)
    assert refused.returncode == 1  # the app's startup refuses: in process, the server never listens for long
    err = refused.stderr
    assert "Traceback" not in err, err
    (line,) = [x for x in err.splitlines() if x.startswith("plughost serve: refusing to serve")]
    assert "plugin 'guard'" in line and "8 dimensions" in line, line
    assert "[serve] op=refused reason=fatal-startup plugin=guard" in err
    assert "serving on" not in refused.stdout


def test_another_startup_error_stays_isolated(plughost_home: Path, tmp_path: Path) -> None:
    make_account(plughost_home, "acct-a")
    served = start_serve(env={"ACCOUNT_ID": "acct-a", "PLUGHOST_HOME": str(plughost_home)},
                         plugins_dir=_plugin(tmp_path / "p", "RuntimeError"))
    try:
        assert served.port
    finally:
        served.proc.terminate()
        assert served.proc.wait(timeout=60) == 0
    assert "op=hook-error plugin=guard hook=plughost_startup" in served.stderr_path.read_text()
