"""Recall tracking: the Stop hook marks what a reply used; candidates; pins and snoozes in ranking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from surfacing_support import ACCOUNT, config_dir, hook_input, run_hook, seed

from plughost.plugins.memory.surfacing import recall
from plughost.ports.graph import Guards
from plughost.runtime import hooktable
from plughost.runtime.hookspecs import hookimpl
from tests.conftest import run_cli

PROMPT = "What budget did the board approve for Project Falcon?"


def _transcript(path: Path, prompt: str, reply: str, tool_input: dict | None = None) -> Path:
    records = [
        {"type": "user", "message": {"role": "user", "content": "earlier prompt"}},
        {"type": "assistant", "message": {"id": "m0", "content": [{"type": "text", "text": "earlier reply"}]}},
        {"type": "user", "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "message": {"id": "m1", "content": [
            {"type": "thinking", "thinking": "two million euros"},
            *([{"type": "tool_use", "id": "t1", "name": "mcp__plugin_memory_memory__memory-search",
                "input": tool_input}] if tool_input else []),
            {"type": "text", "text": reply}]}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\nnot json\n")
    return path


def _stop(session: str, transcript: Path) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(transcript), "hook_event_name": "Stop",
                       "stop_hook_active": False}).encode()


@pytest.fixture
def world(tmp_path: Path, plughost_home: Path) -> dict[str, Path]:
    seed(plughost_home)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    cfg = config_dir(tmp_path, "cfg", ACCOUNT_ID=ACCOUNT, PLUGHOST_HOME=str(plughost_home), PLUGHOST_EMBEDDER="none",
                     PLUGHOST_SURFACE_MIN_BM25="0")
    return {"cfg": cfg, "cwd": cwd, "home": plughost_home, "tmp": tmp_path}


def test_stop_hook_marks_what_the_reply_used_and_recall_lists_candidates(world: dict[str, Path]) -> None:
    cfg, cwd, tmp = world["cfg"], world["cwd"], world["tmp"]
    for i in range(3):
        session = f"r-{i}"
        shown = run_hook(hook_input("Project Falcon budget board deadline launches March", session), cfg, cwd)
        assert "falcon-budget" in shown.context and "falcon-deadline" in shown.context
        reply = ("The board approved a budget of two million euros for Project Falcon." if i < 2
                 else "I could not find anything about that.")
        stop = run_hook(_stop(session, _transcript(tmp / f"t{i}.jsonl", PROMPT, reply)), cfg, cwd)
        assert stop.returncode == 0 and stop.stdout == ""
        assert "event=Stop result=ok reason=marked" in stop.line("hook")
    records = [json.loads(x) for x in (world["home"] / "surfacing" / ACCOUNT / "r-0.jsonl").read_text().splitlines()]
    assert records[-1]["used"] == ["falcon-budget"]
    out = run_cli("memory", "recall", "--json", env={"ACCOUNT_ID": ACCOUNT})
    found = json.loads(out.stdout)
    assert [h["id"] for h in found["pin"]] == ["falcon-budget"] and found["pin"][0]["used"] == 2
    assert "falcon-deadline" in [h["id"] for h in found["snooze"]]
    assert found["snooze"][0]["surfaced"] == 3 and found["snooze"][0]["used"] == 0
    text = run_cli("memory", "recall", env={"ACCOUNT_ID": ACCOUNT}).stdout
    assert "snooze candidates" in text and "falcon-deadline" in text


def test_stop_without_surfacing_is_a_fast_skip(world: dict[str, Path]) -> None:
    stop = run_hook(_stop("never-shown", world["tmp"] / "none.jsonl"), world["cfg"], world["cwd"])
    assert stop.stdout == "" and "path=skip event=Stop reason=nothing-surfaced" in stop.line("hook")


def test_used_items_rules() -> None:
    items = {"n1": {"title": "Project Falcon budget", "text": "The board approved a budget of two million euros"},
             "n2": {"title": "Shop opening hours", "text": "The shop opens at nine and closes at five"},
             "n3": {"title": "Deploy keys", "text": "Rotate deploy keys on staging every quarter using vault"}}
    assert recall.used_items("see Project Falcon budget", items) == ["n1"]
    assert recall.used_items("as noted (n2), hours apply", items) == ["n2"]
    assert recall.used_items("we should rotate deploy keys on staging every quarter", items) == ["n3"]
    assert recall.used_items("nothing related here at all", items) == []
    assert recall.used_items("", items, tool_text='{"query": "n3"}') == ["n3"]
    reply, tools = recall.last_reply(b'{"type":"user","message":{"content":"q"}}\n'
                                     b'{"type":"assistant","message":{"content":[{"type":"text","text":"a"}]}}\n')
    assert (reply, tools) == ("a", "")


def test_hook_plughost_recall_used(make_host, plughost_home: Path, tmp_path: Path) -> None:
    from plughost.plugins.memory.surfacing import sessions

    class Judge:
        @hookimpl
        def plughost_recall_used(self, reply: str, items: dict[str, dict[str, str]]) -> list[str]:
            return [i for i in items if i.endswith("2")] + ["not-surfaced"]

    host = make_host()
    assert host.first(hooktable.RECALL_USED, reply="Project Falcon budget", items={"a": {"title": "Project Falcon budget"}},
                      tool_text="") == ["a"]
    path = sessions.session_path(plughost_home, ACCOUNT, "s-j")
    sessions.append(path, {"query": "q", "base": "q", "items": ["x1", "x2"], "shown": {}})
    transcript = _transcript(tmp_path / "t.jsonl", "q", "a reply")
    with host.temporary_plugin(Judge(), "judge"):
        result = recall.mark(host, ACCOUNT, "s-j", str(transcript))
    assert result["used"] == ["x2"]  # ids the session was not shown are dropped
    assert sessions.load(path).used == {"x2"}


def test_pins_and_snoozes_change_ranking_only_behind_the_flag(make_host, plughost_home: Path) -> None:
    from plughost.plugins.memory.retrieval.pipeline import SearchRequest
    from plughost.plugins.memory.retrieval.service import run_search

    seed(plughost_home)
    hosts = {False: make_host(ACCOUNT_ID=ACCOUNT), True: make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_RECALL_RANKING="1")}
    query = SearchRequest("Project Falcon budget board", 5, expand_hops=0)

    def scores(**env: str) -> dict[str, float]:
        host = hosts[env.pop("PLUGHOST_RECALL_RANKING", "") == "1"]
        return {r.id: r.score for r in run_search(host, query, env={**host.env, **env}).rows}

    base = scores()
    first, last = max(base, key=base.get), min(base, key=base.get)
    assert first == "falcon-budget"
    recall.decide(plughost_home, ACCOUNT, [first], "snoozed")
    recall.decide(plughost_home, ACCOUNT, [last], "pinned")
    assert scores() == base and scores(PLUGHOST_GS_BOOSTS="1") == base  # off unless asked for
    ranked = scores(PLUGHOST_GS_BOOSTS="1", PLUGHOST_RECALL_RANKING="1")
    assert ranked[first] == pytest.approx(base[first] * (1 + recall.SNOOZE_BUMP))
    assert ranked[last] == pytest.approx(base[last] * (1 + recall.PIN_BUMP))
    assert all(ranked[i] == pytest.approx(base[i]) for i in base if i not in (first, last))
    out = run_cli("memory", "recall", "clear", first, last, env={"ACCOUNT_ID": ACCOUNT})
    assert out.returncode == 0 and "0 pinned, 0 snoozed" in out.stdout
    assert scores(PLUGHOST_GS_BOOSTS="1", PLUGHOST_RECALL_RANKING="1") == base
    assert Guards(ACCOUNT)  # the account the decisions belong to


def test_surfacing_stops_offering_snoozed_items(make_host, plughost_home: Path) -> None:
    from plughost.plugins.memory.surfacing.core import SurfaceRequest, surface

    seed(plughost_home)
    recall.decide(plughost_home, ACCOUNT, ["falcon-budget"], "snoozed")
    prompt = "What budget did the board approve for Project Falcon?"
    off = surface(make_host(PLUGHOST_SURFACE_MIN_BM25="0"), SurfaceRequest("s-off", prompt, ACCOUNT))
    on = surface(make_host(PLUGHOST_SURFACE_MIN_BM25="0", PLUGHOST_RECALL_RANKING="1"),
                 SurfaceRequest("s-on", prompt, ACCOUNT))
    assert "falcon-budget" in [i["id"] for i in off.items]
    assert "falcon-budget" not in [i["id"] for i in on.items] and on.items
