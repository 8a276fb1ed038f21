"""The Cypher passthrough (``read-cypher`` / ``write-cypher`` on Neo4j) behind the trust boundary.

An account's admin is trusted with its own account, never another's. So:

- a narrowed process (``ALLOWED_SCOPES`` or ``AGENT_SLUG`` set) gets neither tool;
- the database must hold no other account's nodes (two index seeks, inside the query's own
  transaction, before and — for writes — after the query): Cypher cannot be confined to one
  account of a shared database, so there it refuses and the guarded tools remain;
- one statement, no ``LOAD CSV``, no ``USE``, no administration or schema commands, no
  ``IN TRANSACTIONS``; procedures are allow-listed (:data:`ALLOWED_PROCEDURES`), checked both
  in the text and in Neo4j's own ``EXPLAIN`` plan;
- a read is one whose ``EXPLAIN`` query type is ``r`` (and has no write clause); it runs in a
  READ transaction (``execute_read``), a write in ``execute_write``;
- returned nodes, relationships and paths of another account or soft-deleted are redacted;
- Neo4j notifications whose GQL status matches ``^0[12]N5\\d$`` come back as warnings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from plughost import Guards, UserError, log
from plughost.plugins.graph.analysis import INDEX_TEXT

ALLOWED_PROCEDURES = frozenset({
    "db.index.fulltext.querynodes", "db.index.vector.querynodes", "db.labels", "db.relationshiptypes",
    "db.propertykeys",
})
"""Read procedures over the graph itself (lower-cased); everything else (``dbms.*``, ``apoc.*``,
``db.create*``, index creation, ...) is refused."""
MAX_QUERY_CHARS = 20000
WARNING_STATUS = re.compile(r"^0[12]N5\d$")
REDACTED = "<redacted: another account's or deleted>"

_LEXEMES = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`((?:[^`]|``)*)`|//[^\n]*|/\*.*?\*/", re.S)
"""Strings, backticked names and comments, read left to right in one pass (so a ``//`` inside a
backticked name or a string cannot hide the rest of the line from the checks)."""
_WRITE_CLAUSE = re.compile(r"\b(CREATE|MERGE|DELETE|DETACH|SET|REMOVE|DROP|FOREACH|INSERT)\b", re.I)
_ALWAYS_DENIED = re.compile(
    r"\bLOAD\s+CSV\b|\bUSE\b|\bIN\s+(?:\d+\s+CONCURRENT\s+)?TRANSACTIONS\b|\bALTER\b|\bRENAME\b|\bGRANT\b|"
    r"\bDENY\b|\bREVOKE\b|\b(?:START|STOP)\s+DATABASE\b|\bTERMINATE\b|\bSHOW\b|"
    r"\b(?:CREATE|DROP)\s+(?:OR\s+REPLACE\s+)?(?:\w+\s+)*?(?:INDEX|CONSTRAINT|DATABASE|ALIAS|USER|ROLE|"
    r"COMPOSITE|SERVER)\b|\bDROP\s+(?:\w+\s+)*?(?:INDEX|CONSTRAINT)\b",
    re.I)
_PROCEDURE = re.compile(r"\bCALL\s+([A-Za-z_][\w.]*)", re.I)
Q_FOREIGN = """CALL () { MATCH (n:GraphNode) WHERE n.accountId < $accountId RETURN n LIMIT 1
  UNION MATCH (n:GraphNode) WHERE n.accountId > $accountId RETURN n LIMIT 1 }
RETURN count(n) AS c"""
Q_UNLABELLED = """CALL () { MATCH (n) RETURN count(n) AS everything }
CALL () { MATCH (n:GraphNode) RETURN count(n) AS graphNodes }
RETURN everything - graphNodes AS c"""
"""Nodes outside the store's ``GraphNode`` label (both counts come from the count store, O(1)):
after a write there must be none, or a write could plant a node the foreign check cannot see."""
Q_VISIBLE_NODES = """MATCH (n) WHERE elementId(n) IN $ids AND n.accountId = $accountId AND n.deletedAt IS NULL
RETURN elementId(n) AS id"""
Q_VISIBLE_RELS = """MATCH (a)-[r]->(b) WHERE elementId(r) IN $ids
  AND a.accountId = $accountId AND a.deletedAt IS NULL AND b.accountId = $accountId AND b.deletedAt IS NULL
