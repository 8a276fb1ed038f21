"""The public plugin API (docs/plugin-api.md): every listed name resolves, importing it is cheap,
the concrete host is everything ``plughost.Host`` promises, and ``host.memory_search`` turns the
hook's rows into typed ``MemoryHit`` rows (a bad row is one line naming the field)."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys

import pytest

import plughost
from plughost import Host, MemoryHit, UserError, hookimpl
from plughost.runtime.host import Host as ConcreteHost
from plughost.runtime.plugin_host import PluginHost

API_MODULES = ["hooks", "store", "http", "serving", "principals", "accounts", "settings", "util", "credentials",
               "payload", "agents"]
ROOMS = ("cli", "serve", "mcp", "payload", "web", "runtime", "ports", "util", "plugins")
HEAVY = ("mcp", "neo4j", "numpy", "onnxruntime", "starlette", "uvicorn", "jsonschema")


def test_every_public_name_resolves() -> None:
    missing = [name for name in plughost.__all__ if getattr(plughost, name, None) is None]
    assert not missing
    assert sorted(dir(plughost)) == sorted(plughost.__all__)
    assert plughost.Host is PluginHost
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        plughost.Nope  # noqa: B018
    for name in API_MODULES:
        module = importlib.import_module(f"plughost.api.{name}")
        assert module.__doc__ and module.__all__, name
        assert [n for n in module.__all__ if not hasattr(module, n)] == [], name


def _loaded_after(statement: str) -> dict[str, list[str]]:
    code = (f"import json, sys\n{statement}\n"
            "print(json.dumps(sorted(m for m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    modules = json.loads(out.stdout)
    return {"rooms": sorted({m.split(".")[1] for m in modules if m.startswith("plughost.")} & set(ROOMS)),
            "heavy": sorted({m.split(".")[0] for m in modules} & set(HEAVY))}


def test_import_plughost_loads_no_room_and_nothing_heavy() -> None:
    assert _loaded_after("import plughost") == {"rooms": [], "heavy": []}
    assert _loaded_after("from plughost.api import principals") == {"rooms": ["ports", "util"], "heavy": []}
    # a name loads its own room only; the MCP server is one of them, and loads mcp only when used
    assert _loaded_after("from plughost import Tool, hookimpl, log")["heavy"] == []


def test_the_concrete_host_has_every_member_the_protocol_promises(make_host) -> None:
    """mypy checks the types (``_satisfies_the_plugin_api`` in plughost.runtime.host); this checks
    the members and the parameter names a plugin may pass by keyword."""
    host = make_host()
    members = [n for n in vars(PluginHost) if not n.startswith("_")]
    assert {"env", "home", "principal", "state", "store", "embedder", "memory_search", "call_tool", "collect",
            "first", "call_each", "has_implementations", "close"} <= set(members)
    for name in members:
        assert hasattr(host, name), name
        promised = getattr(PluginHost, name)
        if inspect.isfunction(promised):
            wanted = list(inspect.signature(promised).parameters)[1:]
            given = list(inspect.signature(getattr(ConcreteHost, name)).parameters)[1:]
            assert given == wanted, name


class _Rows:
    def __init__(self, rows):
        self.rows = rows

    @hookimpl
    def plughost_memory_search(self, query, principal, limit):
        return self.rows


def test_memory_search_returns_typed_rows_and_names_a_bad_field(make_host) -> None:
    host: Host = make_host(PLUGHOST_DISABLE_PLUGINS="memory")
    assert host.memory_search("q", host.principal) == []  # no plugin searches memory
    rows = [{"id": "a", "labels": ["Note"], "score": 2, "properties": {"text": "x"}},
            {"id": "b", "labels": ["Note"], "score": 1.0, "properties": {}}]
    with host.temporary_plugin(_Rows(rows), "rows"):
        hits = host.memory_search("q", host.principal, limit=1)
        assert hits == [MemoryHit("a", ("Note",), 2.0, {"text": "x"})]
        with pytest.raises(UserError, match="parameter 'principal'"):
            host.memory_search("q", "admin", limit=1)  # type: ignore[arg-type]
        with pytest.raises(UserError, match="parameter 'limit'"):
            host.memory_search("q", host.principal, limit=0)
    for bad, field in (({"id": "", "labels": [], "score": 1, "properties": {}}, "'id'"),
                       ({"id": "a", "labels": "Note", "score": 1, "properties": {}}, "'labels'"),
                       ({"id": "a", "labels": [], "score": True, "properties": {}}, "'score'"),
                       ({"id": "a", "labels": [], "score": 1, "properties": None}, "'properties'")):
        with host.temporary_plugin(_Rows([bad]), "bad"), pytest.raises(UserError, match=f"field {field}"):
            host.memory_search("q", host.principal)


class _Seen:
    """Records the principal the hook was called with."""

    def __init__(self):
        self.principals = []

    @hookimpl
    def plughost_memory_search(self, query, principal, limit):
        self.principals.append(principal)
        return []


def test_memory_search_never_runs_wider_than_the_host(make_host) -> None:
    """A plugin handing ``host.memory_search`` a wider principal than its process's gets the
    process's narrowing (scopes intersected, agent kept); another account's is one refusal line."""
    from plughost import Principal, Role

    host: Host = make_host(PLUGHOST_DISABLE_PLUGINS="memory", ACCOUNT_ID="acme", ALLOWED_SCOPES="public",
                           AGENT_SLUG="bot")
    seen = _Seen()
    with host.temporary_plugin(seen, "seen"):
        host.memory_search("q", Principal.owner("acme"))
        got = seen.principals[-1]
        assert (got.account, got.scopes, got.agent, got.is_admin) == ("acme", ("public",), "bot", False)
        assert got.role is Role.AGENT
        host.memory_search("q", Principal.owner("acme").visitor())
        assert seen.principals[-1].role is Role.PUBLIC and seen.principals[-1].scopes == ("public",)
        with pytest.raises(UserError, match=r"^memory_search: parameter 'principal': account 'other' is not this "
                                            r"process's account \(ACCOUNT_ID is 'acme'\)") as caught:
            host.memory_search("q", Principal.owner("other"))
        assert "\n" not in str(caught.value)
        with pytest.raises(UserError, match="^agent: 'spy' is not this process's agent"):
            host.memory_search("q", Principal.owner("acme").narrowed_to(agent="spy"))
    assert len(seen.principals) == 2  # the refused calls reached no plugin
