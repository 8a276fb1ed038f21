"""The tool-call audit trail: one durable ``ToolCall`` node per tool call of an admin session.

Written from Claude Code's ``PostToolUse`` / ``PostToolUseFailure`` hook (``hooks/hooks.json`` →
``surfacing/client.py`` → ``plughost serve``'s loopback listener, or the host in process when
no server listens), so native tools (Bash, Read ...) count as well as plughost's own. The shape:

    (:Conversation {id, sessionId, ...}) -[:HAS_TOOL_CALL]-> (:ToolCall {toolName, pluginName,
        input, output, inputTruncated, outputTruncated, isError, startedAt, completedAt,
        sessionId, conversationId, toolUseId, source, scope: admin})

Before anything is stored or logged the input and the output pass :func:`plughost.util.redact.redact_value`
(with the tool's input schema, whose ``secret: true`` / ``writeOnly: true`` / ``format: password``
keys go too): secrets become ``[redacted]`` (docs/redaction.md). ``input`` and ``output`` are JSON text cut to a budget (``PLUGHOST_AUDIT_INPUT_CHARS``,
``PLUGHOST_AUDIT_OUTPUT_CHARS``, 4,000 characters each by default) with a ``…[+N chars]`` tail.
Public (non-admin or narrowed) sessions are never recorded. One line per call:
``[persist] tool-call persisted tool=.. conversation=<8>`` (or ``tool-call skipped reason=..``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from plughost import Guards, Principal, Role, Tool, UserError, WriteDenied, log
from plughost.api.settings import GRAPH_READ_ONLY
from plughost.api.store import CONVERSATION_LABEL, guarded_upsert_many, require_admin, session_conversation
from plughost.api.util import (  # noqa: F401
    REDACTED,  # noqa: F401
    parse_time,
    read_time,
    redact_text,
    redact_value,
    schema_secret_keys,
)
from plughost.plugins.memory.settings import AUDIT_INPUT_CHARS, AUDIT_MCP, AUDIT_OUTPUT_CHARS
from plughost.plugins.memory.transcript_tail import read_tail

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

TOOL_CALL_LABEL = "ToolCall"
HAS_TOOL_CALL = "HAS_TOOL_CALL"
INPUT_BUDGET = AUDIT_INPUT_CHARS.default
"""``PLUGHOST_AUDIT_INPUT_CHARS``: characters of a ToolCall's ``input`` JSON kept."""
OUTPUT_BUDGET = AUDIT_OUTPUT_CHARS.default
"""``PLUGHOST_AUDIT_OUTPUT_CHARS``: characters of a ToolCall's ``output`` kept."""
MAX_LIST = 100


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# redaction: host/util/redact.py, the one implementation (these names stay for callers) ------------
redact = redact_value
secret_keys = schema_secret_keys


REDACT_MARGIN = 2000
"""Characters past the budget that a long text's redaction still reads (:func:`clean_clip`)."""


def clean_clip(value: Any, budget: int) -> tuple[str, bool]:
    """``value`` redacted and cut to ``budget`` (:func:`clip`). A text far over the budget is cut to
    the budget plus :data:`REDACT_MARGIN` before it is redacted, so a search result's 8,000
    characters cost the redaction of the 6,000 kept and read; a secret that starts before the cut
    is still read whole (a key block runs to the cut and is redacted to it)."""
    if isinstance(value, str) and len(value) > budget + REDACT_MARGIN:
        head = redact_value(value[:budget + REDACT_MARGIN])
        return f"{head[:budget]}…[+{len(value) - budget} chars]", True
    clean = redact_value(value)
    return clip(clean if clean is not None else "", budget)


def clip(value: Any, budget: int) -> tuple[str, bool]:
    """JSON text (a string stays itself) cut to ``budget`` characters, and whether it was cut."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= budget:
        return text, False
    return f"{text[:budget]}…[+{len(text) - budget} chars]", True


# the tool's identity and schema --------------------------------------------------------------
def identify(host: Host, tool_name: str) -> tuple[str | None, str, dict[str, Any] | None]:
    """``(pluginName, tool, inputSchema)``: ``mcp__<server>__<tool>`` names a plughost plugin when its
    server segment ends with a loaded plugin's name; native tools have no plugin."""
    if not tool_name.startswith("mcp__"):
        return None, tool_name, None
    parts = tool_name.split("__", 2)
    server, tool = (parts[1], parts[2]) if len(parts) == 3 else ("", tool_name)
    for name, record in getattr(host, "records", {}).items():
        if not getattr(record, "loaded", False) or not (server == name or server.endswith(f"_{name}")):
            continue
        try:
            for declared in host.surface.tools_of(name):  # the surface holds every loaded plugin's declarations
                if declared.name == tool:
                    return name, tool, dict(declared.input_schema or {})
        except Exception:  # noqa: BLE001 - an unreadable declaration only loses the schema hints
            pass
        return name, tool, None
    return server or None, tool, None


