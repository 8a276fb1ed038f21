"""The import pieces both bulk importers share (host/ports/jsonl.py, host/util/progress.py)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from plughost.ports.jsonl import JsonLines, check_line
from plughost.util.errors import UserError
from plughost.util.progress import Progress


def test_json_lines_yields_rows_and_reports_bad_lines_by_number(tmp_path: Path) -> None:
    f = tmp_path / "n.jsonl"
    f.write_bytes(b'{"labels": ["A"]}\n\n{oops\n"\xc3\x28"\n[1]\n')
    skipped: list[tuple[int, str]] = []
    with JsonLines(f, lambda n, why: skipped.append((n, why))) as reader:
        rows = list(reader)
    assert rows == [(1, {"labels": ["A"]}), (5, [1])]
    assert [n for n, _ in skipped] == [3, 4]
    assert skipped[0][1].startswith("invalid JSON (") and "at column 2" in skipped[0][1]
    assert skipped[1][1] == "not UTF-8"
    assert (reader.lines, reader.done_bytes, reader.size) == (5, f.stat().st_size, f.stat().st_size)
    with pytest.raises(UserError, match="cannot read"):
        JsonLines(tmp_path / "missing.jsonl", lambda n, why: None)


def test_json_lines_skip_what_no_store_can_hold(tmp_path: Path) -> None:
    """A lone surrogate escape and nesting past the recursion limit are valid-looking JSON that
    would crash a write or the parser: each is one skipped line, and the next line still reads."""
    f = tmp_path / "n.jsonl"
    f.write_bytes(b'{"s": "\\ud800"}\n{"s": "\\ud83d\\ude00"}\n{"d": ' + b"[" * 100000 + b"]" * 100000
                  + b'}\n{"ok": 1}\n')
    skipped: list[tuple[int, str]] = []
    with JsonLines(f, lambda n, why: skipped.append((n, why))) as reader:
        rows = list(reader)
    assert rows == [(2, {"s": "\U0001f600"}), (4, {"ok": 1})]  # a surrogate pair is one character
    assert [n for n, _ in skipped] == [1, 3]
    assert "without its pair" in skipped[0][1] and "recursion limit" in skipped[1][1]


def test_check_line_names_the_field() -> None:
    assert check_line({"labels": ["A"], "properties": {}, "edges": [{"type": "R", "to": "x"}]}) is None
    assert check_line([1]) == "expected an object {id?, labels, properties, edges?}"
    assert check_line({"labels": ["A"], "color": 1}).startswith("unknown key 'color'")
    assert check_line({"labels": ["bad label"]}) == ("labels[0]: expected an identifier ([A-Za-z_][A-Za-z0-9_]*), "
                                                     "got 'bad label'")
    assert check_line({"labels": "Note"}) == "labels: expected a non-empty list of labels, got 'Note'"
    assert check_line({"labels": ["A"], "edges": [{"type": "R"}]}) == "edges[0].to: expected a node id"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_only_on_a_terminal_and_shows_the_count() -> None:
    out = Tty()
    bar = Progress(1000, out, unit="nodes")
    bar.update(500, 42)
    assert out.getvalue().startswith("\r[###############...............]  50.0% 42 nodes ")
    bar.interrupt()
    bar.interrupt()  # already off the bar's line: nothing more
    assert out.getvalue().count("\n") == 1
    bar.update(1000)
    bar.finish()
    assert "100.0% 1000 nodes" in out.getvalue() and out.getvalue().endswith("\n")
    quiet = io.StringIO()
    Progress(10, quiet).update(5)
    assert quiet.getvalue() == ""


def test_an_import_session_writes_under_an_unnarrowed_admins_guards(tmp_path: Path) -> None:
    """The session takes the guards the import writes under (``admit`` returns them), never an
    account beside them; narrowed guards are refused before the file is read."""
    from plughost.api.store import ImportSession
    from plughost.ports.graph import WriteDenied
    from plughost.ports.principal import Principal

    f = tmp_path / "n.jsonl"
    f.write_text('{"labels": ["Doc"]}\n', encoding="utf-8")
    owner = Principal.owner("acct")
    guards = ImportSession.admit(owner, f, "graph import")
    assert guards == owner.guards
    session = ImportSession(f, guards=guards, tag="graph-import", batch_size=10, progress=False)
    assert (session.account_id, session.guards) == ("acct", owner.guards)
    with pytest.raises(WriteDenied, match="graph-import: refused for narrowed guards"):
        ImportSession(f, guards=owner.narrowed_to(scopes=["public"]).guards, tag="graph-import", batch_size=10)
    with pytest.raises(WriteDenied):
        ImportSession.admit(owner.narrowed_to(scopes=["public"]), f, "graph import")


def test_graph_import_and_memory_import_refuse_a_bad_label_in_the_same_words(tmp_path: Path) -> None:
    import json
    import os

    from tests.conftest import ensure_account, run_cli

    env = {"ACCOUNT_ID": "acct-words"}
    ensure_account({**os.environ, **env})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(row) for row in ({"labels": ["Bad-Label"], "properties": {"name": "x"}},
                                                          {"labels": "Note", "properties": {}})) + "\n")
    said = {}
    for command in ("graph", "memory"):
        res = run_cli(command, "import", str(bad), env=env)
        said[command] = [line.split("reason=", 1)[1] for line in res.stderr.splitlines() if " skip line=" in line]
    words = ["labels[0]: expected an identifier ([A-Za-z_][A-Za-z0-9_]*), got 'Bad-Label'",
             "labels: expected a non-empty list of labels, got 'Note'"]
    assert [r.strip('"').removeprefix("node.") for r in said["graph"]] == words, said
    assert [r.strip('"') for r in said["memory"]] == words, said
