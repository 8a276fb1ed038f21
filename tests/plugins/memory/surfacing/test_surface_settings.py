"""``PLUGHOST_SURFACE_BUDGET`` / ``_LIMIT`` are the hook's settings, with and without serve: serve
honours the values the hook sends; an out-of-range value is one ``bad-setting`` line and the
default, never surfacing turned off."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from serve_helpers import stop_process
from surfacing_support import ACCOUNT, config_dir, hook_input, run_hook, seed, start_serve

PROMPT = "Project Falcon budget board deadline launches March announcement"


def _log(home: Path) -> str:
    return (home / "logs" / "server.log").read_text()


@pytest.mark.parametrize("served", [False, True], ids=["cold", "warm"])
def test_the_hooks_budget_and_limit_apply_and_bad_ones_fall_back(tmp_path: Path, plughost_home: Path,
                                                                 served: bool) -> None:
    seed(plughost_home)
    proc = None
    if served:
        from plughost.runtime.accounts import create_account

        create_account(ACCOUNT, plughost_home)
        proc = start_serve(plughost_home)  # serve's own env sets neither
    common = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(plughost_home), "PLUGHOST_EMBEDDER": "none"}
    try:
        small = run_hook(hook_input(PROMPT, "s-small"), config_dir(tmp_path, "small", **common,
                         PLUGHOST_SURFACE_BUDGET="250", PLUGHOST_SURFACE_LIMIT="1"), tmp_path)
        assert ("path=warm" if served else "path=cold") in small.line("hook")
        assert small.context and len(small.context) <= 250
        assert len(re.findall(r"\(id: ", small.context)) == 1
        assert "budget=250" in [ln for ln in _log(plughost_home).splitlines() if "op=surfaced" in ln][-1]
        bad = run_hook(hook_input(PROMPT, "s-bad"), config_dir(tmp_path, "bad", **common,
                       PLUGHOST_SURFACE_BUDGET="50", PLUGHOST_SURFACE_LIMIT="many"), tmp_path)
        base = run_hook(hook_input(PROMPT, "s-base"), config_dir(tmp_path, "base", **common), tmp_path)
        assert "result=ok" in bad.line("hook") and bad.context == base.context  # the defaults apply
        log = _log(plughost_home)
        assert ("[surface] op=error reason=bad-setting name=PLUGHOST_SURFACE_BUDGET expected=200..100000 got=50 "
                "using=2000") in log
        assert "[surface] op=error reason=bad-setting name=PLUGHOST_SURFACE_LIMIT expected=1..20 got=many" in log
        assert "reason=internal" not in log and "budget=2000" in log
    finally:
        if proc is not None:
            stop_process(proc, 20)


def test_boot_check_reports_a_bad_surfacing_setting(tmp_path: Path, plughost_home: Path) -> None:
    from tests.conftest import run_cli

    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_SURFACE_LIMIT="0")
    out = run_cli("boot", "--check", "--config-dir", str(cfg), env={"ACCOUNT_ID": ACCOUNT,
                                                                    "PLUGHOST_SURFACE_BUDGET": "99999999"})
    lines = out.stderr.splitlines() + out.stdout.splitlines()
    assert ("[surface] op=error reason=bad-setting name=PLUGHOST_SURFACE_BUDGET expected=200..100000 got=99999999 "
            "using=2000 where=env") in lines
    assert any(ln.startswith("[surface] op=error reason=bad-setting name=PLUGHOST_SURFACE_LIMIT expected=1..20 got=0 ")
               and "settings.json" in ln for ln in lines), lines
    good = run_cli("boot", "--check", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_SURFACE_BUDGET": "500"})
    assert "startup-self-test surface-settings=ok inspected=1" in good.stderr + good.stdout


def test_a_bad_floor_is_one_line_and_the_default(make_host, plughost_home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from plughost.plugins.memory.surfacing.core import SurfaceRequest, surface

    seed(plughost_home)
    result = surface(make_host(PLUGHOST_SURFACE_MIN_BM25="lots"), SurfaceRequest("s-floor", PROMPT, ACCOUNT))
    assert result.items  # surfacing goes on
    err = capfd.readouterr().err
    assert "[surface] op=error reason=bad-setting name=PLUGHOST_SURFACE_MIN_BM25 expected=0..1 got=lots using=0.5" in err
