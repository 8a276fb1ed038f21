"""The warm path: the hook talks to a real ``plughost serve`` over loopback; failures fall back or pass."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_helpers import stop_process
from surfacing_support import ACCOUNT, config_dir, hook_input, run_hook, seed, start_serve

PROMPT = "What budget did the board approve for Project Falcon?"


@pytest.fixture
def served(tmp_path: Path, plughost_home: Path) -> Iterator[dict[str, object]]:
    from plughost.runtime.accounts import create_account

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
    (plughost_home / "run" / "surface.json").write_text(json.dumps({"host": "127.0.0.1", "port": listener.getsockname()[1],
                                                                             "pid": os.getpid()}))
    (plughost_home / "credentials").mkdir()
    (plughost_home / "credentials" / "surface-token").write_text("t")
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none",
                     PLUGHOST_SURFACE_TIMEOUT_MS="300")
    run = run_hook(hook_input(PROMPT, "s-t"), cfg, tmp_path)  # run_hook's 60 s timeout: a hook that waits for ever fails
    assert run.returncode == 0 and run.stdout == ""
    assert "path=warm result=error reason=timeout" in run.line("hook")  # it gave up on its own 300 ms budget
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


class Imposter:
    """Whatever listens on a port after serve died: records every byte, answers every line with junk."""

    def __init__(self, port: int = 0) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.received = b""
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                conn.settimeout(2)
                try:
                    while chunk := conn.recv(65536):
                        self.received += chunk
                        conn.sendall(b'{"proof": "0000", "ok": true, "output": null}\n')
                except OSError:
                    pass


def test_a_dead_serves_port_learns_nothing(served: dict[str, object], tmp_path: Path) -> None:
    """After serve dies its surface.json stays; a listener now on that port (or any listener behind a
    live pid that cannot prove it holds the token) gets no token, prompt or environment."""
    home, cfg, cwd, proc = served["home"], served["cfg"], served["cwd"], served["proc"]
    token = (home / "credentials" / "surface-token").read_text().strip()  # type: ignore[operator]
    where = json.loads((home / "run" / "surface.json").read_text())  # type: ignore[operator]
    proc.kill()  # type: ignore[attr-defined]
    proc.wait()  # type: ignore[attr-defined]
    imposter = Imposter(where["port"])  # the old port, now someone else's
    try:
        run = run_hook(hook_input(PROMPT, "s-dead"), cfg, cwd)  # type: ignore[arg-type]
        assert "path=cold result=ok" in run.line("hook") and "(id: falcon-budget)" in run.context
        assert imposter.connections == 0  # the pid is gone: the port is not even tried
        # a live pid (this test's) whose listener cannot answer the challenge
        (home / "run" / "surface.json").write_text(json.dumps({**where, "pid": os.getpid()}))  # type: ignore[operator]
        run = run_hook(hook_input(PROMPT, "s-live"), cfg, cwd)  # type: ignore[arg-type]
        assert "path=cold result=ok" in run.line("hook") and "(id: falcon-budget)" in run.context
        assert imposter.connections >= 1
        assert token.encode() not in imposter.received and b"Falcon" not in imposter.received
        assert ACCOUNT.encode() not in imposter.received and b"challenge" in imposter.received
    finally:
        imposter.sock.close()


def test_the_first_stages_hmac_is_the_servers_proof() -> None:
    import sys

    from plughost.plugins.memory.surfacing.server import PROOF_PREFIX, proof

    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "plugins" / "memory" / "surfacing"))
    import hook  # type: ignore[import-not-found]

    for token in ("t", "a" * 64, "b" * 100):
        assert hook.hmac_sha256(token.encode(), (PROOF_PREFIX + "c" * 32).encode()) == proof(token, "c" * 32)
