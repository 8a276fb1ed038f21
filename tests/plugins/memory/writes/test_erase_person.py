"""Erase and export take exactly one person, wholly (docs/cli.md#erase-and-export), on both
backends, over turns the real channels pipeline stored: a visitor id that is also a status, role or
scope word (`answered`, `public`, `received`, `user`, `admin`) reaches nobody else; an erase by any
one of a person's identifiers (email, phone, visitor token, sender id, Conversation id) takes every
conversation they took part in and all it holds, and the log never held their words or contacts.
The hypothesis property: after erase by a random identifier of a random person, no stored node
(and on the embedded store, no byte of the file and its WAL) holds their messages or contacts, and
every other person's nodes are all there."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from channels_support import ACCOUNT, write_account
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plughost.ports.graph import visitor_key
from tests.backends import BACKENDS, use_backend, wipe
from tests.conftest import run_cli
from tests.convids import keyed_id

EXAMPLES = int(os.environ.get("ERASE_EXAMPLES", "10"))
STATUS_WORDS = ("answered", "public", "received", "user", "admin")


@dataclass
class Person:
    """One visitor as the channels see them, and what the test expects of their erase."""

    name: str
    channel: str
    sessions: list[str]
    token: str | None = None  # webchat's browser token
    phone: str | None = None
    email: str | None = None
    said: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)  # their nodes, as the store holds them after seeding

    def identifiers(self, account: str) -> list[tuple[str, str]]:
        out = [("--visitor", s) for s in self.sessions]
        out += [("--conversation", keyed_id(account, self.channel, s)) for s in self.sessions]
        if self.token:
            out.append(("--visitor", self.token))
        if self.phone:
            out.append(("--contact", self.phone))
        if self.email:
            out.append(("--contact", self.email.upper()))
        return out

    def secrets(self) -> list[str]:
        return [*self.said, *(c for c in (self.email, self.phone, self.token) if c)]


def _turn(host: Any, msg: Any) -> Any:
    from plughost.plugins.channels.pipeline import gateway

    async def go() -> Any:
        _, _, task = await gateway(host).accept(msg)
        return await task

    return asyncio.run(go())


def _ids(store: Any) -> set[str]:
    out: set[str] = set()
    after = ""
    while True:
        page = store.scan_nodes(account_id=ACCOUNT, after=after, limit=1000)
        out |= {n.id for n in page}
        if len(page) < 1000:
            return out
        after = page[-1].id


def _seed(host: Any, person: Person, n0: int) -> int:
    """The person's turns through the gateway, one conversation per session; a new session of the
    same browser (or number) ends the one before, which writes their slice."""
    from plughost.plugins.channels.pipeline import Inbound

    store = host.store()
    before = _ids(store)
    n = n0
    for i, session in enumerate(person.sessions):
        lines = [f"My name is {person.name} and I need a cake for {80 + i} guests",
                 f"Do you bake {person.name.lower()}berry tarts?"]
        if i == 0 and (person.email or person.phone):
            lines.append(f"write to me at {person.email}" if person.email else f"call me on {person.phone}")
        for text in lines:
            n += 1
            key = visitor_key(ACCOUNT, f"webchat:{person.token}") if person.token else None
            sender = session
            _turn(host, Inbound(person.channel, sender, text, f"{sender}:{n}", phone=person.phone
                                if person.channel != "webchat" else None,
                                target={"session": session} if person.channel == "webchat" else {"chat_id": sender},
                                visitor_key=key))
            person.said.append(text)
    person.ids = _ids(store) - before
    return n


def _people(tag: str) -> list[Person]:
    return [
        Person("Ada", "webchat", ["answered", f"ada-{tag}-second-tab"], token=f"tok-ada-{tag}-" + "a" * 16,
               email=f"ada.{tag}@example.com"),
        Person("Bob", "webchat", [f"bob-{tag}-sess-0001"], token=f"tok-bob-{tag}-" + "b" * 16,
               phone="+351 912 345 6" + str(len(tag) % 10) + "8"),
        Person("Cyd", "telegram", [f"7{len(tag)}4242"], phone="+44 7700 900" + str(100 + len(tag) % 800)),
        Person("Dee", "webchat", [f"dee-{tag}-sess-0001"], token=f"tok-dee-{tag}-" + "d" * 16),
        Person("Eve", "whatsapp", [f"4915{len(tag) % 10}0777{len(tag):04d}"], phone=f"+4915{len(tag) % 10}0777{len(tag):04d}"),
    ]


def _setup(backend: str, make_host: Any, home: Path, monkeypatch: Any, tag: str = "x") -> tuple[Any, list[Person]]:
    use_backend(monkeypatch, backend)
    write_account(home)
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none")
    wipe(host.store(), ACCOUNT)
    people = _people(tag)
    n = 0
    for person in people:
        n = _seed(host, person, n)
    return host, people


def _env(backend: str) -> dict[str, str]:
    return {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_STORE": backend, "PLUGHOST_EMBEDDER": "none"}


def _cli(backend: str, *args: str) -> Any:
    from tests.backends import neo4j_env

    env = {**_env(backend), **(neo4j_env() if backend == "neo4j" else {})}
    res = run_cli(*args, env=env)
    assert res.returncode == 0, res.stderr
    return res


def _stored_text(store: Any) -> str:
    out = []
    after = ""
    while True:
        page = store.scan_nodes(account_id=ACCOUNT, after=after, limit=1000)
        out += [json.dumps([n.id, n.properties], ensure_ascii=False, default=str) for n in page]
        if len(page) < 1000:
            return "\n".join(out)
        after = page[-1].id


def _raw_sqlite(home: Path) -> bytes:
    path = home / "graph.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_status_word_as_visitor_id_reaches_nobody_else(backend, make_host, plughost_home: Path,
                                                         monkeypatch) -> None:
    host, people = _setup(backend, make_host, plughost_home, monkeypatch)
    store = host.store()
    ada = people[0]
    total = _ids(store)
    for word in STATUS_WORDS[1:]:  # nobody's id: nothing at all
        dry = json.loads(_cli(backend, "erase", "--visitor", word, "--dry-run", "--json").stdout)
        exported = json.loads(_cli(backend, "export", "--visitor", word).stdout)
        assert dry["nodes"] == 0 and exported["nodes"] == [], (word, dry)
        assert json.loads(_cli(backend, "erase", "--visitor", word, "--json").stdout)["nodes"] == 0
        assert _ids(store) == total
    # `answered` is Ada's first session: Ada wholly (both tabs, her lead, her slice), nobody else
    exported = json.loads(_cli(backend, "export", "--visitor", "answered").stdout)
    assert {n["id"] for n in exported["nodes"]} == ada.ids
    receipt = json.loads(_cli(backend, "erase", "--visitor", "answered", "--json").stdout)
    assert receipt["nodes"] == len(ada.ids) == len(exported["nodes"])
    assert {"Conversation", "Message", "Task", "VisitorSlice"} <= set(receipt["labels"]), receipt
    assert _ids(store) == total - ada.ids
    for other in people[1:]:
        assert other.ids <= _ids(store)


@pytest.mark.parametrize("backend", BACKENDS)
def test_erase_by_email_takes_her_conversations_and_the_log_never_held_them(backend, make_host,
                                                                           plughost_home: Path,
                                                                           monkeypatch) -> None:
    host, people = _setup(backend, make_host, plughost_home, monkeypatch)
    store = host.store()
    ada = people[0]
    assert ada.email
    total = _ids(store)
    exported = json.loads(_cli(backend, "export", "--contact", ada.email).stdout)
    assert {n["id"] for n in exported["nodes"]} == ada.ids
    receipt = json.loads(_cli(backend, "erase", "--contact", ada.email, "--json").stdout)
    assert receipt["nodes"] == len(ada.ids) == len(exported["nodes"]), receipt
    assert _ids(store) == total - ada.ids
    text = _stored_text(store)
    assert not [s for s in ada.secrets() if s.lower() in text.lower()]
    assert "Ada" not in text
    log = (plughost_home / "logs" / "server.log").read_text(encoding="utf-8")
    for person in people:
        for secret in person.secrets():
            assert secret not in log and secret.lower() not in log.lower(), secret
        if person.phone:
            assert person.phone.replace(" ", "").lstrip("+") not in log
        assert person.name not in log


# ---------------------------------------------------------------------------------- the property
@pytest.mark.parametrize("backend", BACKENDS)
def test_erase_by_any_identifier_leaves_no_byte_of_them_and_takes_nobody_else(
        backend, make_host, plughost_home: Path, monkeypatch) -> None:
    use_backend(monkeypatch, backend)
    write_account(plughost_home)
    monkeypatch.setenv("ACCOUNT_ID", ACCOUNT)
    host = make_host(ACCOUNT_ID=ACCOUNT, PLUGHOST_EMBEDDER="none")
    store = host.store()
    run = {"n": 0}

    @settings(max_examples=EXAMPLES if backend == "sqlite" else max(3, EXAMPLES // 3), deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(who=st.integers(0, 4), which=st.integers(0, 20))
    def prop(who: int, which: int) -> None:
        run["n"] += 1
        wipe(store, ACCOUNT)
        gone = _ids(store)
        if gone:  # the embedded store lives across examples
            store.erase_nodes(sorted(gone), account_id=ACCOUNT)
        people = _people(f"r{run['n']}")
        n = 0
        for person in people:
            n = _seed(host, person, n)
        target = people[who]
        flag, value = (ids := target.identifiers(ACCOUNT))[which % len(ids)]
        receipt = json.loads(_cli(backend, "erase", flag, value, "--json").stdout)
        left = _ids(store)
        assert receipt["nodes"] == len(target.ids), (flag, receipt)
        assert not left & target.ids, (flag, left & target.ids)
        for other in people:
            if other is not target:
                assert other.ids <= left, (flag, other.name, other.ids - left)
        text = _stored_text(store).lower()
        assert not [s for s in target.secrets() if s.lower() in text], flag
        if backend == "sqlite":
            raw = _raw_sqlite(plughost_home).lower()
            assert not [s for s in target.secrets() if s.lower().encode() in raw], flag
            assert f"{target.name.lower()}berry".encode() not in raw  # nor a term of the full-text index
            assert all(f"{p.name.lower()}berry".encode() in raw for p in people if p is not target)

    prop()
    assert run["n"] >= 3
