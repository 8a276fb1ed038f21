"""Recall tracking: which surfaced memory the replies used, and what that should do to ranking.

Surfacing records every item it shows per session (:mod:`plughost.plugins.memory.surfacing.sessions`).
The memory plugin's own Claude Code ``Stop`` hook reads the reply that just finished from the
transcript's tail (a regular file's last 2 MiB, :mod:`plughost.plugins.memory.transcript_tail`) and asks ``plughost_recall_used`` which of the session's surfaced items it used; the
built-in answer is :func:`used_items` (the id named, the title quoted, a run of six words from
the item repeated, or most of its distinctive words echoed). ``plughost memory recall`` then
lists *snooze candidates* (surfaced often, never used) and *pin candidates* (used often);
``recall pin|snooze|clear ID`` records the decision in ``<PLUGHOST_HOME>/surfacing/<account>/
recall.json``. With ``PLUGHOST_RECALL_RANKING=1`` (and the pipeline's ``PLUGHOST_GS_BOOSTS=1``)
pinned items rank higher (+25%) and snoozed ones a little lower (−10%), through
``plughost_retrieval_boosts``, and surfacing stops offering snoozed items unprompted. A snooze
means "stop showing me this", not "this is wrong": measured on the retrieval bench, a −50%
penalty cost fresh queries a fifth of their nDCG when every snooze candidate was accepted.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost import RetrievalBoost, log
from plughost.api import hooks
from plughost.plugins.memory.settings import RECALL_RANKING
from plughost.plugins.memory.surfacing import rules, sessions
from plughost.plugins.memory.transcript_tail import read_tail

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

PIN_BUMP = 0.25
SNOOZE_BUMP = -0.1
SHINGLE = 6
MIN_SURFACED = 3
MIN_USED = 2
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


# ---------------------------------------------------------------------------- what a reply used
def _norm_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text or "")]


def used_items(reply: str, items: Mapping[str, Mapping[str, str]], tool_text: str = "") -> list[str]:
    """The ids among ``items`` (``{id: {title, text}}``) that ``reply`` used, in ``items`` order."""
    reply_words = _norm_words(reply)
    joined = " " + " ".join(reply_words) + " "
    shingles = {" ".join(reply_words[i:i + SHINGLE]) for i in range(max(0, len(reply_words) - SHINGLE + 1))}
    vocabulary = set(reply_words)
    out = []
    for item_id, shown in items.items():
        if item_id in reply or (tool_text and item_id in tool_text):
            out.append(item_id)
            continue
        title = " ".join(_norm_words(shown.get("title", "")))
        if len(title) >= 8 and f" {title} " in joined:
            out.append(item_id)
            continue
        words = _norm_words(shown.get("text", ""))
        if any(" ".join(words[i:i + SHINGLE]) in shingles for i in range(max(0, len(words) - SHINGLE + 1))):
            out.append(item_id)
            continue
        distinctive = {w for w in words if len(w) >= 5 and w not in rules.STOPWORDS}
        if len(distinctive) >= 4 and len(distinctive & vocabulary) >= 0.6 * len(distinctive):
            out.append(item_id)
    return out


def last_reply(transcript: bytes) -> tuple[str, str]:
    """``(assistant text, tool-call text)`` after the transcript's last real user prompt."""
    reply: list[str] = []
    tools: list[str] = []
    for line in transcript.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict) or rec.get("isSidechain"):
            continue
        msg = rec.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (
            [b for b in content if isinstance(b, dict)] if isinstance(content, list) else [])
        if rec.get("type") == "user" and not rec.get("isMeta"):
            if any(b.get("type") == "text" and str(b.get("text", "")).strip() for b in blocks):
                reply, tools = [], []  # a new prompt: the reply starts after it
        elif rec.get("type") == "assistant":
            for b in blocks:
                if b.get("type") == "text" and isinstance(b.get("text"), str):
                    reply.append(b["text"])
                elif b.get("type") == "tool_use":
                    tools.append(json.dumps(b.get("input"), ensure_ascii=False, default=str))
    return "\n".join(reply), "\n".join(tools)


def mark(host: Host, account_id: str, session_id: str, transcript_path: str) -> dict[str, Any]:
    """The Stop hook's work: record which of the session's surfaced items the last reply used."""
    started = time.perf_counter()
    path = sessions.session_path(Path(host.home), account_id, session_id)
    state = sessions.load(path)
    pending = {i: state.shown.get(i, {}) for i in state.surfaced if i not in state.used}
    if not pending:
        return {"used": [], "candidates": 0, "reason": "nothing-surfaced"}
    raw, why = read_tail(transcript_path)  # a regular file's last 2 MiB only (the path came from stdin)
    if raw is None:
        log("recall", "op=skip", reason=why, session=session_id[:12])
        return {"used": [], "candidates": len(pending), "reason": why}
    reply, tools = last_reply(raw)
    if not reply.strip() and not tools:
        return {"used": [], "candidates": len(pending), "reason": "no-reply"}
    used = host.first(hooks.RECALL_USED, reply=reply, items=pending, tool_text=tools) or []
    used = [u for u in used if u in pending]
    sessions.append(path, {"used": used, "candidates": len(pending)})
    log("recall", "op=mark", session=session_id[:12], account=account_id[:8], candidates=len(pending),
        used=len(used), ms=f"{(time.perf_counter() - started) * 1000:.1f}")
    return {"used": used, "candidates": len(pending), "reason": "marked"}


