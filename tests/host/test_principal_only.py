"""Past the resolver, "who is acting" has one form: a :class:`Principal` or the guards it makes
(docs/roles.md). A store write takes the guards, never an account beside them, and no module but
the principal's own builds ``Guards(...)`` by hand (``Principal.owner`` / ``Principal.system`` do)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from plughost.plugins.graph.neo4j_store.store import Neo4jStore
from plughost.plugins.graph.sqlite_store.store import SqliteStore
from plughost.ports.graph import GraphStore

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "host" / "ports" / "principal.py"
ACCOUNT_PARAMS = {"account_id", "account"}
TRANSACTION_PARAMS = {"conn", "tx"}
"""A method given an open transaction (``write_nodes(conn, ...)``) runs inside a write whose account
and guards its public caller already took from the guards: not a store write method of its own."""


def account_beside_guards(cls: type) -> list[str]:
    found = []
    for name, fn in inspect.getmembers(cls, inspect.isfunction):
        if name.startswith("_"):
            continue
        params = set(inspect.signature(fn).parameters)
        if "guards" in params and params & ACCOUNT_PARAMS and not params & TRANSACTION_PARAMS:
            found.append(f"{cls.__name__}.{name}: {', '.join(sorted(params & ACCOUNT_PARAMS))} beside guards")
    return found


def test_no_store_write_takes_an_account_beside_its_guards() -> None:
    found = [line for cls in (GraphStore, SqliteStore, Neo4jStore) for line in account_beside_guards(cls)]
    assert not found, "a store write takes the guards (their account is the write's):\n" + "\n".join(found)


def test_the_store_writes_take_guards() -> None:
    """The checks above see the writes: each takes its guards, as a keyword, on every store."""
    writes = ("upsert_node", "upsert_many", "create_edge", "create_edges", "delete_edge")
    for cls in (GraphStore, SqliteStore, Neo4jStore):
        for name in writes:
            param = inspect.signature(getattr(cls, name)).parameters.get("guards")
            assert param is not None and param.kind is inspect.Parameter.KEYWORD_ONLY, f"{cls.__name__}.{name}"
            assert param.default is inspect.Parameter.empty, f"{cls.__name__}.{name}: guards must be given"


def guards_built_by_hand(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name == "Guards":
            found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_guards_are_built_in_the_principal_module_only() -> None:
    files = sorted(p for d in ("host", "plugins") for p in (ROOT / d).rglob("*.py") if p != HOME)
    assert len(files) > 100
    found = [line for path in files for line in guards_built_by_hand(path)]
    assert not found, ("Guards(...) built by hand; use Principal.owner(account) / Principal.system(account) "
                       "or a principal's guards:\n" + "\n".join(found))


def test_the_scan_sees_a_guards_built_by_hand(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from plughost import Guards\ng = Guards('a')\nh = plughost.Guards('a', ('public',))\n")
    assert guards_built_by_hand(bad, tmp_path) == ["bad.py:2", "bad.py:3"]


def test_the_owner_writes_with_its_defaults_the_system_as_written(tmp_path: Path) -> None:
    from plughost.ports.principal import Principal, Role

    store = SqliteStore(tmp_path / "graph.db", env={"ACCOUNT_ID": "acct"})
    try:
        owner, system = Principal.owner("acct"), Principal.system("acct")
        assert (owner.role, system.role) == (Role.OWNER, Role.SYSTEM)
        assert owner.is_admin and system.is_admin and not system.guards.narrowed
        a = store.upsert_node(["Doc"], {"title": "a"}, guards=owner.guards)
        b = store.upsert_node(["Doc"], {"title": "b"}, guards=system.guards)
        got = {n.id: n.properties.get("scope") for n in store.find(guards=owner.guards, labels=["Doc"], limit=5)}
        assert got == {a: "admin", b: None}
        assert not system.narrowed_to(scopes=["public"]).guards.system  # narrowed: checked as any other
    finally:
        store.close()


KEYS_NOT_WRITES = {"plugins/memory/work/reports.py:report_id"}
"""Functions that take an account beside optional guards to derive a key, and write nothing."""


def accounts_beside_guards_in(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        a = node.args
        params = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
        where = f"{path.relative_to(root)}:{node.name}"
        if "guards" in params and params & ACCOUNT_PARAMS and not params & TRANSACTION_PARAMS \
                and where not in KEYS_NOT_WRITES:
            found.append(f"{where} (line {node.lineno}): {', '.join(sorted(params & ACCOUNT_PARAMS))} beside guards")
    return found


def test_no_function_takes_an_account_beside_its_guards() -> None:
    """Past the resolver the guards carry the account: an entity write, a withdrawal, a collection
    sync, an import session or the owner's rules take the guards alone."""
    files = sorted(p for d in ("host", "plugins") for p in (ROOT / d).rglob("*.py"))
    found = [line for path in files for line in accounts_beside_guards_in(path)]
    assert not found, "the guards carry the account; take them alone:\n" + "\n".join(found)


def test_the_function_scan_sees_an_account_beside_guards(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def write(store, account_id, rows, *, guards): ...\n"
                   "async def ok(store, rows, *, guards): ...\n"
                   "def staged(conn, account_id, guards): ...\n")
    assert accounts_beside_guards_in(bad, tmp_path) == ["bad.py:write (line 1): account_id beside guards"]
