"""One surfacing call: decide, search through ``plughost_surface_context``, drop repeats, fit the budget.

Shared by the warm loopback server and the cold in-process fallback, so both give the same
answer. The output is Claude Code's ``UserPromptSubmit`` hook shape
``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": ...}}``, or
None when there is nothing to add. Every call logs one ``[surface]`` line.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost import Guards, Principal, log
from plughost.api import hooks
from plughost.plugins.memory.settings import SURFACE_BUDGET, SURFACE_LIMIT
from plughost.plugins.memory.surfacing import rules, sessions
from plughost.plugins.memory.surfacing.limits import expected_range, setting

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

EVENT = "UserPromptSubmit"
ITEM_MAX_CHARS = 500
HEADER = "Relevant memory (surfaced by plughost for this prompt; ids work with memory-search):"


@dataclass(frozen=True)
class SurfaceRequest:
    session_id: str
    prompt: str
    account_id: str
    scopes: tuple[str, ...] | None = None
    agent: str | None = None
    role: str | None = None
    cwd: str | None = None
    budget: str | None = None  # the hook's PLUGHOST_SURFACE_BUDGET as set (None: unset there)
    limit: str | None = None  # the hook's PLUGHOST_SURFACE_LIMIT

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SurfaceRequest:
        """From the loopback wire shape; anything malformed is a ValueError naming the field."""
        def text(name: str, required: bool = False) -> str | None:
            value = data.get(name)
            if value is None and not required:
                return None
            if not isinstance(value, str):
                raise ValueError(f"{name}: expected a string")
            return value

        scopes = data.get("scopes")
        if scopes is not None and not (isinstance(scopes, list) and all(isinstance(s, str) for s in scopes)):
            raise ValueError("scopes: expected a list of strings or null")
        account = text("accountId", True) or ""
        if not account:
            raise ValueError("accountId: expected a non-empty string")
        setting = {k: data.get(k) for k in ("budget", "limit")}
        for k, v in setting.items():
            if v is not None and not isinstance(v, (str, int)) or isinstance(v, bool):
                raise ValueError(f"{k}: expected a string, an integer or null")
        return cls(session_id=text("sessionId") or "", prompt=text("prompt") or "", account_id=account,
                   scopes=tuple(scopes) if scopes is not None else None, agent=text("agent"),
                   role=text("role"), cwd=text("cwd"),
                   **{k: None if v is None else str(v) for k, v in setting.items()})

    def guards(self) -> Guards:
        scopes = self.scopes
        if self.role and self.role != "admin":  # a narrowed session sees public memory only
            scopes = tuple(s for s in (("public",) if scopes is None else scopes) if s == "public")
        return Principal.owner(self.account_id).narrowed_to(scopes=scopes, agent=self.agent).guards


@dataclass
class SurfaceResult:
    output: dict[str, Any] | None
    reason: str
    items: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


CONTENT_MIN_CHARS = 20
"""Shorter texts are not compared for content repeats (a one-word text is contained everywhere)."""


def content_key(text: str) -> str:
    """An item's text for the content no-repeat rule: lower case, whitespace folded, the first 400
    characters (what a session file keeps of each item shown); '' when too short to compare."""
    key = " ".join(text.lower().split())[:400]
    return key if len(key) >= CONTENT_MIN_CHARS else ""


def rank_follow_up(own: list[Any], folded: list[Any]) -> list[Any]:
    """A follow-up's finds: those both searches found (in its own order), its own, then the fold's."""
    def ident(item: Any) -> Any:
        return item.get("id") if isinstance(item, Mapping) else None

    folded_ids = {ident(i) for i in folded}
    own_ids = {ident(i) for i in own}
    return ([i for i in own if ident(i) in folded_ids] + [i for i in own if ident(i) not in folded_ids]
            + [i for i in folded if ident(i) not in own_ids])


def render(items: list[dict[str, Any]], budget: int) -> tuple[str, list[dict[str, Any]]]:
    """The context block and the items that fit ``budget`` characters (best first; a line that does
    not fit whole is shortened, never its id)."""
    lines = [HEADER]
    used = len(HEADER)
    kept: list[dict[str, Any]] = []
    for item in items:
        room = min(ITEM_MAX_CHARS, budget - used - 1)
        line = item_line(item, room)
        if line is None:
            continue
        lines.append(line)
        used += 1 + len(line)
        kept.append(item)
    return ("\n".join(lines), kept) if kept else ("", [])


def item_line(item: Mapping[str, Any], room: int = ITEM_MAX_CHARS) -> str | None:
    """``- [Label] Title: text (id: X, from path)`` in at most ``room`` characters, or None."""
    label = item.get("label") or "Node"
    title = " ".join(str(item.get("title") or "").split())
    text = " ".join(str(item.get("text") or "").split())
    source = item.get("source")
    head = f"- [{label}] {title}" if title else f"- [{label}]"
    body = f": {text}" if text and text != title else ""
    tail = f" (id: {item.get('id')}" + (f", from {source}" if source else "") + ")"
    if len(head) + len(tail) + 40 > room and len(head) + len(body) + len(tail) > room:
        return None
    line = head + body
    if len(line) + len(tail) > room:
        line = line[: room - len(tail) - 1] + "…"
    return line + tail


def settings(env: Mapping[str, str], request: SurfaceRequest | None = None) -> tuple[int, int]:
    """``(budget, limit)``: the hook's values when it sent them, else this process's; a bad value
    logs one ``[surface] op=error reason=bad-setting`` line and the default applies."""
    values = []
    for which, sent in ((SURFACE_BUDGET, None if request is None else request.budget),
                        (SURFACE_LIMIT, None if request is None else request.limit)):
        source = {which.name: sent} if sent is not None else env
        value, problem = setting(source, which)
        if problem is not None:
            log("surface", "op=error", reason="bad-setting", name=which.name, expected=expected_range(which),
                got=(which.raw(source) or "")[:40], using=which.default)
        values.append(value)
    return values[0], values[1]


def _log_fields(request: SurfaceRequest) -> dict[str, Any]:
    scopes = request.guards().allowed_scopes
    return {"session": request.session_id[:12] or None, "account": request.account_id[:8],
            "scopes": ",".join(scopes or ()) or ("admin" if scopes is None else "none")}


def _search(host: Host, request: SurfaceRequest, query: str, decision: rules.Decision, limit: int,
            exclude: list[str]) -> tuple[list[Any], str]:
    """What the search finds for the decision, and the base the session remembers: a follow-up's
    own topic first (found by both, then by it alone, then the fold's)."""
    def search(query: str) -> list[Any]:
        items = host.first(hooks.SURFACE_CONTEXT, query=query, guards=request.guards(), limit=limit,
                           exclude=exclude)
        return list(items or [])

    base = decision.base
    found = search(query)
    if decision.alone:
        own = search(decision.alone)
        if own:
            base = decision.alone
            found = rank_follow_up(own, found)
    return found, base


def _fresh(found: list[Any], state: sessions.SessionState) -> list[dict[str, Any]]:
    """The items not shown in this session yet, by id or by the same words under another id."""
    seen = state.surfaced_set
    texts = [t for t in (content_key(v.get("text", "")) for v in state.shown.values()) if t]
    fresh = []
    for item in found:
        if not (isinstance(item, Mapping) and isinstance(item.get("id"), str)) or item["id"] in seen:
            continue
        key = content_key(str(item.get("text") or ""))
        if key and any(key in t or t in key for t in texts):
            continue  # the same words under another id (a Document's Section): shown already
        seen.add(item["id"])
        if key:
            texts.append(key)
        fresh.append(dict(item))
    return fresh


def surface(host: Host, request: SurfaceRequest) -> SurfaceResult:
    """The whole call. Raises nothing the hook would have to handle except a host that cannot load."""
    started = time.perf_counter()
    budget, limit = settings(host.env, request)
    home = Path(host.home)
    path = sessions.session_path(home, request.account_id, request.session_id) if request.session_id else None
    state = sessions.load(path) if path else sessions.SessionState()
    decision = rules.decide(request.prompt, state.previous)
    fields = _log_fields(request)
    if decision.query is None:
        result = SurfaceResult(None, decision.reason, stats={"ms": (time.perf_counter() - started) * 1000})
        log("surface", "op=skip", reason=decision.reason, **fields, ms=f"{result.stats['ms']:.1f}")
        return result
    t = time.perf_counter()
    try:
        found, base = _search(host, request, decision.query, decision, limit, sorted(state.surfaced_set))
    except Exception as exc:
        ms = (time.perf_counter() - started) * 1000
        log("surface", "op=error", reason="search-failed", **fields,
            detail=f"{type(exc).__name__}: {exc}"[:120], ms=f"{ms:.1f}")
        return SurfaceResult(None, "search-failed", stats={"ms": ms})
    search_ms = (time.perf_counter() - t) * 1000
    fresh = _fresh(found, state)
    repeats = len(found) - len(fresh)
    text, kept = render(fresh[:limit], budget)
    if path is not None and (kept or base):
        sessions.append(path, {"query": decision.query, "base": base, "folded": decision.folded,
                               "items": [i["id"] for i in kept],
                               "shown": {i["id"]: {"title": str(i.get("title") or "")[:200],
                                                   "text": str(i.get("text") or "")[:400]} for i in kept}})
    ms = (time.perf_counter() - started) * 1000
    log("surface", "op=surfaced" if kept else "op=empty", reason=decision.reason, **fields,
        found=len(found), repeats=repeats, items=len(kept), chars=len(text), budget=budget,
        folded=decision.folded, searchMs=f"{search_ms:.1f}", ms=f"{ms:.1f}")
    output = {"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": text}} if kept else None
    return SurfaceResult(output, decision.reason, kept, {"ms": ms, "searchMs": search_ms, "repeats": repeats})