def _response_error(response: Any) -> bool:
    if isinstance(response, Mapping):
        if response.get("is_error") is True or response.get("isError") is True or response.get("success") is False:
            return True
        return bool(response.get("error")) and not response.get("stdout")
    return False


def _tool_use_time(transcript: str | None, tool_use_id: str | None) -> str | None:
    """The timestamp of the assistant record that asked for ``tool_use_id`` (the transcript's tail)."""
    if not transcript or not tool_use_id:
        return None
    tail = read_tail(transcript, 512 << 10)[0]  # a regular file's end only (the path came from stdin)
    if tail is None:
        return None
    needle = tool_use_id.encode()
    for line in reversed(tail.splitlines()):
        if needle in line:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("type") == "assistant" and isinstance(rec.get("timestamp"), str):
                return rec["timestamp"]
    return None


# recording -------------------------------------------------------------------------------------
def recordable(role: str | None, scopes: Any, agent: str | None) -> str | None:
    """None when the session is an admin one, else the skip reason (public sessions are never recorded)."""
    if role is not None and role != "admin":
        return "not-admin"
    if scopes is not None or agent:
        return "narrowed"
    return None


def record(host: Host, *, account_id: str, session_id: str, tool_name: str, tool_input: Any, tool_response: Any,
           role: str | None = None, scopes: Any = None, agent: str | None = None, is_error: bool | None = None,
           tool_use_id: str | None = None, started_at: str | None = None, completed_at: str | None = None,
           transcript_path: str | None = None, runner_session: str | None = None,
           source: str = "claude-code") -> dict[str, Any]:
    """Store one ToolCall (idempotent per tool-use id) and link it to its Conversation."""
    prepared = prepare(host, account_id=account_id, session_id=session_id, tool_name=tool_name,
                       tool_input=tool_input, tool_response=tool_response, role=role, scopes=scopes, agent=agent,
                       is_error=is_error, tool_use_id=tool_use_id, started_at=started_at,
                       completed_at=completed_at, transcript_path=transcript_path,
                       runner_session=runner_session, source=source)
    if isinstance(prepared, dict):
        return prepared
    guarded_upsert_many(host.store(), prepared.rows, guards=prepared.guards)
    prepared.logged()
    return prepared.result


class Prepared:
    """One ToolCall ready to write: its rows (the ToolCall, its Conversation's link), its guards,
    and the ``[persist]`` line to log once they are stored."""

    def __init__(self, rows: list[dict[str, Any]], guards: Guards, result: dict[str, Any],
                 line: dict[str, Any]) -> None:
        self.rows, self.guards, self.result, self.line = rows, guards, result, line

    def logged(self) -> None:
        log("persist", "tool-call", "persisted", **self.line)


def prepare(host: Host, *, account_id: str, session_id: str, tool_name: str, tool_input: Any, tool_response: Any,
            role: str | None = None, scopes: Any = None, agent: str | None = None, is_error: bool | None = None,
            tool_use_id: str | None = None, started_at: str | None = None, completed_at: str | None = None,
            transcript_path: str | None = None, runner_session: str | None = None,
            source: str = "claude-code") -> Prepared | dict[str, Any]:
    """The rows :func:`record` writes (redacted, clipped, their Conversation found), or the skip result."""
    reason = recordable(role, scopes, agent)
    if reason is None and not (session_id and tool_name):
        reason = "no-session-or-tool"
    if reason is not None:
        log("persist", "tool-call", "skipped", reason=reason, tool=tool_name[:80] or None)
        return {"recorded": False, "reason": reason}
    plugin, _, schema = identify(host, tool_name)
    clean_input = redact_value(tool_input, schema)
    input_text, input_cut = clip(clean_input, AUDIT_INPUT_CHARS.read(host.env))
    output_text, output_cut = clean_clip(tool_response, AUDIT_OUTPUT_CHARS.read(host.env))
    completed = completed_at or _now_iso()
    started = started_at or _tool_use_time(transcript_path, tool_use_id) or completed
    error = _response_error(tool_response) if is_error is None else bool(is_error)
    guards = Principal.owner(account_id).guards
    conversation, created = session_conversation(host.store(), guards,  # recorded for admins alone
                                                 [s for s in (session_id, runner_session) if s], by_id=True)
    key = tool_use_id or f"{tool_name}\x1f{started}\x1f{input_text}"
    node_id = "toolcall-" + hashlib.sha256("\x1f".join((account_id, session_id, key)).encode()).hexdigest()[:32]
    props = {"toolName": tool_name, "pluginName": plugin, "input": input_text, "output": output_text,
             "inputTruncated": input_cut, "outputTruncated": output_cut, "isError": error, "startedAt": started,
             "completedAt": completed, "sessionId": session_id, "conversationId": conversation,
             "toolUseId": tool_use_id, "source": source, "scope": "admin"}
    conv_props: dict[str, Any] = {"lastToolCallAt": completed}
    if created:
        conv_props.update(sessionId=session_id, startedAt=started, scope="admin", channel=source,
                          title=f"{source} session {session_id[:8]}")
    rows: list[dict[str, Any]] = [{"id": node_id, "labels": [TOOL_CALL_LABEL], "properties": {k: v for k, v in props.items() if v is not None}},
            {"id": conversation, "labels": [CONVERSATION_LABEL], "properties": conv_props,
             "edges": [{"type": HAS_TOOL_CALL, "to": node_id}]}]
    line = {"tool": tool_name[:80], "plugin": plugin, "conversation": conversation[:8], "isError": error,
            "inputTruncated": input_cut, "outputTruncated": output_cut}
    return Prepared(rows, guards, {"recorded": True, "id": node_id, "conversationId": conversation}, line)


