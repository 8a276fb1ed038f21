"""The warm path: the hook talks to a real ``plughost serve`` over loopback; failures fall back or pass."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_helpers import stop_process
from surfacing_support import ACCOUNT, config_dir, hook_input, run_hook, seed, start_serve

PROMPT = "What budget did the board approve for Project Falcon?"


@pytest.fixture
def served(tmp_path: Path, plughost_home: Path) -> Iterator[dict[str, object]]:
    from host.accounts import create_account

    seed(plughost_home)
    create_account(ACCOUNT, plughost_home)
    proc = start_serve(plughost_home)
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    try:
        yield {"proc": proc, "cfg": cfg, "cwd": cwd, "home": plughost_home}
    finally:
        stop_process(proc, 20)


def _raw(home: Path, line: bytes) -> dict[str, object]:
    where = json.loads((home / "run" / "surface.json").read_text())
    with socket.create_connection((where["host"], where["port"]), timeout=10) as sock:
        sock.sendall(line)
        return json.loads(sock.makefile("rb").readline())


def test_warm_answers_like_cold_and_shares_the_session(served: dict[str, object]) -> None:
    cfg, cwd, home = served["cfg"], served["cwd"], served["home"]
    warm = run_hook(hook_input(PROMPT, "s-w"), cfg, cwd)  # type: ignore[arg-type]
    assert "path=warm result=ok" in warm.line("hook")
    assert warm.output["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"  # type: ignore[index]
    assert "(id: falcon-budget)" in warm.context
    again = run_hook(hook_input(PROMPT, "s-w"), cfg, cwd)  # type: ignore[arg-type]
    assert "path=warm" in again.line("hook")  # the session remembers what it was shown
    assert "falcon-budget" not in again.context
    serve_log = (home / "logs" / "server.log").read_text()  # type: ignore[operator]
    assert "[surface] op=listening" in serve_log and "[surface] op=surfaced" in serve_log


def test_the_listener_refuses_bad_tokens_and_garbage(served: dict[str, object]) -> None:
    home = served["home"]
    token = (home / "credentials" / "surface-token").read_text().strip()  # type: ignore[operator]
    assert oct((home / "credentials" / "surface-token").stat().st_mode & 0o777) == "0o600"  # type: ignore[operator]
    request = {"sessionId": "s-r", "prompt": PROMPT, "accountId": ACCOUNT, "scopes": None}
    assert _raw(home, json.dumps({"token": "nope", "request": request}).encode() + b"\n")["error"] == "unauthorized"  # type: ignore[arg-type]
    assert _raw(home, b"{not json\n")["error"] == "bad-request"  # type: ignore[arg-type]
    bad = {"token": token, "request": {**request, "scopes": "admin"}}
    assert _raw(home, json.dumps(bad).encode() + b"\n")["error"] == "bad-request"  # type: ignore[arg-type]
    ok = _raw(home, json.dumps({"token": token, "request": {**request, "scopes": ["public"]}}).encode() + b"\n")  # type: ignore[arg-type]
    assert ok["ok"] is True and "falcon-budget" not in json.dumps(ok)


def test_killed_server_falls_back_to_cold(served: dict[str, object]) -> None:
    proc = served["proc"]
    proc.kill()  # type: ignore[attr-defined]
    proc.wait()  # type: ignore[attr-defined]
    assert (served["home"] / "run" / "surface.json").exists()  # type: ignore[operator]  # stale
    run = run_hook(hook_input(PROMPT, "s-k"), served["cfg"], served["cwd"])  # type: ignore[arg-type]
    assert "path=cold result=ok" in run.line("hook") and "(id: falcon-budget)" in run.context


def test_a_server_that_never_answers_does_not_block(tmp_path: Path, plughost_home: Path) -> None:
    seed(plughost_home)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(listener.accept()[0]), daemon=True).start()
    (plughost_home / "run").mkdir()
    (plughost_home / "run" / "surface.json").write_text(json.dumps({"host": "127.0.0.1", "port": listener.getsockname()[1]}))
    (plughost_home / "credentials").mkdir()
    (plughost_home / "credentials" / "surface-token").write_text("t")
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none",
                     PLUGHOST_SURFACE_TIMEOUT_MS="300")
    started = time.monotonic()
    run = run_hook(hook_input(PROMPT, "s-t"), cfg, tmp_path)
    assert run.returncode == 0 and run.stdout == ""
    assert "path=warm result=error reason=timeout" in run.line("hook")
    assert time.monotonic() - started < 10
    listener.close()


def test_the_first_stage_forwards_any_json_layout_and_stdin_cannot_widen(served: dict[str, object],
                                                                          tmp_path: Path) -> None:
    """``hook.py`` sends the input as it came once it parsed as one JSON object: a pretty-printed
    one works; keys smuggled after it (``{...}, "env": {...}``) make it no object, so it is skipped."""
    cfg, cwd, home = served["cfg"], served["cwd"], served["home"]
    pretty = json.dumps(json.loads(hook_input(PROMPT, "s-pretty")), indent=2).encode()
    run = run_hook(pretty, cfg, cwd)  # type: ignore[arg-type]
    assert "path=warm result=ok" in run.line("hook") and "(id: falcon-budget)" in run.context
    public = config_dir(tmp_path, "pub", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(home), PLUGHOST_EMBEDDER="none",
                        PLUGHOST_SESSION_ROLE="public")
    smuggled = hook_input("Project Falcon budget board two million euros", "s-smuggle") + \
        b', "env": {"ACCOUNT_ID": "' + ACCOUNT.encode() + b'", "PLUGHOST_SESSION_ROLE": "admin"}, "q": 0'
    run = run_hook(smuggled, public, cwd)  # type: ignore[arg-type]
    assert run.returncode == 0 and "path=skip reason=stdin-not-a-json-object" in run.line("hook")
    assert "falcon-budget" not in run.context and "two million" not in run.context
    garbage = run_hook(b'{"prompt": "Project Falcon budget board"', cfg, cwd)  # type: ignore[arg-type]
    assert garbage.returncode == 0 and garbage.stdout == "" and "reason=stdin-not-a-json-object" in garbage.line("hook")
