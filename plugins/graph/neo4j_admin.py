"""`plughost graph export --format neo4j-admin DIR`: CSV files for ``neo4j-admin database import full``.

Neo4j's route for a large first load is an offline import into an empty database, then the
indexes (docs/graph.md#a-large-first-load-neo4j-admin). This writes, into ``DIR``:

- ``nodes.csv``: ``:ID`` (``<account>:<id>``: ids are per account, the import's are global;
  not stored), ``:LABEL`` (the node's labels and ``GraphNode``), then typed property columns
  (``id:string``, ``accountId:string``, ``createdAt:string`` ..., ``backlinkCount:long``,
  ``keywordsLower:string[]``, ``ftsText:string`` (the analysed text the full-text index holds,
  :mod:`plughost.plugins.graph.analysis`), ``embedding:float[]`` and one column per property key of the account,
  typed from its values: ``string``, ``long``, ``double``, ``boolean`` or their arrays);
- ``relationships.csv``: ``:START_ID``, ``:END_ID``, ``:TYPE`` and the edges' property columns;
- ``schema.cypher``: the constraint, full-text and vector index statements to run once the
  database is started (``plugins/graph/schema.cypher`` at the store's dimensions);
- ``import.txt``: the ``neo4j-admin`` command line for these files.

The node properties are what the Neo4j store writes for the same node (nested objects and mixed
lists as JSON text, :func:`plughost.plugins.graph.neo4j_store.writes.clean_props`). A key whose values
differ in type across nodes gets a ``string`` column (its other values written as JSON text).
Every string is quoted (``""`` inside), an empty field is no property, arrays are joined with
``ARRAY_DELIMITER`` (U+001F, which no text holds) and strings may span lines
(``--multiline-fields=true``).

Two passes over the store, a page at a time each: the first finds the columns and their types,
the second writes the rows; memory holds one page and the column table.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import IO, Any

import orjson

from plughost import UserError, log
from plughost.plugins.graph.analysis import INDEX_TEXT, index_texts
from plughost.plugins.graph.common import keywords_of
from plughost.plugins.graph.export import export_rows
from plughost.plugins.graph.neo4j_store.schema import schema_statements
from plughost.plugins.graph.neo4j_store.writes import clean_props

ARRAY_DELIMITER = "\x1f"
"""Between the items of an array field (``--array-delimiter=U+001F``)."""
FILES = ("nodes.csv", "relationships.csv", "schema.cypher", "import.txt")
FIXED_NODE_COLUMNS = (("id", "string"), ("accountId", "string"), ("createdAt", "string"), ("updatedAt", "string"),
                      ("deletedAt", "string"), ("backlinkCount", "long"), ("keywordsLower", "string[]"),
                      (INDEX_TEXT, "string"), ("embedding", "float[]"))


def clean(props: dict[str, Any]) -> dict[str, Any]:
    return clean_props(props)


def kind_of(value: Any) -> str | None:
    """The import type of a (cleaned) value; None for a null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, list):
        kinds = {kind_of(v) for v in value}
        if len(kinds) == 1 and None not in kinds:
            return f"{kinds.pop()}[]"
        if kinds <= {"long", "double"} and kinds:
            return "double[]"
        return "string[]" if not value else "string"
    return "string"


def merge_kind(have: str | None, new: str | None) -> str | None:
    if new is None or have == new:
        return have
    if have is None:
        return new
    if {have, new} == {"long", "double"}:
        return "double"
    if {have, new} == {"long[]", "double[]"}:
        return "double[]"
    return "string"


def field(value: Any, kind: str) -> str:
    """One CSV field of ``kind``: quoted strings, plain numbers, joined arrays; '' for no value."""
    if value is None:
        return ""
    if kind == "string":
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return '"' + text.replace('"', '""') + '"'
    if kind == "float[]" and hasattr(value, "dtype"):  # a stored float32 vector: its shortest digits
        return '"' + orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].replace(
            ",", ARRAY_DELIMITER) + '"'
    if kind.endswith("[]"):
        item = kind[:-2]
        if not isinstance(value, list):
            value = [value]
        parts = [v if isinstance(v, str) else json.dumps(v) if item == "string" else scalar(v) for v in value]
        if item == "string" and any(ARRAY_DELIMITER in p for p in parts):
            raise UserError(f"a string array holds U+001F (the array delimiter): {parts[0][:40]!r}")
        return '"' + ARRAY_DELIMITER.join(parts).replace('"', '""') + '"'
    return scalar(value)


def scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(float(value)) if isinstance(value, float) else str(value)


def header(columns: list[tuple[str, str]], lead: list[str]) -> str:
    return ",".join(lead + [f"{name}:{kind}" for name, kind in columns]) + "\n"


def node_key(account_id: str, node_id: str) -> str:
    return f"{account_id}:{node_id}"


