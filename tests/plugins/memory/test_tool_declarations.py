"""The memory tools are declared once, in PLUGIN.md: every schema names exactly the parameters of
the service method its handler passes the arguments to (the handlers take ``**args``, so the
host's signature check cannot see through them), with the same required ones and types."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from plughost.plugins.memory.conversations.service import Conversations
from plughost.plugins.memory.sessions.compaction import FIELDS, session_compact
from plughost.plugins.memory.toolcalls.trail import list_calls
from plughost.plugins.memory.work.preferences import Preferences
from plughost.plugins.memory.work.reports import Reports
from plughost.plugins.memory.work.tasks import Tasks
from plughost.plugins.memory.work.workflows import execute, read
from plughost.plugins.memory.work.worktime import WorkTime
from plughost.plugins.memory.writes.tools import reindex_op
from plughost.plugins.memory.writes.writer import MemoryWriter
from plughost.runtime.manifest import load_manifest
from plughost.runtime.tooltable import _type_mismatch

MANIFEST = load_manifest(Path(__file__).resolve().parents[3] / "plugins" / "memory" / "PLUGIN.md")
DECLS = {t.name: t for t in MANIFEST.tools}
SERVICES = {
    "memory-write": MemoryWriter.write, "memory-update": MemoryWriter.update, "memory-delete": MemoryWriter.delete,
    "memory-restore": MemoryWriter.restore, "memory-ingest": MemoryWriter.ingest, "memory-reindex": reindex_op,
    "memory-report-write": Reports.write, "memory-report-read-latest": Reports.read_latest,
    "memory-report-list": Reports.list, "profile-update": Preferences.update, "profile-read": Preferences.read,
    "conversation-search": Conversations.search, "conversation-append": Conversations.append,
    "tool-calls": list_calls, "work-create": Tasks.create, "work-update": Tasks.update,
    "work-complete": Tasks.complete, "session-compact": session_compact,
    "work-time-start": WorkTime.start, "work-time-stop": WorkTime.stop, "work-time-adjust": WorkTime.adjust,
    "workflow-execute": execute, "workflow-read": read,
}
BOUND = ("self", "call", "host")  # what the handler passes itself


def test_every_declared_tool_has_its_service_here() -> None:
    assert sorted(DECLS) == sorted([*SERVICES, "memory-search"])  # memory-search's handler is typed: host-checked


@pytest.mark.parametrize("tool", sorted(SERVICES))
def test_a_tool_schema_names_its_services_parameters(tool: str) -> None:
    decl, fn = DECLS[tool], SERVICES[tool]
    assert decl.input_schema is not None and decl.description and decl.description != tool
    params = {n: p for n, p in inspect.signature(fn).parameters.items()
              if n not in BOUND and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    briefing = FIELDS if tool == "session-compact" else ()  # its **briefing keys
    assert set(decl.input_schema["properties"]) == {*params, *briefing}
    assert set(decl.input_schema.get("required", ())) == {n for n, p in params.items() if p.default is p.empty}
    assert _type_mismatch(decl.input_schema, fn) is None