def _audit_role(principal: Any) -> str | None:
    """The role :func:`recordable` judges: None for the owner, ``admin`` for an admin's session,
    the role's name for a confined one (never recorded: the audit is an admin's record)."""
    if principal.role in (Role.OWNER, Role.OPERATOR, Role.ADMIN_SESSION):
        return "admin" if principal.role is Role.ADMIN_SESSION else None
    return principal.role.value if principal.role in (Role.PUBLIC, Role.SESSION) else None


def served_call(host: Host, *, plugin: str, tool: str, arguments: dict[str, Any], result: str,
                is_error: bool, started_at: str, completed_at: str) -> dict[str, Any] | None:
    """``plughost_tool_called``: the :func:`record` arguments of a plughost MCP call outside Claude
    Code, or None when this process records nothing (Claude Code's PostToolUse hook records the
    calls it makes, so a process it started, ``CLAUDECODE`` set, records nothing here). The hook
    queues them for plugins/memory/toolcalls/writer.py; the checks below are made at call time.

    The session is the process's (``SESSION_ID`` / ``PLUGHOST_SESSION_ID``), else one
    conversation per day, ``mcp-<plugin>-<YYYY-MM-DD>``, so an auditor finds a day's calls together.
    ``PLUGHOST_AUDIT_MCP=0`` turns it off, and a reader (``PLUGHOST_GRAPH_READ_ONLY=1``, e.g. on
    a read-only database user) writes nothing.
    """
    env = host.env
    if (env.get("CLAUDECODE") or "").strip() or not AUDIT_MCP.read(env):
        return None
    principal = host.principal
    account = principal.account
    if not account:
        return None
    if GRAPH_READ_ONLY.read(env):
        log("persist", "tool-call", "skipped", reason="read-only", tool=f"mcp__{plugin}__{tool}")
        return None

    role = _audit_role(principal)
    session = principal.session_key or f"mcp-{plugin}-{completed_at[:10]}"
    return dict(account_id=account, session_id=session, tool_name=f"mcp__{plugin}__{tool}", tool_input=arguments,
                tool_response=result, role=role,
                scopes=list(principal.scopes) if principal.scopes is not None else None, agent=principal.agent,
                is_error=is_error, started_at=started_at, completed_at=completed_at, source="mcp")


# the listing tool ------------------------------------------------------------------------------
def list_calls(host: Host, *, session: str | None = None, tool: str | None = None, since: str | None = None,
               errorsOnly: bool = False, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:  # noqa: N803
    """``tool-calls``: newest first, filtered, paginated by an opaque offset cursor."""
    try:
        require_admin(host.principal, "tool-calls")
    except WriteDenied as exc:
        raise UserError(str(exc)) from None
    guards = host.principal.guards
    if since is not None:
        since_dt = parse_time(since, "since")
    try:
        offset = int(cursor or 0)
        if offset < 0:
            raise ValueError
    except ValueError:
        raise UserError("cursor: expected the nextCursor of a previous call") from None
    limit = max(1, min(int(limit), MAX_LIST))
    where: dict[str, Any] = {}
    if session:
        where["sessionId"] = session
    if tool:
        where["toolName"] = tool
    if errorsOnly:
        where["isError"] = True
    nodes = host.store().find(guards=guards, labels=[TOOL_CALL_LABEL], where=where, order_by="completedAt",
                              descending=True, limit=limit + 1, offset=offset)
    calls = []
    more = len(nodes) > limit
    for node in nodes[:limit]:
        p = node.properties
        if since is not None:
            done = read_time(p.get("completedAt"))
            if done is None:
                continue
            if done < since_dt:
                more = False
                break
        calls.append({"id": node.id, **{k: p.get(k) for k in (
            "toolName", "pluginName", "isError", "startedAt", "completedAt", "sessionId", "conversationId",
            "input", "output", "inputTruncated", "outputTruncated")}})
    log("persist", "tool-call", "listed", count=len(calls), account=guards.account_id[:8])
    return {"calls": calls, "nextCursor": str(offset + limit) if more else None}


def audit_tools(host: Host) -> list[Tool]:
    def tool_calls(**args: Any) -> Any:
        return list_calls(host, **args)

    return [Tool("tool-calls", tool_calls)]