def scan_columns(store: Any, account_id: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Pass one: the node and the edge property columns with their types, in first-seen order."""
    node_kinds: dict[str, str | None] = {}
    edge_kinds: dict[str, str | None] = {}
    for row in export_rows(store, account_id):
        for key, value in clean(row["properties"]).items():
            node_kinds[key] = merge_kind(node_kinds.get(key), kind_of(value))
        for edge in row.get("edges", ()):
            for key, value in clean(edge.get("properties") or {}).items():
                edge_kinds[key] = merge_kind(edge_kinds.get(key), kind_of(value))
    fixed = {name for name, _ in FIXED_NODE_COLUMNS}
    nodes = [(k, v or "string") for k, v in node_kinds.items() if k not in fixed]
    edges = [(k, v or "string") for k, v in edge_kinds.items()]
    return nodes, edges


def node_fields(row: dict[str, Any], account_id: str, backlinks: int) -> dict[str, Any]:
    stamps = row["stamps"]
    return {"id": row["id"], "accountId": account_id, "createdAt": stamps.get("createdAt"),
            "updatedAt": stamps.get("updatedAt"), "deletedAt": stamps.get("deletedAt"),
            "backlinkCount": backlinks, "keywordsLower": keywords_of(row["properties"]) or None,
            INDEX_TEXT: index_texts([row["properties"]])[0] or None,
            "embedding": row.get("embedding")}


def _private(path: Path) -> IO[str]:
    """A new file only its owner reads (0600), never opened through a link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    return os.fdopen(fd, "w", encoding="utf-8", newline="")


def export_neo4j_admin(store: Any, account_id: str, folder: Path, *, dimensions: int) -> dict[str, Any]:
    """Write ``FILES`` into ``folder`` (made if missing, refused when it holds other files); returns counts."""
    if folder.is_symlink():
        raise UserError(f"{folder}: a link; expected a real folder (an export is never written through a link)")
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder}: not a folder (expected the folder to write the neo4j-admin files into)")
    if folder.is_dir() and any(p.name not in FILES for p in folder.iterdir()):
        raise UserError(f"{folder}: holds other files; expected an empty folder (or one a previous "
                        "export --format neo4j-admin wrote)")
    started = time.perf_counter()
    node_columns, edge_columns = scan_columns(store, account_id)
    columns = list(FIXED_NODE_COLUMNS) + node_columns
    partial = folder.with_name(f".{folder.name}.partial")
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)  # the whole graph of an account: the owner's eyes only
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(mode=0o700)
    except OSError as exc:
        raise UserError(f"{folder}: cannot write here ({exc.strerror or exc})") from None
    nodes = edges = 0
    try:
        with _private(partial / "nodes.csv") as nf, _private(partial / "relationships.csv") as rf:
            nf.write(header(columns, [":ID", ":LABEL"]))
            rf.write(header(edge_columns, [":START_ID", ":END_ID", ":TYPE"]))
            for row in export_rows(store, account_id, backlinks=True):
                props = clean(row["properties"])
                values = {**props, **node_fields(row, account_id, row.pop("backlinkCount", 0))}
                labels = ARRAY_DELIMITER.join(["GraphNode", *row["labels"]])
                nf.write(",".join([field(node_key(account_id, row["id"]), "string"), f'"{labels}"']
                                  + [field(values.get(name), kind) for name, kind in columns]) + "\n")
                nodes += 1
                for edge in row.get("edges", ()):
                    eprops = clean(edge.get("properties") or {})
                    rf.write(",".join([field(node_key(account_id, row["id"]), "string"),
                                       field(node_key(account_id, edge["to"]), "string"), edge["type"]]
                                      + [field(eprops.get(name), kind) for name, kind in edge_columns]) + "\n")
                    edges += 1
        with _private(partial / "schema.cypher") as fh:
            fh.write("// Run once the imported database is started (cypher-shell -f schema.cypher); plughost's\n"
                     "// own first start would create the same, by name.\n"
                     + "".join(f"{s};\n" for s in schema_statements(dimensions)))
        with _private(partial / "import.txt") as fh:
            fh.write(import_command(folder) + "\n")
        for name in FILES:
            os.replace(partial / name, folder / name)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    seconds = time.perf_counter() - started
    summary = {"nodes": nodes, "edges": edges, "columns": len(columns), "seconds": f"{seconds:.2f}",
               "rate": f"{nodes / seconds:.0f}" if seconds > 0 else "0"}
    log("graph-export", "done", account=account_id[:8], format="neo4j-admin", dir=str(folder), **summary)
    return summary


def import_command(folder: Path, database: str = "neo4j") -> str:
    """The ``neo4j-admin`` command line that loads ``folder``'s files into ``database`` (stopped, empty)."""
    return (f"neo4j-admin database import full --nodes={folder / 'nodes.csv'} "
            f"--relationships={folder / 'relationships.csv'} --array-delimiter=U+001F --multiline-fields=true "
            f"--overwrite-destination {database}")
