"""An owner's agent sessions (the ``plughost_owner_sessions`` hook; docs/console.md#sessions).

A session is one of the user's admin conversations (``admin_chat``: number ``n``, sender
``<userId>~<n>``, one deterministic agent session each). What the admin chat does not keep is
kept in ``<home>/accounts/<id>/admin-sessions.json``::

    {"users": {"<userId>": {"current": n, "defaults": {"permissionMode", "model"},
                            "sessions": {"<n>": {"startedAt", "status", "endedAt"?, "purgedAt"?,
                                                 "permissionMode"?, "model"?}}}},
     "bySession": {"<agent session id>": {"permissionMode"?, "model"?}}}

- **start**: a new conversation with the first message, through the gateway like any admin turn
  (persisted first, then the agent). The permission mode and model are the request's, else the
  user's last ones (a start records them as the user's defaults), else the runner's own (``dontAsk``
  and the CLI's model). They are fixed at the session's birth: the claude runner reads them from
  ``bySession`` on every turn of that session.
- **stop**: the session is ended: no more turns go to it (the admin chat starts a new conversation
  instead of continuing it); a turn already running finishes and its reply is stored.
- **resume**: an ended (or older) session becomes the user's current one again.
- **purge**: an ended session's agent transcript (``<config>/projects/*/<id>.jsonl`` and its side
  folder) and the runner's record of it are deleted; the conversation's Messages stay in the
  graph (``plughost erase --conversation`` removes those). An open session is refused: stop it first.

Lines: ``[owner-sessions] op=start|stop|resume|purge user=.. conversation=N session=<8> ..``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from plughost import Host, Principal, UserError, log
from plughost.api.payload import config_dir_source
from plughost.api.store import MESSAGE_LABEL
from plughost.plugins.channels import admin_chat
from plughost.plugins.channels.pipeline import Inbound, NotConfigured, gateway
from plughost.plugins.channels.pipeline import conversation_id as conversation_id_of
from plughost.plugins.channels.runner import agent_session_for
from plughost.plugins.channels.session_levers import current_of, load, lock, now_iso, save, user_entry
from plughost.plugins.channels.wire import JSONObject


class SessionManager:
    """The channels plugin's answer to ``plughost_owner_sessions``."""

    def __init__(self, host: Host) -> None:
        self.host = host

    # ------------------------------------------------------------------ reads
    def _count(self, account: str, user: str) -> int:
        try:
            data = json.loads((self.host.home / "accounts" / account / admin_chat.CONVERSATIONS_FILE)
                              .read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0
        stored = data.get(user) if isinstance(data, dict) else None
        return stored if isinstance(stored, int) and not isinstance(stored, bool) and 0 < stored < 1_000_000 else 0

    def _transcripts(self, session_id: str) -> list[Path]:
        config, _source = config_dir_source(self.host.env)
        projects = config / "projects"
        if not projects.is_dir():
            return []
        return [p for p in projects.glob(f"*/{session_id}.jsonl")] + \
            [p for p in projects.glob(f"*/{session_id}") if p.is_dir()]

    def _view(self, account: str, user: str, number: int, data: JSONObject, current: int) -> dict[str, object]:
        sender = f"{user}~{number}"
        conv = conversation_id_of(self.host, account, admin_chat.CHANNEL, sender)
        sid = agent_session_for(account, f"{admin_chat.CHANNEL}:{sender}", "admin")
        record = user_entry(data, user)["sessions"].get(str(number))
        record = record if isinstance(record, dict) else {}
        rows = self.host.store().find(guards=Principal.owner(account).guards, labels=[MESSAGE_LABEL],
                                      where={"conversationId": conv, "channel": admin_chat.CHANNEL}, limit=10_000)
        stamps = sorted(str(n.properties.get("receivedAt") or n.properties.get("createdAt") or "") for n in rows)
        status = "ended" if record.get("status") == "ended" else "current" if number == current else "open"
        return {"conversation": number, "conversationId": conv, "sessionId": sid, "status": status,
                "startedAt": record.get("startedAt") or (stamps[0] if stamps else None),
                "lastAt": stamps[-1] if stamps else None, "messages": len(rows),
                "permissionMode": record.get("permissionMode"), "model": record.get("model"),
                "endedAt": record.get("endedAt"), "purgedAt": record.get("purgedAt"),
                "transcript": bool(self._transcripts(sid))}

    def list(self, principal: Principal, user: str) -> list[dict[str, object]]:
        account = principal.account_id
        count = self._count(account, user)
        data = load(self.host.home, account)
        current, _ended = current_of(self.host.home, account, user, count)
        return [self._view(account, user, n, data, current) for n in range(count, 0, -1)]

    def _one(self, principal: Principal, user: str, number: int) -> tuple[str, int] | None:
        account = principal.account_id
        count = self._count(account, user)
        return (account, count) if 0 < number <= count else None

    # ------------------------------------------------------------------ changes
    async def start(self, principal: Principal, user: str, text: str, *, permission_mode: str | None,
                    model: str | None) -> dict[str, object]:
        account = principal.account_id
        home = self.host.home
        with lock:
            data = load(home, account)
            entry = user_entry(data, user)
            found = entry.get("defaults")
            defaults: dict[str, str] = found if isinstance(found, dict) else {}
            mode = permission_mode or defaults.get("permissionMode")
            chosen = model or defaults.get("model")
            number = admin_chat.conversation(home, account, user, new=True)
            sender = f"{user}~{number}"
            sid = agent_session_for(account, f"{admin_chat.CHANNEL}:{sender}", "admin")
            levers = {k: v for k, v in (("permissionMode", mode), ("model", chosen)) if isinstance(v, str) and v}
            entry["sessions"][str(number)] = {"startedAt": now_iso(), "status": "open", **levers}
            entry["current"] = number
            entry["defaults"] = {**defaults, **{k: v for k, v in (("permissionMode", permission_mode),
                                                                   ("model", model)) if v}}
            data["bySession"][sid] = levers
            save(home, account, data)
        msg = Inbound(channel=admin_chat.CHANNEL, sender=sender, text=text, platform_id=f"{sender}:{time.time_ns()}",
                      target={"sender": sender})
        try:
            mid, duplicate, _task = await gateway(self.host).accept(msg)
        except NotConfigured as exc:
            raise UserError(f"channels: {exc}") from None
        log("owner-sessions", "op=start", user=user, conversation=number, session=sid[:8],
            permissionMode=levers.get("permissionMode"), model=levers.get("model"), initialMessageBytes=len(text.encode()))
        view = self._view(account, user, number, load(home, account), number)
        return {**view, "messageId": mid, "duplicate": duplicate}

    def _change(self, principal: Principal, user: str, number: int, op: str) -> dict[str, object] | None:
        found = self._one(principal, user, number)
        if found is None:
            return None
        account, count = found
        home = self.host.home
        sid = agent_session_for(account, f"{admin_chat.CHANNEL}:{user}~{number}", "admin")
        with lock:
            data = load(home, account)
            entry = user_entry(data, user)
            record = entry["sessions"].setdefault(str(number), {})
            current, _ended = current_of(home, account, user, count)
            extra: dict[str, object] = {}
            if op == "stop":
                record.update(status="ended", endedAt=now_iso())
            elif op == "resume":
                record["status"] = "open"
                record.pop("endedAt", None)
                entry["current"] = number
            else:  # purge
                if record.get("status") != "ended":
                    raise UserError(f"conversation: session {number} is open; stop it before purging its transcript")
                removed = 0
                for path in self._transcripts(sid):
                    if path.is_dir():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.unlink(missing_ok=True)
                    removed += 1
                self._forget(account, sid)
                record["purgedAt"] = now_iso()
                extra["removed"] = removed
            save(home, account, data)
            current, _ended = current_of(home, account, user, count)
        log("owner-sessions", f"op={op}", user=user, conversation=number, session=sid[:8], **extra)
        return {**self._view(account, user, number, load(home, account), current), **extra}

    def _forget(self, account: str, session_id: str) -> None:
        """The claude runner's record of the session (it starts afresh, with ``--session-id``, if resumed)."""
        path = self.host.home / "accounts" / account / "claude-sessions.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.pop(session_id, None) is not None:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(tmp, path)

    def stop(self, principal: Principal, user: str, conversation: int) -> dict[str, object] | None:
        return self._change(principal, user, conversation, "stop")

    def resume(self, principal: Principal, user: str, conversation: int) -> dict[str, object] | None:
        return self._change(principal, user, conversation, "resume")

    def purge(self, principal: Principal, user: str, conversation: int) -> dict[str, object] | None:
        return self._change(principal, user, conversation, "purge")
