"""Webchat end to end over real HTTP: send, poll, SSE, lazy Conversation, persist-first exactly-once Messages."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from channels_support import ACCOUNT, agent_calls, channel_host, serve, wait_for

from plughost.plugins.channels.server import build_app
from plughost.ports.graph import Guards


def nodes(host, label: str) -> list:
    return host.store().find(guards=Guards(ACCOUNT), labels=[label], limit=1000)


def read_sse_until(client: httpx.Client, url: str, role: str, min_seq: int) -> dict:
    with client.stream("GET", url, timeout=30) as resp:
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["role"] == role and event["seq"] >= min_seq:
                    return event
    raise AssertionError("stream ended")


def test_webchat_poll_sse_lazy_conversation(make_host, account, tmp_path: Path) -> None:
    host = channel_host(make_host, tmp_path)
    with serve(build_app(host)) as base, httpx.Client(base_url=base, timeout=30) as client:
        page = client.get("/channels/webchat")
        assert page.status_code == 200 and '<form id="chat"' in page.text

        first = client.post("/channels/webchat/messages", json={"text": "hello there", "id": "c1"})
        assert first.status_code == 202
        session = first.json()["session"]

        def replied(after: int = 0):
            events = client.get("/channels/webchat/messages", params={"session": session, "after": after}).json()
            return [e for e in events["events"] if e["role"] == "assistant"]

        reply = wait_for(replied)[0]
        assert reply["text"] == "echo: hello there"
        assert nodes(host, "Conversation") == []  # lazily, on message 2; the Messages are stored at once
        assert sorted(m.properties["role"] for m in nodes(host, "WebchatMessage")) == ["assistant", "user"]

        second = client.post("/channels/webchat/messages", json={"session": session, "text": "what now?", "id": "c2"})
        assert second.status_code == 202
        event = read_sse_until(client, f"/channels/webchat/stream?session={session}&after={reply['seq']}",
                               "assistant", reply["seq"] + 1)
        assert event["text"] == "echo: what now?"

        again = client.post("/channels/webchat/messages", json={"session": session, "text": "what now?", "id": "c2"})
        assert again.json()["duplicate"] is True

        convs = nodes(host, "Conversation")
        assert len(convs) == 1 and convs[0].properties["channel"] == "webchat"
        messages = wait_for(lambda: [m for m in nodes(host, "WebchatMessage")
                                     if m.properties.get("deliveryStatus") != "pending"]
                            if len(nodes(host, "WebchatMessage")) == 4 else None)
        roles = sorted((m.properties["role"], m.properties["text"]) for m in messages)
        assert roles == [("assistant", "echo: hello there"), ("assistant", "echo: what now?"),
                         ("user", "hello there"), ("user", "what now?")]
        assert {m.properties["scope"] for m in messages} == {"public"}  # identity said public
        assert host.store().get(convs[0].id, guards=Guards(ACCOUNT)).properties["scope"] == "public"
        assert len(agent_calls(tmp_path)) == 2  # the re-post never reached the agent
        edges = host.store().expand([convs[0].id], guards=Guards(ACCOUNT))[convs[0].id]
        assert sorted(n.node.id for n in edges if n.type == "HAS_MESSAGE") == sorted(m.id for m in messages)


def test_webchat_bad_input(make_host, account, tmp_path: Path) -> None:
    host = channel_host(make_host, tmp_path)
    with serve(build_app(host)) as base, httpx.Client(base_url=base) as client:
        for body, field in (({"text": ""}, "text"), ({"text": "x", "session": "../../etc"}, "session"),
                            ([1, 2], "body")):
            r = client.post("/channels/webchat/messages", json=body)
            assert r.status_code == 400 and r.json()["detail"].startswith(field)
        r = client.post("/channels/webchat/messages", content=b"{nope", headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"] == "invalid-json"
        assert client.get("/channels/webchat/messages", params={"session": "x"}).status_code == 400
    assert agent_calls(tmp_path) == []


def test_sse_resumes_from_last_event_id_and_ends(make_host, account, tmp_path: Path, monkeypatch) -> None:
    from plughost.plugins.channels import webchat

    monkeypatch.setattr(webchat, "STREAM_MAX_S", 1.0)
    host = channel_host(make_host, tmp_path)
    with serve(build_app(host)) as base, httpx.Client(base_url=base, timeout=30) as client:
        session = client.post("/channels/webchat/messages", json={"text": "one"}).json()["session"]
        wait_for(lambda: len(webchat.sessions(host).after(session, 0)) == 2)  # the echo and the reply
        with client.stream("GET", f"/channels/webchat/stream?session={session}",
                           headers={"Last-Event-ID": "1"}) as resp:
            seqs = [json.loads(line[6:])["seq"] for line in resp.iter_lines() if line.startswith("data: ")]
    assert seqs == [2]  # only what came after the last event seen, and the stream closed by itself


def test_webchat_refuses_before_storing_when_too_many_turns_wait(make_host, account, tmp_path: Path) -> None:
    host = channel_host(make_host, tmp_path, PLUGHOST_CHANNELS_MAX_QUEUED="1", AGENT_DELAY="3")
    with serve(build_app(host)) as base, httpx.Client(base_url=base, timeout=30) as client:
        first = client.post("/channels/webchat/messages", json={"text": "one", "session": "visitor-aaaa"})
        busy = client.post("/channels/webchat/messages", json={"text": "two", "session": "visitor-bbbb"})
        assert first.status_code == 202
        assert busy.status_code == 429 and busy.json()["error"] == "too-many-requests" and busy.headers["retry-after"]
        texts = [m.properties["text"] for m in nodes(host, "WebchatMessage") if m.properties["role"] == "user"]
        assert texts == ["one"]  # a refused message was never accepted, so nothing is stored for it


def test_webchat_event_cache_is_bounded() -> None:
    from plughost.plugins.channels import webchat

    cache = webchat.Sessions()
    for i in range(webchat.MAX_CACHED_EVENTS // 100 + 50):
        for j in range(100):
            cache.push(f"session-{i:06d}", "user", "x" * 10, f"m{i}-{j}")
    assert sum(len(v) for v in cache.events.values()) <= webchat.MAX_CACHED_EVENTS
    assert len(cache.events) <= webchat.MAX_SESSIONS and f"session-{i:06d}" in cache.events