RETURN elementId(r) AS id, a.id AS start, b.id AS end"""


def bare_text(text: str, *, names: bool = False) -> str:
    """The query with strings and comments blanked; backticked names become ``x`` (clause
    checks) or, with ``names``, lose their quotes (procedure names, however quoted)."""
    def blank(m: re.Match[str]) -> str:
        name = m.group(1)
        if name is None:
            return " "
        return name.replace("``", "`") if names else " x "

    bare = _LEXEMES.sub(blank, text)
    return re.sub(r"\s*\.\s*", ".", bare) if names else bare


def check_text(text: str, tool: str, *, read_only: bool) -> None:
    """Refuse what the text alone shows is out of bounds (one clear line each)."""
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{tool}: parameter 'query': expected a non-empty Cypher string")
    if len(text) > MAX_QUERY_CHARS:
        raise UserError(f"{tool}: parameter 'query': longer than {MAX_QUERY_CHARS} characters")
    bare = bare_text(text)
    if ";" in bare.strip().rstrip(";"):
        raise UserError(f"{tool}: parameter 'query': one statement only (found ';' between statements)")
    denied = _ALWAYS_DENIED.search(bare)
    if denied:
        raise UserError(f"{tool}: '{' '.join(denied.group(0).split())}' is not allowed (no file access, "
                        "database switching, administration, schema or batched-transaction commands)")
    if read_only:
        found = _WRITE_CLAUSE.search(bare)
        if found:
            raise UserError(f"{tool}: write clause '{found.group(0)}' is not allowed; use write-cypher")
    for name in _PROCEDURE.findall(bare_text(text, names=True)):
        check_procedure(name, tool)


def check_procedure(name: str, tool: str) -> None:
    if name.lower() not in ALLOWED_PROCEDURES:
        raise UserError(f"{tool}: procedure '{name}' is not allowed (allowed: "
                        f"{', '.join(sorted(ALLOWED_PROCEDURES))})")


def check_plan(plan: Any, tool: str) -> None:
    """Walk Neo4j's own plan: procedure calls and file loads, whatever the text looked like."""
    stack = [plan] if plan else []
    while stack:
        op = stack.pop()
        kind = str(getattr(op, "operator_type", "") or (op.get("operatorType", "") if isinstance(op, dict) else ""))
        args = getattr(op, "arguments", None) or (op.get("args", {}) if isinstance(op, dict) else {}) or {}
        children = getattr(op, "children", None) or (op.get("children", []) if isinstance(op, dict) else [])
        base = kind.split("@")[0]
        if base == "LoadCSV":
            raise UserError(f"{tool}: LOAD CSV is not allowed")
        if base == "ProcedureCall":
            details = str(args.get("Details") or args.get("Signature") or "")
            check_procedure(details.split("(")[0].strip(), tool)
        stack.extend(children)


