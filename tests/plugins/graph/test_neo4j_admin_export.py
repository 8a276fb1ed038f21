"""`plughost graph export --format neo4j-admin DIR`: the CSV headers ``neo4j-admin database import
full`` takes, loaded by the real tool (Neo4j 5.26's ``AdminTool`` from the test harness's jars,
scripts/neo4j/neo4j.sh lib) into a fresh database folder, with the node, relationship and property
counts it reports checked against the store."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from graph_support import graph_rows, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from plughost.ports.graph import Guards
from tests.backends import REQUIRE_EXTERNAL
from tests.conftest import run_cli

ACCOUNT = "acct-adm"
DIMS = "8"
ROOT = Path(__file__).resolve().parents[3]
FIXED = (":ID,:LABEL,id:string,accountId:string,createdAt:string,updatedAt:string,deletedAt:string,"
         "backlinkCount:long,keywordsLower:string[],ftsText:string,embedding:float[]")


def _tool_lib() -> Path:
    """The harness's jars (with org.neo4j.cli.AdminTool); skip, or fail under CI, without Java or Maven."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        if REQUIRE_EXTERNAL:
            pytest.fail(f"{', '.join(missing)} not found: neo4j-admin's import tool needs Java and Maven")
        pytest.skip(f"{', '.join(missing)} not found: neo4j-admin's import tool (Java, fetched by Maven) cannot run")
    env = dict(os.environ)
    env.setdefault("PLUGHOST_NEO4J_CACHE", str(Path.home() / ".cache/plughost/neo4j"))
    res = subprocess.run(["bash", str(ROOT / "scripts/neo4j/neo4j.sh"), "lib"], capture_output=True, text=True,
                         env=env, timeout=600)
    lib = Path(res.stdout.strip().splitlines()[-1]) if res.returncode == 0 and res.stdout.strip() else None
    if lib is None or not list(lib.glob("neo4j-import-tool-*.jar")):
        pytest.fail(f"scripts/neo4j/neo4j.sh lib gave no neo4j-import-tool jar: {res.stderr[-500:]}")
    return lib


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_neo4j_admin_files_load_with_the_real_import_tool(tmp_path: Path, plughost_home: Path) -> None:
    from plughost.plugins.graph.sqlite_store import SqliteStore

    rows = graph_rows(300, int(DIMS), prefix="a")
    rows.append({"id": "odd", "labels": ["Person", "Customer"],
                 "properties": {"name": 'Zoë "Z", O\'Neil', "note": "two\nlines, a comma; and \\ backslash",
                                "empty": "", "keywords": ["Vegan", "Cake"]}})
    res = run_cli("graph", "import", str(write_jsonl(tmp_path / "in.jsonl", rows)),
                  env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": DIMS})
    assert res.returncode == 0, res.stderr
    store = SqliteStore(plughost_home / "graph.sqlite", env={"ACCOUNT_ID": ACCOUNT})
    assert store.soft_delete("a00004", guards=Guards(ACCOUNT)) == 1
    nodes_total, edges_total = store.scan_count(account_id=ACCOUNT), store.edge_count(account_id=ACCOUNT)
    store.close()

    out = tmp_path / "admin"
    res = run_cli("graph", "export", "--format", "neo4j-admin", str(out),
                  env={"ACCOUNT_ID": ACCOUNT, "PLUGHOST_EMBED_DIMENSIONS": DIMS})
    assert res.returncode == 0, res.stderr
    assert f"[graph-export] done account={ACCOUNT} format=neo4j-admin dir={out} nodes={nodes_total} " \
           f"edges={edges_total}" in res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["import.txt", "nodes.csv", "relationships.csv", "schema.cypher"]
    node_header = (out / "nodes.csv").read_text(encoding="utf-8").split("\n", 1)[0]
    assert node_header.startswith(FIXED + ",")
    for column in ("name:string", "rank:long", "weight:double", "flag:boolean", "agents:string[]", "meta:string",
                   "keywords:string[]"):
        assert column in node_header.split(","), (column, node_header)
    assert (out / "relationships.csv").read_text().split("\n", 1)[0] == ":START_ID,:END_ID,:TYPE,w:long"
    schema = (out / "schema.cypher").read_text()
    assert "CREATE CONSTRAINT graph_node_account_id IF NOT EXISTS" in schema
    assert "CREATE FULLTEXT INDEX entity_search" in schema and "`vector.dimensions`: 8" in schema
    assert "--array-delimiter=U+001F --multiline-fields=true" in (out / "import.txt").read_text()

    nodes, rels = _read(out / "nodes.csv"), _read(out / "relationships.csv")
    assert len(nodes) == nodes_total and len(rels) == edges_total
    odd = next(n for n in nodes if n["id:string"] == "odd")
    assert odd[":ID"] == f"{ACCOUNT}:odd" and odd[":LABEL"].split("\x1f") == ["GraphNode", "Person", "Customer"]
    assert odd["name:string"] == 'Zoë "Z", O\'Neil' and odd["note:string"] == "two\nlines, a comma; and \\ backslash"
    assert odd["keywordsLower:string[]"].split("\x1f") == ["vegan", "cake"]
    assert next(n for n in nodes if n["id:string"] == "a00004")["deletedAt:string"].endswith("Z")
    embedded = next(n for n in nodes if n["id:string"] == "a00001")["embedding:float[]"].split("\x1f")
    assert len(embedded) == int(DIMS)
    properties = sum(1 for row in nodes for k, v in row.items() if not k.startswith(":") and v != "") \
        + sum(1 for row in rels for k, v in row.items() if not k.startswith(":") and v != "") \
        + 1  # the one quoted empty string: a property the tool keeps, '' here as an empty field is

    lib = _tool_lib()
    neo4j_home = tmp_path / "neo4j-home"
    (neo4j_home / "conf").mkdir(parents=True)
    argv = ["java", "-cp", f"{lib}/*", "org.neo4j.cli.AdminTool", "database", "import", "full",
            f"--nodes={out / 'nodes.csv'}", f"--relationships={out / 'relationships.csv'}",
            "--array-delimiter=U+001F", "--multiline-fields=true", "--bad-tolerance=0",
            "--skip-bad-relationships=false", "--max-off-heap-memory=256m", "--overwrite-destination", "neo4j"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path,  # its import.report goes there
                         env={**os.environ, "NEO4J_HOME": str(neo4j_home), "NEO4J_CONF": str(neo4j_home / "conf")})
    report = res.stdout + res.stderr
    assert res.returncode == 0 and "IMPORT DONE" in report, report[-3000:]
    counts = dict((what, int(n)) for n, what in re.findall(r"^\s+(\d+) (nodes|relationships|properties)$", report,
                                                          re.MULTILINE))
    assert counts == {"nodes": nodes_total, "relationships": edges_total, "properties": properties}, report[-1500:]
    assert (neo4j_home / "data" / "databases" / "neo4j").is_dir()


def test_neo4j_admin_export_refuses_a_folder_it_did_not_write(tmp_path: Path, plughost_home: Path) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("x")
    res = run_cli("graph", "export", "--format", "neo4j-admin", str(tmp_path / "busy"), env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 2 and "holds other files; expected an empty folder" in res.stderr
    (tmp_path / "file").write_text("x")
    res = run_cli("graph", "export", "--format", "neo4j-admin", str(tmp_path / "file"), env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 2 and "not a folder" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("graph", "export", "--format", "neo4j-admin", str(tmp_path / "x"),
                  env={"ACCOUNT_ID": ACCOUNT, "AGENT_SLUG": "bot"})
    assert res.returncode == 2 and "graph export: admin only" in res.stderr and not (tmp_path / "x").exists()


def test_neo4j_admin_export_is_the_owners_alone_and_never_through_a_link(tmp_path: Path, plughost_home: Path) -> None:
    import stat

    out = tmp_path / "dump"
    res = run_cli("graph", "export", "--format", "neo4j-admin", str(out), env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 0, res.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()}
    assert modes and set(modes.values()) == {0o600}, modes
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    res = run_cli("graph", "export", "--format", "neo4j-admin", str(tmp_path / "link"), env={"ACCOUNT_ID": ACCOUNT})
    assert res.returncode == 2 and "a link; expected a real folder" in res.stderr and "Traceback" not in res.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []


_text = st.text(st.characters(blacklist_characters="\x1f", blacklist_categories=("Cs",)), max_size=40)
_value = st.one_of(_text, st.integers(-(2 ** 63), 2 ** 63 - 1), st.floats(allow_nan=False, allow_infinity=False),
                   st.booleans(), st.lists(_text, max_size=4), st.lists(st.integers(-10 ** 6, 10 ** 6), max_size=4))


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_value, min_size=1, max_size=6))
def test_a_field_reads_back_as_written(values: list) -> None:
    """Any value of a column's type, quoted and joined as the export writes it, reads back from the CSV
    (``csv`` with the export's quoting, the way the import tool reads ``""`` and quoted new lines)."""
    import io

    from plughost.plugins.graph.neo4j_admin import ARRAY_DELIMITER, field, kind_of

    kinds = [kind_of(v) for v in values]
    line = ",".join(field(v, k) for v, k in zip(values, kinds, strict=True)) + "\n"
    (parsed,) = list(csv.reader(io.StringIO(line, newline="")))
    for value, kind, text in zip(values, kinds, parsed, strict=True):
        if kind == "string":
            assert text == value
        elif kind == "boolean":
            assert text == ("true" if value else "false")
        elif kind in ("long", "double"):
            assert float(text) == float(value)
        elif value:  # an array
            items = text.split(ARRAY_DELIMITER)
            assert items == ([str(v) for v in value] if kind == "long[]" else value)
