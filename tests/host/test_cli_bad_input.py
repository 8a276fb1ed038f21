"""Hostile CLI input (docs/cli.md#bad-input): deep JSON and lone surrogates are one line and exit 2, never a
traceback, and nothing is written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.conftest import run_cli

DEEP_OBJECT = '{"a":' * 5000 + "1" + "}" * 5000


def _nodes(home: Path) -> int:
    path = home / "graph.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM nodes").fetchone()[0])


def test_deep_properties_are_one_line_and_exit_2(plughost_home: Path) -> None:
    env = {"ACCOUNT_ID": "acme"}
    done = run_cli("memory", "write", "--labels", "Note", "--properties", DEEP_OBJECT, env=env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "--properties" in done.stderr and "nested deeper" in done.stderr


def test_a_lone_surrogate_in_a_property_is_refused_naming_it(plughost_home: Path) -> None:
    env = {"ACCOUNT_ID": "acme"}
    before = _nodes(plughost_home)
    done = run_cli("memory", "write", "--labels", "Note", "--properties", '{"name": "x\\ud800"}', env=env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "--properties" in done.stderr and "Unicode" in done.stderr
    assert _nodes(plughost_home) == before


def test_a_deep_brand_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    brand = tmp_path / "deep.json"
    brand.write_text('{"name": "x", "a": ' + "[" * 100000 + "]" * 100000 + "}", encoding="utf-8")
    done = run_cli("bundle", str(brand), "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(brand) in done.stderr and "nested deeper" in done.stderr
    assert not (tmp_path / "out").exists()


def test_install_into_a_file_is_one_line(tmp_path) -> None:
    """A --config-dir that is a file (or lies under one) is exit 2 naming it, before anything is written."""
    from tests.conftest import REPO, run_cli

    afile = tmp_path / "a-file"
    afile.write_text("x")
    for target in (afile, afile / "sub"):
        for extra in ([], ["--dry-run"]):
            done = run_cli("install", str(REPO / "host" / "manifests"), "--config-dir", str(target), "--account", "acme", *extra)
            assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
            assert done.stderr.strip() == f"plughost: --config-dir: {afile} is not a folder; expected a Claude Code " \
                                          "config dir (a folder, created when missing)"


def test_a_missing_plugins_folder_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    for flag in ("--plugins-dir", "--premium-dir"):
        done = run_cli(flag, str(tmp_path / "no-such-folder"), "plugins", "list")
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [f"plughost: {flag}: '{tmp_path / 'no-such-folder'}' does not exist"]
        assert done.stdout == ""
    for name in ("PLUGHOST_PLUGINS_DIR", "PLUGHOST_PREMIUM_DIR"):  # the variables, as their flags
        done = run_cli("plugins", "list", env={name: str(tmp_path / "no-such-folder")})
        assert done.returncode == 2 and done.stderr.strip().splitlines() == [
            f"plughost: {name}: '{tmp_path / 'no-such-folder'}' does not exist"], done.stderr
    (tmp_path / "a-file").write_text("x")
    done = run_cli("--plugins-dir", str(tmp_path / "a-file"), "plugins", "list")
    assert done.returncode == 2 and done.stderr.strip().endswith("is not a folder")
    assert run_cli("--plugins-dir", str(tmp_path), "plugins", "list").returncode == 0
    for flag in ("--plugins-dir", "--premium-dir"):  # an empty value is not the current folder
        done = run_cli(flag, "", "plugins", "list")
        assert done.returncode == 2 and done.stderr.strip().splitlines() == [
            f"plughost: error: argument {flag}: expected a folder, got an empty value"], done.stderr


def test_an_unknown_scope_is_one_line_naming_the_allowed_ones(plughost_home: Path, tmp_path: Path) -> None:
    doc = tmp_path / "prices.md"
    doc.write_text("# Prices\n\nBread is 3 euros.\n")
    for args in (("memory", "ingest", str(doc), "--scope", "pubic"),
                 ("memory", "collection", "add", "notes", str(tmp_path), "--scope", "pubic")):
        done = run_cli(*args, env={"ACCOUNT_ID": "acct-scope", "PLUGHOST_EMBEDDER": "none"})
        assert done.returncode == 2, done.stderr
        line = done.stderr.strip()
        assert "\n" not in line and "'pubic'" in line and "'public', 'shared', 'admin'" in line, line
    assert _nodes(plughost_home) == 0


def test_import_refuses_a_folder_and_a_binary_file_in_one_line(plughost_home: Path, tmp_path: Path) -> None:
    binary = tmp_path / "photo.jpg"
    binary.write_bytes(b"\xff\xd8\xff\xe0\0\x10JFIF" + bytes(range(256)) * 200)
    latin = tmp_path / "latin1.jsonl"
    latin.write_bytes('{"id": "x", "labels": ["Note"], "properties": {"name": "caf\xe9"}}\n'.encode("latin-1") * 50)
    for command in (("graph", "import"), ("memory", "import")):
        for path, said in ((tmp_path, "is a folder; expected a JSON-lines file"),
                           (binary, "not a text JSON-lines file"), (latin, "not a text JSON-lines file")):
            done = run_cli(*command, str(path), env={"ACCOUNT_ID": "acct-import", "PLUGHOST_EMBEDDER": "none"})
            assert done.returncode == 2, done.stderr
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and said in lines[0] and str(path) in lines[0], done.stderr
    assert _nodes(plughost_home) == 0