def run_query(store: Any, text: str, params: Mapping[str, Any] | None, *, guards: Guards,
              read_only: bool) -> dict[str, Any]:
    """Run one guarded Cypher statement: ``{"rows": [...], "warnings": [...]}``."""
    import neo4j

    tool = "read-cypher" if read_only else "write-cypher"
    if guards.allowed_scopes is not None or guards.agent_slug is not None:
        log("graph-cypher", "refused", tool=tool, reason="narrowed-process")
        raise UserError(f"{tool}: refused in a narrowed process (ALLOWED_SCOPES or AGENT_SLUG is set); "
                        "Cypher is for the account's admin — use graph-neighbors or graph-schema")
    check_text(text, tool, read_only=read_only)
    if params is not None and not isinstance(params, Mapping):
        raise UserError(f"{tool}: parameter 'params': expected an object")
    merged = {**dict(params or {}), "accountId": guards.account_id}

    def foreign(tx: Any) -> None:
        if tx.run(Q_FOREIGN, {"accountId": guards.account_id}).single()["c"]:
            log("graph-cypher", "refused", tool=tool, reason="shared-database")
            raise UserError(f"{tool}: this Neo4j database holds other accounts' nodes, and Cypher cannot be "
                            "confined to one account; give the account a database of its own (NEO4J_DATABASE) "
                            "or use graph-neighbors / graph-schema")

    def unlabelled(tx: Any) -> None:
        if tx.run(Q_UNLABELLED).single()["c"]:
            log("graph-cypher", "refused", tool=tool, reason="unlabelled-node")
            raise UserError(f"{tool}: every node must be one of the account's graph nodes (label GraphNode and "
                            "accountId: $accountId, e.g. CREATE (n:GraphNode:Thing {accountId: $accountId, id: "
                            "'x'})); the write was rolled back")

    def work(tx: Any) -> dict[str, Any]:
        foreign(tx)
        plan = tx.run("EXPLAIN " + text, merged).consume()
        check_plan(plan.plan, tool)
        kind = plan.query_type or "r"
        if read_only and kind != "r":
            raise UserError(f"{tool}: the query would write (query type '{kind}'); use write-cypher")
        result = tx.run(text, merged)
        records = [record.values() for record in result]
        keys = list(result.keys())
        summary = result.consume()
        if not read_only:
            foreign(tx)  # a write that reached another account rolls back whole
            unlabelled(tx)
        visible = _visible(tx, records, guards.account_id)
        rows = [dict(zip(keys, (_plain(v, visible) for v in values), strict=True)) for values in records]
        return {"rows": rows, "warnings": _warnings(summary)}

    try:
        return store.read(work) if read_only else store.write(work)
    except neo4j.exceptions.Neo4jError as exc:
        message = str(exc.message or exc).splitlines()[0]
        raise UserError(f"{tool}: {exc.code}: {message}") from None


def _walk(value: Any, nodes: set[str], rels: set[str]) -> None:
    from neo4j.graph import Node, Path, Relationship

    if isinstance(value, Node):
        nodes.add(value.element_id)
    elif isinstance(value, Relationship):
        rels.add(value.element_id)
    elif isinstance(value, Path):
        for n in value.nodes:
            nodes.add(n.element_id)
        for r in value.relationships:
            rels.add(r.element_id)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _walk(v, nodes, rels)
    elif isinstance(value, Mapping):
        for v in value.values():
            _walk(v, nodes, rels)


def _visible(tx: Any, records: list[list[Any]], account_id: str) -> dict[str, Any]:
    """Element ids of returned nodes / relationships that are the account's and not deleted."""
    nodes: set[str] = set()
    rels: set[str] = set()
    for values in records:
        for v in values:
            _walk(v, nodes, rels)
    out: dict[str, Any] = {}
    if nodes:
        out.update({r["id"]: True for r in tx.run(Q_VISIBLE_NODES, {"ids": list(nodes), "accountId": account_id})})
    if rels:
        out.update({r["id"]: (r["start"], r["end"])
                    for r in tx.run(Q_VISIBLE_RELS, {"ids": list(rels), "accountId": account_id})})
    return out


def _plain(value: Any, visible: dict[str, Any]) -> Any:
    """A result value as JSON-ready data, with what the account may not see redacted."""
    from neo4j.graph import Node, Path, Relationship

    if isinstance(value, Node):
        if value.element_id not in visible:
            return REDACTED
        props = {k: v for k, v in value.items() if k not in ("embedding", "keywordsLower", INDEX_TEXT)}
        return {"id": props.pop("id", None), "labels": sorted(lab for lab in value.labels if lab != "GraphNode"),
                "properties": props}
    if isinstance(value, Relationship):
        ends = visible.get(value.element_id)
        if not ends:
            return REDACTED
        return {"type": value.type, "start": ends[0], "end": ends[1], "properties": dict(value.items())}
    if isinstance(value, Path):
        return {"nodes": [_plain(n, visible) for n in value.nodes],
                "relationships": [_plain(r, visible) for r in value.relationships]}
    if isinstance(value, (list, tuple)):
        return [_plain(v, visible) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v, visible) for k, v in value.items()}
    return value


def _warnings(summary: Any) -> list[str]:
    out = []
    for status in getattr(summary, "gql_status_objects", None) or []:
        code = getattr(status, "gql_status", "") or ""
        if WARNING_STATUS.match(code):
            out.append(f"{code}: {getattr(status, 'status_description', '')}")
    return out
