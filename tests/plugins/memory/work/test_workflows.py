"""Workflows with step records through a real ``plughost mcp serve memory`` over stdio:
``workflow-execute`` runs its declared steps in order, stores a Workflow run node with one StepResult
per step (inputs redacted), stops at a failing step; ``workflow-read`` reads the results back; a
bad declaration runs nothing; a visitor's, an agent's or a scoped process and another account are
refused. The store is the oracle."""

from __future__ import annotations

import json
from pathlib import Path

from audit_support import ACCOUNT, PLANTED

from plughost.ports.graph import Guards
from tests.plugins.memory.work.test_task_provenance import session as _session
from tests.plugins.memory.work.test_task_provenance import store

OTHER = "acct-other-01"


def session(home: Path, script: list, **env: str) -> list[tuple[bool, str]]:
    """The memory server over stdio as ``ACCOUNT`` (or the ``ACCOUNT_ID`` given)."""
    from tests.plugins.memory.work import test_task_provenance as provenance

    account = env.pop("ACCOUNT_ID", None)
    if account is None:
        return _session(home, script, **env)
    saved, provenance.ACCOUNT = provenance.ACCOUNT, account
    try:
        return _session(home, script, **env)
    finally:
        provenance.ACCOUNT = saved


def setup(home: Path) -> None:
    from plughost.runtime.accounts import create_account

    create_account(ACCOUNT, home)
    create_account(OTHER, home)


def test_a_workflow_runs_its_steps_and_stores_a_run_with_step_results(plughost_home: Path) -> None:
    setup(plughost_home)
    steps = [
        {"tool": "memory-write", "name": "note the delivery",
         "arguments": {"labels": ["Note"], "properties": {"title": "Flour delivery", "supplierToken": PLANTED}}},
        {"tool": "mcp__plugin_memory_memory__memory-search", "arguments": {"query": "flour delivery"}},
    ]
    out = session(plughost_home, [
        ("workflow-execute", {"name": "weekly-stock-check", "steps": steps}),
        ("workflow-read", lambda out: {"workflowId": json.loads(out[0][1])["workflowId"]}),
        ("workflow-read", {}),
        ("workflow-execute", {"name": "broken", "steps": [
            {"tool": "memory-search", "arguments": {"query": "   "}},  # valid by the schema, refused when run
            {"tool": "memory-write", "arguments": {"labels": ["Note"], "properties": {"title": "never"}}}]}),
    ])
    assert [err for err, _ in out] == [False, False, False, False], out
    ran = json.loads(out[0][1])
    assert ran["status"] == "completed" and [s["name"] for s in ran["steps"]] == ["note the delivery", "memory-search"]
    assert "Flour delivery" in json.dumps(ran["steps"][1]["output"])  # the second step saw the first's write
    got = json.loads(out[1][1])
    assert got["workflow"]["name"] == "weekly-stock-check" and got["workflow"]["status"] == "completed"
    assert [s["toolName"] for s in got["steps"]] == ["mcp__plugin_memory_memory__memory-write",
                                                     "mcp__plugin_memory_memory__memory-search"]
    assert PLANTED not in json.dumps(got) and "[redacted]" in got["steps"][0]["input"]
    assert [w["name"] for w in json.loads(out[2][1])["workflows"]] == ["weekly-stock-check"]
    broken = json.loads(out[3][1])
    assert broken["status"] == "failed" and broken["failedStep"] == 0 and len(broken["steps"]) == 1
    assert "query" in broken["steps"][0]["output"]

    db = store(plughost_home)
    guards = Guards(ACCOUNT)
    runs = {n.properties["name"]: n for n in db.find(guards=guards, labels=["Workflow"], limit=10)}
    assert set(runs) == {"weekly-stock-check", "broken"}
    results = db.find(guards=guards, labels=["StepResult"], limit=10)
    assert len(results) == 3 and all(r.properties["scope"] == "admin" for r in results)
    edges = db.expand([runs["weekly-stock-check"].id], guards=guards)[runs["weekly-stock-check"].id]
    assert sorted(e.node.properties["index"] for e in edges if e.type == "HAS_STEP") == [0, 1]
    assert not db.find(guards=guards, labels=["Note"], where={"title": "never"}, limit=1)  # stopped at the failure
    assert PLANTED not in json.dumps([r.properties for r in results])


def test_a_bad_declaration_runs_nothing(plughost_home: Path) -> None:
    setup(plughost_home)
    out = session(plughost_home, [
        ("workflow-execute", {"name": "w", "steps": [
            {"tool": "memory-write", "arguments": {"labels": ["Note"], "properties": {"title": "first"}}},
            {"tool": "no-such-tool"}]}),
        ("workflow-execute", {"name": "w", "steps": [{"tool": "workflow-execute", "arguments": {}}]}),
        ("workflow-execute", {"name": "w", "steps": []}),
        ("workflow-execute", {"name": "w", "steps": [  # arguments are checked against each tool's schema up front
            {"tool": "memory-write", "arguments": {"labels": ["Note"], "properties": {"title": "first"}}},
            {"tool": "memory-write", "arguments": {"bogus": 1}}]}),
        ("workflow-execute", {"name": "w", "steps": [
            {"tool": "memory-write", "arguments": {"labels": ["Note"], "properties": {"title": "first"}}},
            {"tool": "memory-search", "arguments": {"query": 7}}]}),
    ])
    assert [err for err, _ in out] == [True, True, True, True, True], out
    assert out[3][1].startswith("steps[1].arguments: memory-write: parameter 'bogus' is not accepted"), out[3][1]
    assert out[4][1].startswith("steps[1].arguments: memory-search: parameter 'query': expected string"), out[4][1]
    assert out[0][1].startswith("steps[1].tool: 'no-such-tool' is not a tool a workflow may run; expected one of ")
    assert out[1][1].startswith("steps[0].tool: 'workflow-execute' is not a tool a workflow may run")
    assert "steps" in out[2][1]
    db = store(plughost_home)
    assert not db.find(guards=Guards(ACCOUNT), labels=["Note"], limit=1)
    assert not db.find(guards=Guards(ACCOUNT), labels=["Workflow"], limit=1)


def test_every_other_role_is_refused(plughost_home: Path) -> None:
    setup(plughost_home)
    [(err, text)] = session(plughost_home, [("workflow-execute", {"name": "mine", "steps": [
        {"tool": "memory-search", "arguments": {"query": "x"}}]})])
    assert not err
    run = json.loads(text)["workflowId"]
    script = [("workflow-execute", {"name": "w", "steps": [{"tool": "memory-search", "arguments": {"query": "x"}}]}),
              ("workflow-read", {"workflowId": run}), ("workflow-read", {})]
    for env in ({"PLUGHOST_SESSION_ROLE": "public", "ALLOWED_SCOPES": "public", "SESSION_ID": "visitor-1"},  # a visitor
                {"AGENT_SLUG": "baker"},  # an agent's session
                {"ALLOWED_SCOPES": "public"}):  # a scoped one
        out = session(plughost_home, script, **env)
        assert all(err for err, _ in out), (env, out)
        assert all("admin only" in said for _, said in out), (env, out)
    other = session(plughost_home, script[1:2], ACCOUNT_ID=OTHER)  # another account: no such run there
    assert other[0][0] and other[0][1].startswith("workflowId: no workflow run")
    assert len(store(plughost_home).find(guards=Guards(ACCOUNT), labels=["Workflow"], limit=10)) == 1