# ---------------------------------------------------------------------------- the account's history
@dataclass
class ItemHistory:
    id: str
    title: str = ""
    surfaced: int = 0
    used: int = 0
    sessions: set[str] = field(default_factory=set)
    last_surfaced: float = 0.0

    def as_json(self, decisions: Mapping[str, str]) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "surfaced": self.surfaced, "used": self.used,
                "sessions": len(self.sessions), "lastSurfaced": round(self.last_surfaced, 3),
                "decision": decisions.get(self.id)}


def history(home: Path, account_id: str) -> dict[str, ItemHistory]:
    out: dict[str, ItemHistory] = {}
    for path in sessions.session_files(home, account_id):
        for rec in sessions.read_records(path):
            for item_id in rec.get("items") or []:
                if not isinstance(item_id, str):
                    continue
                h = out.setdefault(item_id, ItemHistory(item_id))
                h.surfaced += 1
                h.sessions.add(path.stem)
                h.last_surfaced = max(h.last_surfaced, float(rec.get("at") or 0))
                shown = (rec.get("shown") or {}).get(item_id) if isinstance(rec.get("shown"), dict) else None
                if isinstance(shown, dict) and shown.get("title"):
                    h.title = str(shown["title"])
            for item_id in rec.get("used") or []:
                if isinstance(item_id, str):
                    out.setdefault(item_id, ItemHistory(item_id)).used += 1
    return out


def visible_filter(store: Any, guards: Any) -> Callable[[Iterable[str]], set[str]] | None:
    """The ids among a batch that ``guards`` may read (None: an admin process reads them all)."""
    if not guards.narrowed:
        return None

    def visible(ids: Iterable[str]) -> set[str]:
        return {i for i in ids if store.get(i, guards=guards) is not None}

    return visible


def candidates(home: Path, account_id: str, *, min_surfaced: int = MIN_SURFACED, min_used: int = MIN_USED,
               limit: int = 20, visible: Callable[[Iterable[str]], set[str]] | None = None) -> dict[str, Any]:
    """Snooze candidates (surfaced ≥ ``min_surfaced``, never used) and pin candidates (used ≥ ``min_used``).

    ``visible`` (:func:`visible_filter`) keeps a narrowed process to the items it may read: the
    history files hold every session's items, admin ones included.
    """
    items = history(home, account_id)
    decisions = load_decisions(home, account_id)
    if visible is not None:
        keep = visible(set(items) | set(decisions))
        items = {k: v for k, v in items.items() if k in keep}
        decisions = {k: v for k, v in decisions.items() if k in keep}
    snooze = sorted((h for h in items.values() if h.surfaced >= min_surfaced and h.used == 0
                     and decisions.get(h.id) != "snoozed"), key=lambda h: (-h.surfaced, h.id))
    pin = sorted((h for h in items.values() if h.used >= min_used and decisions.get(h.id) != "pinned"),
                 key=lambda h: (-h.used, -h.surfaced, h.id))
    return {"snooze": [h.as_json(decisions) for h in snooze[:limit]],
            "pin": [h.as_json(decisions) for h in pin[:limit]],
            "pinned": sorted(k for k, v in decisions.items() if v == "pinned"),
            "snoozed": sorted(k for k, v in decisions.items() if v == "snoozed"),
            "surfacedItems": sum(h.surfaced > 0 for h in items.values())}


# ---------------------------------------------------------------------------- pins and snoozes
def decisions_path(home: Path, account_id: str) -> Path:
    return sessions.account_dir(home, account_id) / "recall.json"


def load_decisions(home: Path, account_id: str) -> dict[str, str]:
    try:
        data = json.loads(decisions_path(home, account_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and v in ("pinned", "snoozed")} \
        if isinstance(data, dict) else {}


def decide(home: Path, account_id: str, ids: Iterable[str], decision: str | None) -> dict[str, str]:
    """Pin, snooze or clear (None) items; written atomically."""
    current = load_decisions(home, account_id)
    for item_id in ids:
        if decision is None:
            current.pop(item_id, None)
        else:
            current[item_id] = decision
    path = decisions_path(home, account_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return current


_CACHE: dict[tuple[str, str], tuple[float, dict[str, str]]] = {}


def cached_decisions(home: Path, account_id: str) -> dict[str, str]:
    """The decisions file, re-read only when it changed (searches ask on every row)."""
    path = decisions_path(home, account_id)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return {}
    key = (str(home), account_id)
    hit = _CACHE.get(key)
    if hit is None or hit[0] != mtime:
        hit = (mtime, load_decisions(home, account_id))
        _CACHE[key] = hit
    return hit[1]


def ranking_enabled(env: Mapping[str, str]) -> bool:
    return RECALL_RANKING.read(env)


def boost(home: Path, account_id: str, enabled: bool = True) -> RetrievalBoost:
    """``recall``: +25% for a pinned item, −10% for a snoozed one, of ``account_id``."""
    def bump(row: Mapping[str, Any]) -> float:
        if not enabled:
            return 0.0
        decision = cached_decisions(home, account_id).get(str(row.get("id")))
        return PIN_BUMP if decision == "pinned" else SNOOZE_BUMP if decision == "snoozed" else 0.0

    return RetrievalBoost("recall", bump)
