"""The UserPromptSubmit hook end to end: the real hook process, a recorded Claude Code input.

Each run is ``sh plugins/memory/hooks/surface-prompt.sh`` under a bare ``PATH=/usr/bin:/bin``
environment from another working directory, with the account named only by the config dir's
``settings.json`` env, as Claude Code starts it. Cold path here (no server); the warm path
against a real ``plughost serve`` is in test_surface_warm.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from surfacing_support import ACCOUNT, RECORDED, config_dir, hook_input, run_hook, seed


@pytest.fixture
def world(tmp_path: Path, plughost_home: Path) -> dict[str, Path]:
    seed(plughost_home)
    common = {"PLUGHOST_HOME": str(plughost_home), "PLUGHOST_EMBEDDER": "none", "PLUGHOST_LOG_FILE": "1"}
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    return {
        "admin": config_dir(tmp_path, "admin-config", ACCOUNT_ID=ACCOUNT, **common),
        "public": config_dir(tmp_path, "public-config", ACCOUNT_ID=ACCOUNT, PLUGHOST_SESSION_ROLE="public",
                             **common),
        "public-widened": config_dir(tmp_path, "public-wide", ACCOUNT_ID=ACCOUNT, PLUGHOST_SESSION_ROLE="visitor",
                                     ALLOWED_SCOPES="admin,public,shared", **common),
        "other": config_dir(tmp_path, "other-config", ACCOUNT_ID="acct-other", **common),
        "none": config_dir(tmp_path, "no-account", **common),
        "cwd": cwd,
        "home": plughost_home,
    }


def test_recorded_input_gives_claude_codes_output_shape(world: dict[str, Path]) -> None:
    run = run_hook(RECORDED.read_bytes(), world["admin"], world["cwd"])
    assert run.returncode == 0, run.stderr
    out = run.output
    assert out is not None and set(out) == {"hookSpecificOutput"}
    assert set(out["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    ctx = run.context
    assert "(id: falcon-budget)" in ctx and "two million euros" in ctx
    assert "falcon-chat" not in ctx  # conversation messages are never surfaced
    assert len(ctx) <= 2000
    assert "path=cold result=ok" in run.line("hook") and "items=" in run.line("hook")
    assert "account=acct-s" in run.line("surfaced") and "scopes=admin" in run.line("surfaced")
    log = (world["home"] / "logs" / "server.log").read_text()
    assert "[surface] op=surfaced" in log and "[surface] op=hook path=cold" in log


def test_budget_bounds_the_context(world: dict[str, Path], tmp_path: Path) -> None:
    small = config_dir(tmp_path, "small", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(world["home"]),
                       PLUGHOST_EMBEDDER="none", PLUGHOST_SURFACE_BUDGET="200")
    run = run_hook(hook_input("Project Falcon budget board deadline", "s-budget"), small, world["cwd"])
    assert run.output is not None
    assert len(run.context) <= 200
    assert "budget=200" in run.line("surfaced")


@pytest.mark.parametrize("prompt,reason", [
    ("thanks!", "acknowledgement"), ("ok, sounds good", "acknowledgement"), ("hi", "acknowledgement"),
    ("yes please go ahead", "acknowledgement"), ("/compact", "command"), ("", "empty"), ("?!", "too-short"),
])
def test_skip_rules(world: dict[str, Path], prompt: str, reason: str) -> None:
    run = run_hook(hook_input(prompt, "s-skip"), world["admin"], world["cwd"])
    assert run.returncode == 0 and run.stdout == ""
    assert f"path=skip reason={reason}" in run.line("hook")
    assert not (world["home"] / "surfacing" / ACCOUNT / "s-skip.jsonl").exists()


def test_short_prompt_without_history_is_skipped_by_the_server_side_rules(world: dict[str, Path]) -> None:
    run = run_hook(hook_input("falcon", "s-short"), world["admin"], world["cwd"])
    assert run.stdout == "" and "op=skip reason=too-short" in run.line("skip")


def test_no_repeat_within_a_session_and_follow_up_folding(world: dict[str, Path]) -> None:
    first = run_hook(hook_input("What budget did the board approve for Project Falcon?", "s-a"),
                     world["admin"], world["cwd"])
    shown = set(_ids(first.context))
    assert "falcon-budget" in shown
    again = run_hook(hook_input("What budget did the board approve for Project Falcon?", "s-a"),
                     world["admin"], world["cwd"])
    assert not shown & set(_ids(again.context))
    follow = run_hook(hook_input("and the deadline?", "s-a"), world["admin"], world["cwd"])
    assert "folded=true" in follow.line("empty" if not follow.stdout else "surfaced")
    assert not shown & set(_ids(follow.context))
    other_session = run_hook(hook_input("What budget did the board approve for Project Falcon?", "s-b"),
                             world["admin"], world["cwd"])
    assert "falcon-budget" in _ids(other_session.context)
    records = [json.loads(x) for x in (world["home"] / "surfacing" / ACCOUNT / "s-a.jsonl").read_text().splitlines()]
    surfaced = [i for r in records for i in r["items"]]
    assert len(surfaced) == len(set(surfaced))
    assert records[2]["folded"] is True and records[2]["query"].startswith("What budget")


def test_public_config_dir_never_surfaces_admin_scope(world: dict[str, Path]) -> None:
    for name in ("public", "public-widened"):
        run = run_hook(hook_input("Project Falcon budget board two million euros deadline", f"s-{name}"),
                       world[name], world["cwd"])
        assert run.returncode == 0
        ids = set(_ids(run.context))
        assert ids <= {"falcon-public", "hours"}, (name, ids)
        assert "falcon-public" in ids
        assert "two million" not in run.context and "March" not in run.context
        assert "scopes=public" in run.line("surfaced")


def test_process_env_cannot_widen_a_public_config_dir(world: dict[str, Path]) -> None:
    run = run_hook(hook_input("Project Falcon budget board two million euros", "s-env"), world["public"],
                   world["cwd"], ALLOWED_SCOPES="admin")
    assert set(_ids(run.context)) <= {"falcon-public", "hours"}


def test_other_account_and_no_account(world: dict[str, Path]) -> None:
    other = run_hook(hook_input("Project Falcon budget board two million euros", "s-o"), world["other"],
                     world["cwd"])
    assert other.returncode == 0 and other.stdout == ""
    none = run_hook(hook_input("Project Falcon budget board two million euros", "s-n"), world["none"], world["cwd"])
    assert none.stdout == "" and "path=skip reason=no-account" in none.line("hook")


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1,2]", b'{"prompt": 7}', b"\xff\xfe{", b'{"session_id": {}}'])
def test_hostile_stdin_never_blocks(world: dict[str, Path], stdin: bytes) -> None:
    run = run_hook(stdin, world["admin"], world["cwd"])
    assert run.returncode == 0 and run.stdout == ""
    assert "Traceback" not in run.stderr


def test_broken_store_never_blocks_the_prompt(world: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / "broken-home"
    (broken / "graph.sqlite").mkdir(parents=True)  # a folder where the store file should be
    cfg = config_dir(tmp_path, "broken", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(broken), PLUGHOST_EMBEDDER="none")
    run = run_hook(hook_input("What budget did the board approve for Project Falcon?", "s-x"), cfg, world["cwd"])
    assert run.returncode == 0 and run.stdout == ""
    assert "Traceback" not in run.stderr


def _ids(context: str) -> list[str]:
    import re

    return re.findall(r"\(id: ([^,)]+)", context)
