"""Folder collections: the CLI, the Markdown source, incremental sync, renames, deletes, guards, hooks."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from collections_support import ACCOUNT, documents, host_for, write_notes

from plughost.ports.graph import Guards
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import CollectionSource
from tests.conftest import run_cli

ENV = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}


def _sync(home: Path, name: str | None = None, **env: str) -> dict[str, dict[str, object]]:
    out = run_cli("memory", "collection", "sync", *([name] if name else []), "--json", env={**ENV, **env})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_add_sync_list_and_what_the_notes_become(tmp_path: Path, plughost_home: Path) -> None:
    notes = tmp_path / "vault"
    write_notes(notes, 5)
    for junk in (".git", "node_modules", ".obsidian", ".trash", "build", "dist", ".venv"):
        (notes / junk).mkdir(parents=True)
        (notes / junk / "junk.md").write_text("# Junk\n")
    (notes / "readme.txt").write_text("not markdown")
    added = run_cli("memory", "collection", "add", "vault", str(notes), "--scope", "shared", "--agent", "writer",
                    env=ENV)
    assert added.returncode == 0, added.stderr
    assert "new=5" in added.stdout and "[collections] op=sync collection=vault" in added.stderr
    listing = run_cli("memory", "collection", "list", "--json", env=ENV)
    [row] = json.loads(listing.stdout)
    assert row["name"] == "vault" and row["notes"] == 5 and row["scope"] == "shared" and row["agents"] == ["writer"]

    host = host_for(plughost_home)
    try:
        docs = {d.properties["notePath"]: d for d in documents(host, "vault")}
        assert sorted(docs) == sorted(f"d{i % 7}/note-{i}.md" for i in range(5))
        doc = docs["d1/note-1.md"]
        assert doc.properties["title"] == "Note 1" and doc.properties["keywords"] == ["t1"]
        assert json.loads(doc.properties["frontmatter"]) == {"tags": ["t1"], "title": "Note 1"}
        assert doc.properties["scope"] == "shared" and doc.properties["agents"] == ["writer"]
        store, guards = host.store(), Guards(ACCOUNT)
        related = store.expand([doc.id], guards=guards, limit=50)[doc.id]
        links = {(n.type, n.direction, n.node.properties.get("notePath")) for n in related if n.type == "LINKS_TO"}
        assert links == {("LINKS_TO", "out", "d2/note-2.md"), ("LINKS_TO", "out", "d0/note-0.md"),
                         ("LINKS_TO", "in", "d0/note-0.md"), ("LINKS_TO", "in", "d2/note-2.md")}
        sections = [n.node for n in related if n.type == "HAS_SECTION"]
        assert sections and all(s.properties["scope"] == "shared" and s.properties["agents"] == ["writer"]
                                for s in sections)
        public = store.find(guards=Guards(ACCOUNT, ("public",)), labels=["KnowledgeDocument"],
                            where={"collection": "vault"})
        assert public == []
    finally:
        host.close()


def test_incremental_change_rename_delete(tmp_path: Path, plughost_home: Path) -> None:
    notes = tmp_path / "vault"
    paths = write_notes(notes, 12)
    assert run_cli("memory", "collection", "add", "vault", str(notes), env=ENV).returncode == 0
    again = _sync(plughost_home, "vault")["vault"]
    assert (again["unchanged"], again["new"], again["changed"], again["sections"]) == (12, 0, 0, 0)

    host = host_for(plughost_home)
    before = {d.properties["notePath"]: d.id for d in documents(host, "vault")}
    host.close()
    paths[3].write_text("# Note 3\n\nShorter now, links [[Note 5]].\n")  # fewer sections than before
    moved = notes / "moved" / "renamed-4.md"
    moved.parent.mkdir()
    paths[4].rename(moved)
    paths[6].unlink()
    stats = _sync(plughost_home, "vault")["vault"]
    assert (stats["changed"], stats["renamed"], stats["deleted"], stats["new"], stats["unchanged"]) == (1, 1, 1, 0, 9)

    host = host_for(plughost_home)
    try:
        store, guards = host.store(), Guards(ACCOUNT)
        after = {d.properties["notePath"]: d.id for d in documents(host, "vault")}
        assert len(after) == 11 and len(set(after.values())) == 11
        assert after["moved/renamed-4.md"] == before["d4/note-4.md"]  # a rename keeps the note
        assert after["d3/note-3.md"] == before["d3/note-3.md"]
        gone = store.get(before["d6/note-6.md"], guards=guards, include_deleted=True)
        assert gone is not None and gone.deleted
        three = store.expand([after["d3/note-3.md"]], guards=guards, limit=50)[after["d3/note-3.md"]]
        assert len([n for n in three if n.type == "HAS_SECTION"]) == 1  # the old second section is gone
        assert {n.node.properties["notePath"] for n in three if n.type == "LINKS_TO" and n.direction == "out"} == {
            "d5/note-5.md"}
        sections = store.find(guards=guards, labels=["Section"], where={"collection": "vault"}, limit=1000)
        assert {s.properties["notePath"] for s in sections} == set(after)  # sections follow the rename
    finally:
        host.close()


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            pass
    return out


def test_kill_9_during_sync_then_sync_again(tmp_path: Path, plughost_home: Path) -> None:
    notes = tmp_path / "big"
    write_notes(notes, 1500)
    assert run_cli("memory", "collection", "add", "big", str(notes), "--no-sync", env=ENV).returncode == 0
    state = plughost_home / "collections" / ACCOUNT / "big.state.sqlite"
    env = {**os.environ, **ENV}
    proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "memory", "collection", "sync", "big"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    written = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if state.exists():
            try:
                with sqlite3.connect(state) as conn:
                    written = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
            except sqlite3.Error:
                written = 0
            if written >= 64:
                break
        time.sleep(0.01)
    workers = _children(proc.pid)  # the parse workers (1,500 notes are parsed in forked processes)
    assert workers, "no parse worker process"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 0 < written < 1500, f"the sync was not caught mid-way ({written} notes recorded)"
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()], "a parse worker outlived its sync"
    stats = _sync(plughost_home, "big")["big"]
    assert stats["repaired"] is True and stats["new"] + stats["unchanged"] == 1500
    host = host_for(plughost_home)
    try:
        docs = documents(host, "big")
        assert len(docs) == 1500 and len({d.properties["notePath"] for d in docs}) == 1500
        sections = host.store().count(guards=Guards(ACCOUNT), labels=["Section"])
        assert sections == 3000  # two sections per note: nothing twice, nothing missing
    finally:
        host.close()
    assert _sync(plughost_home, "big")["big"]["unchanged"] == 1500


def test_a_narrowed_process_cannot_sync_an_admin_collection(tmp_path: Path, plughost_home: Path) -> None:
    notes = tmp_path / "secret"
    write_notes(notes, 3)
    assert run_cli("memory", "collection", "add", "secret", str(notes), "--scope", "admin", "--no-sync",
                   env=ENV).returncode == 0
    out = run_cli("memory", "collection", "sync", "secret", "--json", env={**ENV, "ALLOWED_SCOPES": "public"})
    assert out.returncode == 2 and "collection sync: admin only" in out.stderr and "Traceback" not in out.stderr
    host = host_for(plughost_home)
    try:
        assert documents(host, "secret") == []
    finally:
        host.close()


@pytest.mark.parametrize("args,needle", [
    (["add", "Bad Name", "."], "NAME: 'Bad Name' is not a collection name"),
    (["add", "ok", "/no/such/folder"], "PATH: '/no/such/folder' is not a folder"),
    (["add", "ok", ".", "--source", "org"], "--source: 'org' is not a collection source"),
    (["add", "ok", ".", "--scope", "a b"], "argument --scope: invalid choice: 'a b' (choose from 'public', 'shared', 'admin')"),
    (["sync", "nope"], "NAME: no collection 'nope'"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str, tmp_path: Path) -> None:
    out = run_cli("memory", "collection", *args, env=ENV, cwd=tmp_path)
    assert out.returncode == 2 and needle in out.stderr and "Traceback" not in out.stderr


def test_hook_plughost_collection_sources(tmp_path: Path, plughost_home: Path) -> None:
    from plughost.plugins.memory.collections import registry, service

    def parse_txt(text: str, relpath: str) -> dict[str, object]:
        first, _, rest = text.partition("\n")
        return {"title": first.strip(), "body": rest, "links": [("wikilink", "Other")], "keywords": ["txt"]}

    class TextNotes:
        @hookimpl
        def plughost_collection_sources(self) -> list[CollectionSource]:
            return [CollectionSource("text", ("**/*.txt",), parse_txt)]

    folder = tmp_path / "txt"
    folder.mkdir()
    (folder / "a.txt").write_text("First\nabout the first\n")
    (folder / "b.txt").write_text("Other\nthe other one\n")
    (folder / "c.md").write_text("# not a text note\n")
    host = host_for(plughost_home)
    try:
        with host.temporary_plugin(TextNotes(), "text-notes"):
            assert set(service.sources(host)) == {"markdown", "text"}
            registry.add(host.home, ACCOUNT, "txt", str(folder), source="text")
            stats = service.sync_named(host, ["txt"])["txt"]
        assert (stats.new, stats.edges_added) == (2, 1)
        titles = sorted(d.properties["title"] for d in documents(host, "txt"))
        assert titles == ["First", "Other"]
    finally:
        host.close()


def test_the_sync_writes_under_the_guards_it_is_given(tmp_path: Path, plughost_home: Path) -> None:
    """Below the CLI's admin-only rule, the store's write rule holds for the sync's own path (rows
    staged in the parse workers, written in batches): a process narrowed to ``public`` writes
    none of an ``admin`` collection's notes; one narrowed to the collection's scope and agent
    writes them all, tagged with them."""
    from plughost.plugins.memory.collections import registry
    from plughost.plugins.memory.collections.markdown import MARKDOWN
    from plughost.plugins.memory.collections.sync import PARALLEL_MIN_NOTES, sync

    notes = tmp_path / "team"
    write_notes(notes, PARALLEL_MIN_NOTES + 4)  # enough to be parsed in worker processes
    host = host_for(plughost_home)
    try:
        coll = registry.add(host.home, ACCOUNT, "team", str(notes), scope="admin", agents=["a1"])
        store = host.store()
        public = Guards(ACCOUNT, allowed_scopes=("public",), agent_slug="a1")
        refused = sync(store, coll, MARKDOWN, guards=public, home=host.home)
        assert (refused.new, refused.failed) == (PARALLEL_MIN_NOTES + 4, PARALLEL_MIN_NOTES + 4)
        assert all("WriteDenied" in e for e in refused.errors) and documents(host, "team") == []
        assert store.count(guards=Guards(ACCOUNT)) == 0
        inside = Guards(ACCOUNT, allowed_scopes=("admin",), agent_slug="a1")
        stats = sync(store, coll, MARKDOWN, guards=inside, home=host.home)
        assert (stats.new, stats.failed) == (PARALLEL_MIN_NOTES + 4, 0)
        docs = documents(host, "team")
        assert len(docs) == PARALLEL_MIN_NOTES + 4
        assert {(d.properties["scope"], tuple(d.properties["agents"])) for d in docs} == {("admin", ("a1",))}
    finally:
        host.close()


def test_a_note_cut_short_leaves_none_of_its_old_tail(tmp_path: Path, plughost_home: Path) -> None:
    """A section of some 30 chunks cut to 3, and a note of 30 headings cut to 2: every chunk and
    section past the new end goes (the tail past 20 used to stay live: expansion is capped at 20),
    so text the file no longer has is not found."""
    notes = tmp_path / "vault"
    notes.mkdir()
    long_one, many = notes / "long.md", notes / "many.md"
    long_one.write_text("# A\n\n" + " ".join(f"w{i}" for i in range(4000)) + " tailold\n", encoding="utf-8")
    many.write_text("".join(f"## H{i}\n\nheading text {i} zz{i}\n\n" for i in range(30)), encoding="utf-8")
    assert run_cli("memory", "collection", "add", "vault", str(notes), env=ENV).returncode == 0
    long_one.write_text("# A\n\n" + " ".join(f"w{i}" for i in range(500)) + " tailnew\n", encoding="utf-8")
    many.write_text("## H0\n\nheading text 0\n\n## H1\n\nheading text 1\n", encoding="utf-8")
    assert _sync(plughost_home, "vault")["vault"]["changed"] == 2

    host = host_for(plughost_home)
    try:
        store, guards = host.store(), Guards(ACCOUNT)
        for word in ("tailold", "w3000", "zz25", "zz7"):
            assert store.fulltext_search(word, 5, guards=guards) == [], word
        assert [h.node.labels for h in store.fulltext_search("tailnew", 5, guards=guards)]
        live = {label: len(store.find(guards=guards, labels=[label], where={"collection": "vault"}, limit=1000))
                for label in ("Section", "Chunk")}
        docs = {d.properties["notePath"]: d for d in documents(host, "vault")}
        assert live["Section"] == 1 + 2 and docs["many.md"].properties["sectionCount"] == 2
        chunks = store.find(guards=guards, labels=["Chunk"], where={"collection": "vault"}, limit=1000)
        assert len(chunks) == live["Chunk"] and 2 <= live["Chunk"] <= 4
        assert all(c.id.startswith(docs["long.md"].id) for c in chunks)
    finally:
        host.close()
