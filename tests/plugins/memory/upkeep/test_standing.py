"""The standing audits on ``plughost serve``'s timer (docs/memory.md#standing-audits): a real server
with a short ``PLUGHOST_AUDIT_PERIOD`` embeds a Message stored without an embedding within one
period, logs one ``[audit] op=run`` line a period, does not run again early after a restart, runs
never with the period 0, and ``plughost memory audit`` prints the last run."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from memory_support import ACCOUNT, FakeOllama
from serve_helpers import start_serve, stop_process

from plughost import Principal
from plughost.plugins.memory.upkeep import record as audit_record
from plughost.plugins.memory.upkeep import standing as standing_audit
from plughost.ports.graph import Guards
from tests.conftest import ensure_account, run_cli

HANG_S = 60.0  # a bound on waiting for a standing run, not on its speed (the period here is 1 s)


def _env(fake: FakeOllama, period: int) -> dict[str, str]:
    fake.dims = 384  # the embedded store's default dimensions
    return {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_STORE": "sqlite", "NEO4J_URI": "", "PLUGHOST_EMBEDDER": "ollama",
            "OLLAMA_URL": fake.url, "EMBED_DIMENSIONS": "384", "EMBED_SUBBATCH_COOLDOWN_MS": "0", "PLUGHOST_EMBED_QUEUE": "0",
            "PLUGHOST_AUDIT_PERIOD": str(period)}


def _lines(home: Path, token: str) -> list[str]:
    path = home / "logs" / "server.log"
    return [line for line in path.read_text(errors="replace").splitlines() if token in line] if path.exists() else []


def _wait_for(home: Path, token: str, count: int, timeout: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout
    while len(found := _lines(home, token)) < count:
        assert time.monotonic() < deadline, f"no {count} '{token}' lines in {timeout}s"
        time.sleep(0.1)
    return found


def _host(home: Path):  # noqa: ANN202 - a loaded Host reading the server's store file
    from plughost.runtime.host import Host

    return Host(env={**os.environ, "PLUGHOST_HOME": str(home), "ACCOUNT_ID": ACCOUNT, "PLUGHOST_STORE": "sqlite",
                     "PLUGHOST_EMBEDDER": "none"}).load()


def _missing(home: Path) -> list[str]:
    host = _host(home)
    try:
        return [n.id for n in host.store().missing_embeddings(account_id=ACCOUNT, limit=100)]
    finally:
        host.close()


def test_a_message_without_an_embedding_gets_one_within_a_period(plughost_home: Path, fake_ollama) -> None:
    ensure_account({"ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(plughost_home)})
    served = start_serve(env=_env(fake_ollama, 1))
    try:
        _wait_for(plughost_home, "[audit] op=run", 1)
        host = _host(plughost_home)
        try:
            host.store().upsert_many([{"id": "m-late", "labels": ["Message"], "properties": {
                "role": "user", "text": "Do you deliver birthday cakes on Sundays?", "conversationId": "c-late"}}],
                guards=Principal.system(ACCOUNT).guards)
            assert "m-late" in [n.id for n in host.store().missing_embeddings(account_id=ACCOUNT, limit=100)]
        finally:
            host.close()
        deadline = time.monotonic() + HANG_S  # a later run embeds it; the deadline only guards a hang
        while "m-late" in _missing(plughost_home):
            assert time.monotonic() < deadline, "the Message was never embedded by a later standing run"
            time.sleep(0.1)
        first = len(_wait_for(plughost_home, "[audit] op=run", len(_lines(plughost_home, "[audit] op=run")) + 1))
        time.sleep(3.0)  # it keeps running, and no faster than its period
        runs = len(_lines(plughost_home, "[audit] op=run")) - first
        assert runs <= 4, f"{runs} runs in 3 s with a period of 1 s"
        host = _host(plughost_home)
        try:
            node = host.store().get("m-late", guards=Guards(ACCOUNT))
            assert node is not None and "searchContext" in node.properties  # the indexed form, as reindex writes it
        finally:
            host.close()
    finally:
        stop_process(served.proc)  # SIGKILLs a serve that does not stop in 30 s: its returncode is then -9
    assert served.proc.returncode == 0
    assert any("embedded=1" in line for line in _lines(plughost_home, "[audit] op=run"))
    assert len(_lines(plughost_home, "[reindex] op=done")) == 1  # the idle runs log their one line only
    assert "Traceback" not in served.stderr_path.read_text(errors="replace")
    assert not _lines(plughost_home, "[audit] warn")
    record = json.loads((plughost_home / "accounts" / ACCOUNT / "audit-last.json").read_text())
    assert record["counts"]["missing"] == 0 and record["warnings"] == [] and isinstance(record["ms"], int)
    shown = run_cli("memory", "audit", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_STORE": "sqlite", "NEO4J_URI": ""})
    assert shown.returncode == 0, shown.stderr
    assert f"last standing run: {record['at']} (" in shown.stdout and "purged=0" in shown.stdout
    as_json = run_cli("memory", "audit", "--json", env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_STORE": "sqlite"})
    assert json.loads(as_json.stdout)["lastStandingRun"] == record


def test_a_restart_within_the_period_does_not_run_again_and_zero_is_off(plughost_home: Path, fake_ollama) -> None:
    ensure_account({"ACCOUNT_ID": ACCOUNT, "PLUGHOST_HOME": str(plughost_home)})
    served = start_serve(env=_env(fake_ollama, 3600))
    try:
        _wait_for(plughost_home, "[audit] op=run", 1)
    finally:
        stop_process(served.proc)  # SIGKILLs a serve that does not stop in 30 s (the period is an hour)
    assert served.proc.returncode == 0, "the audit thread held the stop for its period"
    at = json.loads((plughost_home / "accounts" / ACCOUNT / "audit-last.json").read_text())["at"]
    again = start_serve(env=_env(fake_ollama, 3600))
    try:
        starts = _wait_for(plughost_home, "[audit] op=start", 2)
        time.sleep(1.5)
    finally:
        stop_process(again.proc)
    assert len(_lines(plughost_home, "[audit] op=run")) == 1
    due = audit_record.parse(starts[1].split("next=")[1].split()[0])
    assert due is not None and abs(due - (audit_record.parse(at) or 0) - 3600) < 1
    off = start_serve(env=_env(fake_ollama, 0))
    try:
        _wait_for(plughost_home, "[audit] op=off", 1)
        time.sleep(1.0)
    finally:
        stop_process(off.proc)
    assert len(_lines(plughost_home, "[audit] op=run")) == 1
    assert _lines(plughost_home, "[audit] op=off")[-1].endswith("reason=PLUGHOST_AUDIT_PERIOD=0")


def test_one_failing_audit_does_not_stop_the_others(make_host, plughost_home: Path, monkeypatch) -> None:
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_STORE="sqlite", PLUGHOST_EMBEDDER="none")

    def broken(*_: object) -> dict[str, int]:
        raise RuntimeError("store is down")

    monkeypatch.setattr(standing_audit, "AUDITS", (("embed", broken), *standing_audit.AUDITS[1:]))
    record = standing_audit.run_once(host, ACCOUNT, 10)
    assert record is not None and record["warnings"] == ["embed"] and record["counts"]["purged"] == 0 and "missing" in record["counts"]
    assert audit_record.last_run(plughost_home, ACCOUNT) == record
    assert "warnings=embed" in audit_record.describe(record)
    stopped = threading.Event()
    stopped.set()
    assert standing_audit.run_once(host, ACCOUNT, 10, stopped) is None  # a stopping server writes no record
    assert audit_record.last_run(plughost_home, ACCOUNT) == record
    assert audit_record.describe(None).startswith("never")


def test_the_run_purges_past_the_grace_only(make_host, plughost_home: Path, monkeypatch) -> None:
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_STORE="sqlite", PLUGHOST_EMBEDDER="none")
    store, guards = host.store(), Guards(ACCOUNT)
    for node in ("old", "fresh"):
        store.upsert_node(["Person"], {"name": node}, guards=Principal.system(ACCOUNT).guards, node_id=node)
    store.soft_delete("old", guards=guards)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 8 * 86400)  # a week and a day later
    store.soft_delete("fresh", guards=guards)
    record = standing_audit.run_once(host, ACCOUNT, 10)
    assert record is not None and record["counts"]["purged"] == 1
    assert store.get("old", guards=guards, include_deleted=True) is None
    assert store.get("fresh", guards=guards, include_deleted=True) is not None


def test_on_a_shared_store_the_audits_run_once_a_period_between_servers(tmp_path: Path, capfd) -> None:
    """Two servers' audit threads on one Neo4j: the first takes ``audit:<account>`` for a period, the
    other waits for its expiry (``op=skipped reason=lease-held``); on the embedded store nothing is leased."""
    import uuid

    from plughost.runtime.host import Host
    from tests.backends import neo4j_env

    account = f"acct-audit-{uuid.uuid4().hex[:8]}"
    hosts = [Host(env={**os.environ, **neo4j_env(), "PLUGHOST_HOME": str(tmp_path / name), "ACCOUNT_ID": account,
                       "PLUGHOST_STORE": "neo4j", "PLUGHOST_EMBEDDER": "none"}).load() for name in "ab"]
    try:
        # a period of 5 s: the second server asks well within it, however busy the machine
        audits = [standing_audit.StandingAudit(h, account, period=5, limit=10) for h in hosts]
        first = audits[0]._shared_turn()
        assert isinstance(first, tuple) and first[1] == f"audit:{account}"
        first[0].keep(first[1])  # the run is over: the lease stays until the period ends
        wait = audits[1]._shared_turn()
        assert isinstance(wait, float) and 0 < wait <= 5.0  # what is left of the period (5 s) the lease holds
        time.sleep(wait + 0.2)
        second = audits[1]._shared_turn()
        assert isinstance(second, tuple)  # a period later it is the other server's turn
        second[0].release(second[1])
    finally:
        for h in hosts:
            h.close()
    assert "[audit] op=skipped reason=lease-held holder=" in capfd.readouterr().err
    sqlite = Host(env={**os.environ, "PLUGHOST_HOME": str(tmp_path / "c"), "ACCOUNT_ID": account,
                       "PLUGHOST_STORE": "sqlite", "PLUGHOST_EMBEDDER": "none"}).load()
    try:
        assert standing_audit.StandingAudit(sqlite, account, period=2, limit=10)._shared_turn() is None
    finally:
        sqlite.close()


def test_the_serving_stop_stops_a_run_when_it_begins(make_host, plughost_home: Path) -> None:
    """Under `plughost serve` a SIGTERM sets the audit thread's stop when the stop begins, so a run's
    embedding ends after its batch in hand instead of holding the shutdown for its join."""
    from plughost.api import serving

    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_STORE="sqlite", PLUGHOST_EMBEDDER="none")
    host.state.set(serving.RUNTIME, object())  # type: ignore[arg-type]  # what `serve` sets; only its presence is read
    standing_audit.start(host)
    runner = host.state.get(standing_audit.STATE_KEY)
    assert runner is not None and not runner.stop_event.is_set()
    serving.stop_of(host).begin(10.0, "SIGTERM")  # no loop here: the listeners run at once
    assert runner.stop_event.is_set()
    runner.thread.join(30)
    assert not runner.thread.is_alive()
    standing_audit.stop(host)
