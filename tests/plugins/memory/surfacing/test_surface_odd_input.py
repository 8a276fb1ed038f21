"""Odd hook inputs and homes, through the real hook process: a lone surrogate in the prompt is
cleaned (the prompt still surfaces), input over 1 MiB says so, and a PLUGHOST_HOME that does not
exist is left alone (nothing created there) with the reason logged."""

from __future__ import annotations

import json
from pathlib import Path

from surfacing_support import ACCOUNT, config_dir, hook_input, run_hook, seed


def test_lone_surrogate_large_input_and_missing_home(tmp_path: Path, plughost_home: Path) -> None:
    seed(plughost_home)
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none")
    surrogate = json.dumps({**json.loads(hook_input("x", "s-sur")),
                            "prompt": "What budget did the board approve for Project Falcon? \udcff"}).encode()
    assert b"\\udcff" in surrogate
    run = run_hook(surrogate, cfg, tmp_path)
    assert "path=cold result=ok" in run.line("hook"), run.stderr
    assert "(id: falcon-budget)" in run.context and "UnicodeEncodeError" not in run.stderr
    records = (plughost_home / "surfacing" / ACCOUNT / "s-sur.jsonl").read_text(encoding="utf-8")
    assert "\ufffd" in records

    big = hook_input("What budget did the board approve for Project Falcon?" + " pad" * (300 << 10), "s-big")
    assert len(big) > 1 << 20
    run = run_hook(big, cfg, tmp_path)
    assert run.stdout == "" and "path=skip reason=input-too-large" in run.line("hook")

    missing = tmp_path / "no-such-home"
    gone = config_dir(tmp_path, "gone", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(missing), PLUGHOST_EMBEDDER="none")
    for stdin in (hook_input("What budget did the board approve for Project Falcon?", "s-gone"),
                  json.dumps({"session_id": "s-gone", "transcript_path": "/dev/null",
                              "hook_event_name": "Stop"}).encode()):
        run = run_hook(stdin, gone, tmp_path)
        assert run.returncode == 0 and run.stdout == ""
        assert "path=skip reason=no-home" in run.line("hook") and str(missing) in run.line("hook")
    assert not missing.exists()
