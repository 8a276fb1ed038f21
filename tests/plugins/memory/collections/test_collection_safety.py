"""What a collection may be and who may change it: the private default scope, refused folders,
admin-only changes, name and folder clashes, bad patterns (the CLI as a fresh process runs it, the store file)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from collections_support import ACCOUNT, documents, host_for, write_notes

from plughost.ports.graph import Guards
from tests.conftest import run_cli

ENV = {"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBEDDER": "none"}
PUBLIC = {**ENV, "ALLOWED_SCOPES": "public"}


def _cli(*args: str, **env: str):
    return run_cli("memory", "collection", *args, env={**ENV, **env})


def _visible(home: Path, collection: str, scopes: tuple[str, ...] | None) -> list[str]:
    host = host_for(home)
    try:
        nodes = host.store().find(guards=Guards(ACCOUNT, scopes), where={"collection": collection}, limit=1000)
        return sorted(n.id for n in nodes if not n.deleted)
    finally:
        host.close()


def test_a_collection_without_scope_is_private(tmp_path: Path, plughost_home: Path) -> None:
    write_notes(tmp_path / "private", 3)
    write_notes(tmp_path / "open", 2)
    out = _cli("add", "private", str(tmp_path / "private"))
    assert out.returncode == 0 and "scope admin" in out.stdout
    assert _cli("add", "open", str(tmp_path / "open"), "--scope", "public").returncode == 0
    assert _visible(plughost_home, "private", ("public",)) == []  # an anonymous webchat visitor sees nothing
    assert len(_visible(plughost_home, "private", None)) == 3 * 3  # document + two sections each
    assert len(_visible(plughost_home, "open", ("public",))) == 2 * 3
    listed = {r["name"]: r["scope"] for r in json.loads(_cli("list", "--json").stdout)}
    assert listed == {"open": "public", "private": "admin"}
    assert "default admin" in run_cli("memory", "collection", "add", "--help", env=ENV).stdout


def test_a_registration_from_before_the_default_is_rescoped_on_sync(tmp_path: Path, plughost_home: Path) -> None:
    """An older registry entry has no scope and its nodes none: the next sync makes them admin."""
    from plughost.plugins.memory.collections import registry
    from plughost.plugins.memory.collections.markdown import MARKDOWN
    from plughost.plugins.memory.collections.sync import sync

    notes = tmp_path / "old"
    write_notes(notes, 4)
    host = host_for(plughost_home)
    try:
        coll = registry.add(plughost_home, ACCOUNT, "old", str(notes))
        coll.scope = None  # what an older version wrote: unscoped nodes, no tags in the state
        sync(host.store(), coll, MARKDOWN, guards=Guards(ACCOUNT), home=plughost_home)
    finally:
        host.close()
    reg = registry.registry_path(plughost_home, ACCOUNT)
    data = json.loads(reg.read_text())
    del data["old"]["scope"]
    reg.write_text(json.dumps(data))
    with sqlite3.connect(registry.state_path(plughost_home, ACCOUNT, "old")) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'tags'")
    with sqlite3.connect(plughost_home / "graph.sqlite") as conn:  # today's writes stamp admin: unscope by hand
        conn.execute("UPDATE nodes SET scope = NULL, properties = json_remove(properties, '$.scope') "
                     "WHERE account_id = ?", (ACCOUNT,))
    assert len(_visible(plughost_home, "old", ("public",))) == 12  # the defect: public
    out = _cli("sync", "old", "--json")
    assert out.returncode == 0, out.stderr
    assert "[collections] op=rescope collection=old scope=admin was=- notes=4 reason=registered-without-scope" \
        in out.stderr
    stats = json.loads(out.stdout)["old"]
    assert (stats["rescoped"], stats["new"], stats["changed"]) == (4, 0, 0)
    assert _visible(plughost_home, "old", ("public",)) == []
    assert len(_visible(plughost_home, "old", None)) == 12
    again = json.loads(_cli("sync", "old", "--json").stdout)["old"]
    assert (again["rescoped"], again["unchanged"]) == (0, 4)  # once


@pytest.mark.parametrize("where", ["/", "/root", "/dev", "/proc", "/sys", "/etc", "/usr", "/bin", "/boot", "/var",
                                   "~", "HOME", "HOME/sub", "HOME/.."])
def test_system_folders_home_and_plughost_home_are_refused(where: str, tmp_path: Path, plughost_home: Path) -> None:
    user_home = tmp_path / "me"
    user_home.mkdir()
    path = where.replace("HOME", str(plughost_home))
    if where == "HOME/sub":
        (plughost_home / "sub").mkdir(exist_ok=True)
    if not Path(path).expanduser().is_dir() and where != "~":
        pytest.skip(f"{path} is not a folder here")
    out = _cli("add", "x", path, "--no-sync", HOME=str(user_home))
    assert out.returncode == 2, out.stdout
    [line] = [ln for ln in out.stderr.splitlines() if ln.startswith("plughost:")]
    assert line.startswith("plughost: PATH: ") and "Traceback" not in out.stderr
    assert _cli("list", "--json").stdout.strip() == "[]"


def test_changes_are_admin_only_and_list_shows_what_the_guards_read(tmp_path: Path, plughost_home: Path) -> None:
    write_notes(tmp_path / "adm", 3)
    write_notes(tmp_path / "pub", 2)
    assert _cli("add", "adm", str(tmp_path / "adm")).returncode == 0
    assert _cli("add", "pub", str(tmp_path / "pub"), "--scope", "public").returncode == 0
    (tmp_path / "new").mkdir()
    for narrowed in (PUBLIC, {**ENV, "AGENT_SLUG": "writer"}):
        for args in (["remove", "adm"], ["add", "other", str(tmp_path / "new"), "--scope", "admin", "--no-sync"],
                     ["sync"], ["sync", "pub"]):
            out = run_cli("memory", "collection", *args, env=narrowed)
            assert out.returncode == 2 and f"collection {args[0]}: admin only" in out.stderr, (args, out.stderr)
    listed = json.loads(run_cli("memory", "collection", "list", "--json", env=PUBLIC).stdout)
    assert [r["name"] for r in listed] == ["pub"]  # the admin collection's name and folder stay hidden
    assert not run_cli("memory", "collection", "list", env=PUBLIC).stdout.startswith("adm\t")
    assert [r["name"] for r in json.loads(_cli("list", "--json").stdout)] == ["adm", "pub"]
    assert len(_visible(plughost_home, "adm", None)) == 9
    # nothing visible to a narrowed process: the answer does not claim there is nothing at all
    none_visible = run_cli("memory", "collection", "list", env={**ENV, "ALLOWED_SCOPES": "team"})
    assert none_visible.stdout.strip() == "no collections within this process's scopes and agent"


def test_remove_soft_deletes_every_document_even_unrecorded_ones(tmp_path: Path, plughost_home: Path) -> None:
    from plughost.plugins.memory.collections import registry

    write_notes(tmp_path / "adm", 5)
    assert _cli("add", "adm", str(tmp_path / "adm")).returncode == 0
    state = registry.state_path(plughost_home, ACCOUNT, "adm")
    host = host_for(plughost_home)
    ids = [d.id for d in documents(host, "adm")]
    host.close()
    with sqlite3.connect(state) as conn:  # as after a kill -9: in the store, not yet in the state
        conn.execute("DELETE FROM notes WHERE relpath = 'd1/note-1.md'")
    out = _cli("remove", "adm")
    assert out.returncode == 0 and "5 document(s) soft-deleted" in out.stdout, out.stdout + out.stderr
    host = host_for(plughost_home)
    try:
        docs = [host.store().get(i, guards=Guards(ACCOUNT), include_deleted=True) for i in ids]
        assert len(docs) == 5 and all(d is not None and d.deleted for d in docs)
    finally:
        host.close()
    assert _visible(plughost_home, "adm", None) == []  # sections and chunks went with them
    assert not state.exists() and not Path(f"{state}-wal").exists()


def test_a_name_is_not_silently_repointed_and_folders_do_not_overlap(tmp_path: Path, plughost_home: Path) -> None:
    write_notes(tmp_path / "a", 2)
    write_notes(tmp_path / "b", 2, prefix="other")
    assert _cli("add", "a", str(tmp_path / "a")).returncode == 0
    again = _cli("add", "a", str(tmp_path / "b"))
    assert again.returncode == 2 and "collection 'a' exists" in again.stderr and "--replace" in again.stderr
    for path, relation in ((tmp_path / "a", "is the folder"), (tmp_path / "a" / "d1", "is inside the folder"),
                           (tmp_path, "holds the folder")):
        out = _cli("add", "c", str(path), "--no-sync")
        assert out.returncode == 2 and f"{relation} of collection 'a'" in out.stderr, out.stderr
    replaced = _cli("add", "a", str(tmp_path / "b"), "--replace")
    assert replaced.returncode == 0 and "new=2" in replaced.stdout and "deleted=2" in replaced.stdout


@pytest.mark.parametrize("args,needle", [
    (["add", "", "."], "NAME: empty"),
    (["add", "ok", ".", "--pattern", "["], "--pattern: '[' has a '[' without its ']'"),
    (["add", "ok", ".", "--pattern", "/etc/*.md"], "--pattern: '/etc/*.md' leaves PATH"),
    (["add", "ok", ".", "--pattern", ""], "--pattern: empty"),
])
def test_bad_names_and_patterns(args: list[str], needle: str, tmp_path: Path) -> None:
    out = run_cli("memory", "collection", *args, env=ENV, cwd=tmp_path)
    assert out.returncode == 2 and needle in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_pattern_matching_nothing_gets_a_hint(tmp_path: Path, plughost_home: Path) -> None:
    write_notes(tmp_path / "v", 2)
    out = _cli("add", "v", str(tmp_path / "v"), "--pattern", "**/*.txt")
    assert out.returncode == 0 and "scanned=0" in out.stdout
    assert f"hint: no file under {tmp_path / 'v'} matches **/*.txt" in out.stdout
    assert "[collections] warn reason=no-match collection=v pattern=**/*.txt" in out.stderr


def test_files_that_are_not_notes_as_written(tmp_path: Path, plughost_home: Path) -> None:
    """Binary, Latin-1, broken frontmatter, a symlink leaving the folder, a file over 8 MiB."""
    from plughost.plugins.memory.collections.sync import MAX_FILE_BYTES

    vault, outside = tmp_path / "vault", tmp_path / "outside"
    vault.mkdir()
    outside.mkdir()
    (vault / "good.md").write_text("# Good\n\nA plain note.\n")
    (vault / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    (vault / "noise.md").write_bytes(bytes((i * 151 + 7) % 256 for i in range(4096)).replace(b"\x00", b"\x01"))
    (vault / "latin.md").write_bytes("# Café crème\n\nDéjà vu à Noël.\n".encode("cp1252"))
    (vault / "unclosed.md").write_text("---\ntitle: Broken\ntags: [a\n\n# Unclosed\n\nThe body proper.\n")
    (vault / "invalid.md").write_text("---\ntitle: [unbalanced\nfoo: : :\n---\n# Invalid\n\nThe real body.\n")
    (outside / "secret.md").write_text("# Secret\n\nNot part of the vault.\n")
    (vault / "link.md").symlink_to(outside / "secret.md")
    (vault / "inside.md").symlink_to(vault / "good.md")  # good.md is a note itself: not stored twice
    (vault / "huge.md").write_bytes(b"# Huge\n" + b"x" * MAX_FILE_BYTES)
    out = _cli("add", "vault", str(vault), "--json")
    assert out.returncode == 2  # add has no --json: one line
    out = _cli("add", "vault", str(vault))
    assert out.returncode == 0, out.stderr
    stats = json.loads(_cli("sync", "vault", "--json").stdout)["vault"]
    reasons = sorted(e.split(": ", 1) for e in stats["errors"])
    assert reasons == [["huge.md", "too-large"], ["image.md", "binary"], ["inside.md", "symlink-to good.md"],
                       ["link.md", "symlink-outside"], ["noise.md", "binary"]], stats
    assert stats["failed"] == 0 and stats["skipped"] == 5 and stats["unchanged"] == 4
    assert "skipped=5 failed=0" in out.stdout and "warning latin.md: not UTF-8; read as cp1252" in out.stdout
    assert "warning invalid.md: frontmatter is not valid YAML" in out.stdout
    assert "warning unclosed.md: frontmatter not closed by '---'; left out" in out.stdout
    host = host_for(plughost_home)
    try:
        docs = {d.properties["notePath"]: d.properties for d in documents(host, "vault")}
    finally:
        host.close()
    assert sorted(docs) == ["good.md", "invalid.md", "latin.md", "unclosed.md"]
    assert docs["latin.md"]["title"] == "Café crème" and "\ufffd" not in docs["latin.md"]["summary"]
    for name in ("invalid.md", "unclosed.md"):
        assert "---" not in docs[name]["summary"] and "title:" not in docs[name]["summary"], docs[name]["summary"]
        assert "body" in docs[name]["summary"]


def test_a_second_sync_of_a_collection_waits_for_the_first(tmp_path: Path, plughost_home: Path) -> None:
    import fcntl
    import os
    import subprocess
    import sys
    import time

    from plughost.plugins.memory.collections import registry

    write_notes(tmp_path / "v", 3)
    assert _cli("add", "v", str(tmp_path / "v"), "--no-sync").returncode == 0
    err = tmp_path / "err.txt"
    with open(registry.lock_path(plughost_home, ACCOUNT, "v"), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process is syncing it
        with open(err, "w") as fh:
            proc = subprocess.Popen([sys.executable, "-m", "plughost.cli", "memory", "collection", "sync", "v"],
                                    env={**os.environ, **ENV}, stdout=subprocess.PIPE, stderr=fh, text=True)
        try:
            deadline = time.monotonic() + 60
            while "op=sync-wait" not in err.read_text(errors="replace") and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
            assert "[collections] op=sync-wait collection=v reason=another-sync-running" in err.read_text(errors="replace")
            assert proc.poll() is None  # it waits, it does not sync beside the other
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "new=3" in out


def test_a_note_that_comes_back_is_live_again(tmp_path: Path, plughost_home: Path) -> None:
    """Ids are stable: a file deleted and written again, or a collection removed and added again,
    revives the soft-deleted documents instead of leaving them hidden."""
    vault = tmp_path / "v"
    paths = write_notes(vault, 3)
    assert _cli("add", "v", str(vault)).returncode == 0
    text = paths[1].read_text()
    paths[1].unlink()
    assert json.loads(_cli("sync", "v", "--json").stdout)["v"]["deleted"] == 1
    paths[1].write_text(text + "\nBack again.\n")
    assert json.loads(_cli("sync", "v", "--json").stdout)["v"]["new"] == 1
    host = host_for(plughost_home)
    try:
        assert sorted(d.properties["notePath"] for d in documents(host, "v")) == [
            "d0/note-0.md", "d1/note-1.md", "d2/note-2.md"]
    finally:
        host.close()
    assert _cli("remove", "v").returncode == 0
    assert _visible(plughost_home, "v", None) == []
    assert _cli("add", "v", str(vault)).returncode == 0
    assert len(_visible(plughost_home, "v", None)) == 9


def test_a_folder_swapped_for_a_symlink_or_gone_is_refused_at_sync(tmp_path: Path, plughost_home: Path) -> None:
    """The folder checks hold at every sync, not only at ``add``: a public collection's folder
    swapped for a symlink to PLUGHOST_HOME publishes nothing, and a folder that went away (an
    unmounted drive) soft-deletes nothing."""
    pub = tmp_path / "pub"
    write_notes(pub, 2)
    assert _cli("add", "pub", str(pub), "--scope", "public").returncode == 0
    before = _visible(plughost_home, "pub", ("public",))
    assert len(before) == 2 * 3
    secret = plughost_home / "accounts" / ACCOUNT / "x"
    secret.mkdir(parents=True)
    (secret / "s.md").write_text("# secret secrethomeword\n")
    pub.rename(tmp_path / "pub.real")
    pub.symlink_to(plughost_home)
    out = _cli("sync", "pub")
    assert out.returncode == 2 and "swapped for a symlink" in out.stderr, out.stderr
    assert _visible(plughost_home, "pub", ("public",)) == before  # nothing published, nothing deleted
    pub.unlink()
    out = _cli("sync", "pub")
    assert out.returncode == 2 and "is missing or not a folder now; nothing was changed" in out.stderr, out.stderr
    out = _cli("sync")  # every collection: the refused one is logged and left as it is
    assert out.returncode == 0 and "[collections] op=refuse collection=pub" in out.stderr
    assert _visible(plughost_home, "pub", ("public",)) == before


def test_unclosed_frontmatter_loses_only_its_key_lines() -> None:
    from plughost.plugins.memory.collections.markdown import read_frontmatter

    front, body, warning = read_frontmatter("---\ntitle: unclosed\nkey: v\n# Heading\nunclosedword body\n")
    assert front == {} and body == "# Heading\nunclosedword body\n" and "not closed" in (warning or "")
    front, body, warning = read_frontmatter("---\ntags:\n  - a\n- b\n\nBody text\n")
    assert body == "Body text\n" and warning
    assert read_frontmatter("---\n# Heading\ntext\n") == ({}, "---\n# Heading\ntext\n", None)  # a rule, not a block


def test_a_scope_change_applies_at_once_even_with_no_sync(tmp_path: Path, plughost_home: Path) -> None:
    write_notes(tmp_path / "pub", 2)
    assert _cli("add", "pub", str(tmp_path / "pub"), "--scope", "public").returncode == 0
    assert len(_visible(plughost_home, "pub", ("public",))) > 0
    out = _cli("add", "pub", str(tmp_path / "pub"), "--scope", "admin", "--replace", "--no-sync")
    assert out.returncode == 0 and "re-tagged now" in out.stdout, out.stdout
    assert _visible(plughost_home, "pub", ("public",)) == []  # no longer readable by a public process
    assert "registeredOnly" in json.loads(_cli("list", "--json").stdout)[0]
    assert json.loads(_cli("list", "--json").stdout)[0]["registeredOnly"] is False  # the watcher keeps it fresh


def test_a_folder_where_nothing_matches_any_more_keeps_its_notes(tmp_path: Path, plughost_home: Path) -> None:
    write_notes(tmp_path / "m", 3)
    assert _cli("add", "m", str(tmp_path / "m")).returncode == 0
    before = _visible(plughost_home, "m", None)
    (tmp_path / "m").rename(tmp_path / "m_moved")
    (tmp_path / "m").mkdir()  # an unmounted drive or a cloud folder not yet filled
    out = _cli("sync", "m")
    assert out.returncode == 2 and "were kept" in out.stderr and "--allow-empty" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert _visible(plughost_home, "m", None) == before
    assert _cli("sync", "m").returncode == 2  # refused again, not half-applied the first time
    out = _cli("sync", "m", "--allow-empty")
    assert out.returncode == 0 and "deleted=3" in out.stdout, out.stdout
    assert _visible(plughost_home, "m", None) == []


def test_sync_of_an_empty_name_is_refused(plughost_home: Path) -> None:
    out = _cli("sync", "")
    assert out.returncode == 2 and "NAME: empty" in out.stderr, out.stderr


def test_a_symlink_to_a_note_of_the_folder_is_not_a_second_note(tmp_path: Path, plughost_home: Path) -> None:
    write_notes(tmp_path / "s", 2)
    (tmp_path / "s" / "copy.md").symlink_to(tmp_path / "s" / "d0" / "note-0.md")
    (tmp_path / "s" / ".hidden").mkdir()
    (tmp_path / "s" / ".hidden" / "only.md").write_text("# Only\n\nreachable through its link\n", encoding="utf-8")
    (tmp_path / "s" / "only-link.md").symlink_to(tmp_path / "s" / ".hidden" / "only.md")
    out = _cli("add", "s", str(tmp_path / "s"))
    assert out.returncode == 0 and "skipped copy.md: symlink-to d0/note-0.md" in out.stdout, out.stdout
    host = host_for(plughost_home)
    try:
        paths = sorted(d.properties["notePath"] for d in documents(host, "s"))
    finally:
        host.close()
    assert paths == ["d0/note-0.md", "d1/note-1.md", "only-link.md"]  # the hidden target has no path of its own


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(tmp_path: Path, plughost_home: Path) -> None:
    import os

    note = write_notes(tmp_path / "k", 2)[0]
    assert _cli("add", "k", str(tmp_path / "k")).returncode == 0
    st = note.stat()
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("Body of note 0", "Bodx of note 0"), encoding="utf-8")  # same length
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))  # as rsync -a, cp -p or tar x leave it
    out = _cli("sync", "k")
    assert out.returncode == 0 and "changed=1" in out.stdout, out.stdout
    out = _cli("sync", "k")
    assert "changed=0" in out.stdout and "unchanged=2" in out.stdout, out.stdout  # recorded: not read again


def test_a_state_from_before_the_ctime_column_is_read_and_upgraded(tmp_path: Path) -> None:
    from plughost.plugins.memory.collections.state import State

    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE notes (relpath TEXT PRIMARY KEY, note_id TEXT NOT NULL, doc_id TEXT NOT NULL, "
                       "hash TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, title TEXT NOT NULL, "
                       "aliases TEXT NOT NULL, links TEXT NOT NULL, edges TEXT NOT NULL);"
                       "INSERT INTO notes VALUES ('a.md', 'n1', 'd1', 'h', 3, 7, 'A', '[]', '[]', '[]');")
    conn.commit()
    conn.close()
    state = State(path)
    try:
        note = state.notes()["a.md"]
        assert (note.size, note.mtime_ns, note.ctime_ns) == (3, 7, 0)  # hashed once at the next sync
        state.put([note])
    finally:
        state.close()
