"""The console's pages (docs/console.md): login, leads, conversations, replies as the owner.

Every page is rendered from a Jinja2 template (autoescaped) and carries a policy with no inline
script or style (``/admin/static/console.css`` is the only stylesheet). A page without a valid
admin session redirects to ``/admin/login``; a POST also needs the form's CSRF token (an HMAC of
the session token) and, when the browser sends one, a same-origin ``Origin``. Lists and
conversations are paged (``?page=``, :data:`PAGE_SIZE` rows).

An owner's reply is stored as a channel Message (``sender=owner``, ``kind=owner-reply``) and sent
through the channel adapter's ``send`` that the channels plugin publishes through
``plughost_channel_adapters``, the same send an agent's reply takes; the lead's Task gets a step.
Log lines: ``[console] op=login|reply|lead-done ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import contextlib
import hashlib
import hmac
import io
import json
import re
import tempfile
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, quote

import anyio

from plughost import Principal, Route, UserError, log
from plughost.api import hooks
from plughost.api.credentials import conversation_secret
from plughost.api.http import int_param, read_body, same_origin
from plughost.api.payload import config_dir_source, doctor, install_brand, load_brand, resolve_brand
from plughost.api.store import CHANNEL_MESSAGE_LABELS, resolve_conversation_id
from plughost.plugins.admin import sessions
from plughost.plugins.admin.console import agents as agent_pages
from plughost.plugins.admin.session_routes import COOKIE, PinLogin, set_cookie, token_of

HERE = Path(__file__).parent
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
PAGE_SIZE = 25
MESSAGE_PAGE = 50
MAX_SCAN = 2000  # stored rows read for one page at most
MAX_FORM = 16 * 1024
MAX_REPLY = 4000
CSP = ("default-src 'self'; style-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
           "Referrer-Policy": "same-origin"}
NAV = (("/admin", "Home"), ("/admin/leads", "Leads"), ("/admin/conversations", "Conversations"),
       ("/admin/tasks", "Tasks"), ("/admin/sessions", "Sessions"), ("/admin/memory", "Memory"),
       ("/admin/audit", "Tool calls"), ("/admin/agents", "Public agent"), ("/admin/health", "Gates"),
       ("/admin/logs", "Logs"), ("/admin/people", "Erase / export"))
CHANNELS = {"webchat": "Webchat", "telegram": "Telegram", "whatsapp": "WhatsApp"}
PERSON_KINDS = ("contact", "visitor", "conversation")
PIN_FIELD: dict[str, Any] = {"pin_min": sessions.SIGN_IN_MIN_PIN, "pin_max": sessions.MAX_PIN, "pin_rule": sessions.pin_rule()}
"""The sign-in form's PIN field: it takes what sign-in checks (a PIN set by an earlier release too)
and states what ``set-pin`` sets; one home for the numbers, :mod:`plughost.plugins.admin.sessions`."""
SEARCH_PAGE = 10
SEARCH_MAX_PAGE = 10
LOG_WINDOW = 256 * 1024  # bytes of the log's tail the logs page reads
LOG_PAGE = 100
LOG_TIMES = "server.log.times"  # the log writer's sidecar: `<offset> <length> <UTC time>` a line (docs/logs.md#times)
LOG_TIMES_MAX = 8 * 1024 * 1024  # bytes of the sidecar's tail read at most
FINAL = ("done", "failed", "cancelled")
WAITING = ("The visitor is not on the chat now: the reply is kept for them and shows when they come back from the "
           "same browser (the conversation says when they have seen it).")
PERSON_LOCK = threading.Lock()  # one erase at a time captures the command's printed receipt
DOCTOR_LOCK = threading.Lock()  # one doctor run at a time: it starts every installed MCP server
DOCTOR_TIMEOUT_S = 20.0  # per server; the run is in the background, the page never waits for it


GATE_WORDS = {  # what a boot gate checks, in the owner's words
    "account-id-env": "The server knows which business account it serves.",
    "install-brand": "Your brand (name, greeting, settings) is installed and readable.",
    "schema-labels": "The memory's kinds of records are ones the plugins declare.",
    "plugin-files": "Every plugin's files are in place.",
    "plugin-load": "Every plugin started.",
    "tool-registration": "The assistant's tools are registered as the plugins declare them.",
    "skill-registration": "The assistant's skills are registered.",
    "specialist-tool-drift": "The specialist agents use only tools that exist.",
    "mcp-allowlist-coverage": "Every tool the assistant may call is on the allow-list.",
    "single-provider": "Each tool comes from one plugin only.",
    "admin-identity-binding": "The admin chat is bound to your identity.",
    "agent-files": "Your public agent's files (who it is, what it knows) are where it reads them.",
}
STATUS_WORDS = {"ok": "fine", "warn": "worth a look", "fail": "needs fixing", "error": "could not be checked"}
FINDING_WORDS = {  # a doctor finding's reason: what it means, what to do
    "unset-variable": ("A setting the assistant's server needs is not set.",
                       "Set the named variable (plughost install writes it), then run doctor again."),
    "plugin-folder-missing": ("A plugin's folder is gone from the install.", "Run plughost install again."),
    "start-failed": ("One of the assistant's servers did not start.",
                     "Read the detail; usually running plughost install again fixes it."),
    "initialize-failed": ("A server started but did not answer properly.", "Run plughost install again."),
    "tools-list-failed": ("A server could not say which tools it offers.", "Run plughost install again."),
    "missing-tool": ("A tool the plugin promises is not offered.", "Update or reinstall the plugin."),
    "extra-tool": ("A server offers a tool its plugin does not declare.", "Update or reinstall the plugin."),
    "meta-differs": ("A tool is set up differently from what its plugin declares.", "Reinstall the plugin."),
    "no-servers": ("No assistant servers are installed where doctor looked.", "Run plughost install."),
    "account-unset": ("The installed servers do not know which account to serve.",
                      "Run plughost install with your account."),
}
DOCTOR_RUN: dict[str, Any] = {"running": False, "started": "", "error": ""}  # the background run, one at a time


def gate_view(gates: dict[str, Any], body: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The boot gates in words (what each checks, how it went) and how many things need attention
    (gates not ok, a store error, plugins that failed)."""
    rows = []
    for row in gates.get("gates") or []:
        if not isinstance(row, dict):
            continue
        status = str(row.get("status") or "")
        rows.append({"name": str(row.get("gate") or ""), "status": status, "ok": status == "ok",
                     "words": GATE_WORDS.get(str(row.get("gate")), "A check the plugins run before serving."),
                     "state": STATUS_WORDS.get(status, status or "unknown"),
                     "todo": "" if status == "ok" else (
                         "The server would not have started; fix this first." if row.get("fatal")
                         else "Run `plughost boot` in a shell to read the details.")})
    attention = sum(not r["ok"] for r in rows)
    attention += (body.get("store") or {}).get("status") == "error"
    attention += len((body.get("plugins") or {}).get("failed") or [])
    return rows, attention


def doctor_view(report: dict[str, Any] | None) -> list[dict[str, str]]:
    """A doctor report's findings in words: what each means and what to do."""
    if not report:
        return []
    out = []
    for problem in report.get("problems") or []:
        text = str(problem)
        reason = next((r for r in FINDING_WORDS if f"reason={r}" in text), "")
        means, todo = FINDING_WORDS.get(reason, (text, "Run plughost doctor in a shell for the details."))
        out.append({"where": "the install", "means": means, "todo": todo, "detail": text})
    for server in report.get("servers") or []:
        for finding in server.get("findings") or []:
            reason = str(finding.get("reason") or "")
            means, todo = FINDING_WORDS.get(reason, (f"A problem: {reason}.", "Run plughost doctor in a shell."))
            detail = " ".join(f"{k}={v}" for k, v in finding.items() if k != "reason" and v not in (None, ""))
            out.append({"where": f"{server.get('plugin')} ({server.get('server')})", "means": means, "todo": todo,
                        "detail": detail[:300]})
    if not out and (report.get("findings") or report.get("exit")):  # a failed run is never "all good"
        for line in report.get("lines") or []:
            text = str(line)
            if " FAIL " not in text:
                continue
            reason = next((r for r in FINDING_WORDS if f"reason={r}" in text), "")
            means, todo = FINDING_WORDS.get(reason, ("Doctor found a problem.", "Run plughost doctor in a shell."))
            out.append({"where": "the install", "means": means, "todo": todo, "detail": text[:300]})
        if not out:
            out.append({"where": "the install", "means": "Doctor did not pass.",
                        "todo": "Run plughost doctor in a shell for the details.", "detail": ""})
    return out


def templates() -> Any:
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")), autoescape=True,
                              undefined=jinja2.StrictUndefined)


def csrf_of(secret: bytes, token: str) -> str:
    return hmac.new(secret, b"console-csrf:" + token.encode("utf-8"), hashlib.sha256).hexdigest()[:40]


def _stamp(props: dict[str, Any]) -> int:
    return int(props.get("receivedNs") or props.get("createdNs") or 0)


def _sent(props: dict[str, Any]) -> str:
    """When a Message was stored or sent, as its ISO text ("" when it says nothing)."""
    return str(props.get("sentAt") or props.get("receivedAt") or props.get("createdAt") or "")


def _when(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ns / 1e9)) if ns else ""


def _inputs(props: dict[str, Any]) -> dict[str, Any]:
    try:
        data = json.loads(str(props.get("inputs") or "{}"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def brand_name(env: Any, plugins_dir: Any = None) -> str:
    """The install's brand's ``productName`` (the one resolver, ``install_brand``), as the channels
    name the business to visitors; the default brand's name when none is recorded."""
    try:
        found = install_brand(env, plugins_dir)
        if found.product:
            return str(found.product)
        if found.source != "none":  # named but unreadable: the install-brand gate says so
            return "Your business"
        return str(load_brand(resolve_brand("default")).product)
    except Exception:  # a broken brand is the gates' business; the console still opens
        return "Your business"


def trimmed(text: str, limit: int = 90) -> str:
    """One line of ``text``, cut at a word near ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[:limit].rsplit(" ", 1)[0] if " " in line[:limit] else line[:limit]
    return cut.rstrip(",;:.") + "…"


def node_title(labels: Any, props: dict[str, Any]) -> str:
    """What a person calls a memory record: its title or name, else its first words, else its kind;
    never its id alone."""
    for key in ("title", "name", "question", "text", "description", "summary"):
        value = " ".join(str(props.get(key) or "").split())
        if value:
            return trimmed(value, 60)
    return f"An untitled {(list(labels) or ['record'])[0]}"


def safe_next(target: str | None) -> str:
    """Only a console path is a place to go back to after login."""
    if not target or not target.startswith("/admin") or target.startswith("//") or "\\" in target:
        return "/admin"
    return target


class Console:
    def __init__(self, host: Any, login: PinLogin) -> None:
        self.host = host
        self.login = login
        self.env = templates()
        self._brand: str | None = None

    @property
    def brand(self) -> str:
        if self._brand is None:
            self._brand = brand_name(self.host.env, getattr(self.host, "plugins_dir", None))
        return self._brand

    # ------------------------------------------------------------------ plumbing
    @property
    def account(self) -> str | None:
        return self.host.principal.account

    def guards(self) -> Any:
        return self.host.principal.guards

    def store(self) -> Any:
        return self.host.store()

    def conversation_id(self, channel: str, sender: str) -> str:
        """The Conversation id of a channel's sender: the stored one, else the keyed id of a new one
        (docs/channels.md#conversation-ids)."""
        account = self.account or ""
        return resolve_conversation_id(self.store(), conversation_secret(self.host.home, account), account,
                                       channel, sender)

    def render(self, name: str, status: int = 200, **context: Any) -> Any:
        from starlette.responses import HTMLResponse

        context.setdefault("session", None)
        context.setdefault("notice", None)
        context.setdefault("current", "")
        context.setdefault("csrf", "")
        html = self.env.get_template(name).render(nav=NAV, brand=self.brand, **context)
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    def session_of(self, request: Any) -> tuple[Any, str | None]:
        token = token_of(request)
        session, _ = sessions.check_session(self.host.home, token)
        if session is not None and self.account and session.account_id != self.account:
            session = None
        return session, token

    def to_login(self, request: Any) -> Any:
        from starlette.responses import RedirectResponse

        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/admin/login?next={quote(safe_next(target))}", status_code=303, headers=HEADERS)

    async def form(self, request: Any, limit: int = MAX_FORM) -> dict[str, str] | None:
        body = await read_body(request, limit)
        if body is None:
            return None
        parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=20)
        return {k: CONTROL.sub("", v[0]) for k, v in parsed.items()}  # NUL and kin never reach a page or the store

    def narrowed(self) -> Any:
        """A refusal when this server is narrowed (``ALLOWED_SCOPES`` / ``AGENT_SLUG``): the console
        reads the whole account, wider than the process may (as the admin chat refuses), else None."""
        if not self.host.principal.narrowed:
            return None
        return self.render("error.html", 403, title="Not in this server",
                           detail="This server is narrowed (ALLOWED_SCOPES or AGENT_SLUG is set), and the console "
                                  "reads the whole account; open it on a server started without them.")

    async def guarded_post(self, request: Any, limit: int = MAX_FORM) -> tuple[Any, dict[str, str] | None, Any]:
        """``(session, form, None)`` or ``(None, None, refusal response)``; ``limit``: the form's bytes."""
        refused = self.narrowed()
        if refused is not None:
            return None, None, refused
        session, token = self.session_of(request)
        if session is None or token is None:
            return None, None, self.render("error.html", 401, title="Signed out",
                                           detail="Your admin session ended; sign in again.")
        form = await self.form(request, limit)
        if form is None:
            return None, None, self.render("error.html", 413, title="Too large", detail="The form is too large.",
                                           session=session)
        secret = sessions.load_secret(self.host.home)
        if not same_origin(request) or not hmac.compare_digest(form.get("csrf", ""), csrf_of(secret, token)):
            log("console", "op=csrf-rejected", path=request.url.path[:80])
            return None, None, self.render("error.html", 403, title="Refused",
                                           detail="The form's check did not match; reload the page and try again.",
                                           session=session)
        return session, form, None

    def page_of(self, request: Any) -> int:
        value = int_param(request.query_params.get("page"), default=1, maximum=10_000)
        return max(1, value or 1)

    # ------------------------------------------------------------------ reads
    def lead_rows(self, page: int) -> tuple[list[dict[str, Any]], bool]:
        rows = self.store().find(guards=self.guards(), labels=["Task"], where={"kind": "follow-up"},
                                 order_by="startedAt", descending=True, limit=PAGE_SIZE + 1,
                                 offset=(page - 1) * PAGE_SIZE)
        views = [self.lead_view(n) for n in rows[:PAGE_SIZE]]
        for view in views:
            view["conversation"] = self.lead_conversation(view)
        return views, len(rows) > PAGE_SIZE

    def lead_view(self, node: Any) -> dict[str, Any]:
        p = dict(node.properties)
        inputs = _inputs(p)
        questions = [str(inputs.get("question") or "")]
        conversations = [str(p["conversationId"])] if p.get("conversationId") else []
        for step in p.get("steps") or []:
            _stamp_, _, text = str(step).partition(" ")
            if text.startswith("visitor asked"):
                head, _, asked = text.partition(": ")
                questions.append(asked)
                if " (in conv-" in head:
                    conv = head.split(" (in ", 1)[1].rstrip(")")
                    if conv not in conversations:
                        conversations.append(conv)
        return {"id": node.id, "title": str(p.get("title") or "Lead"), "status": str(p.get("status") or ""),
                "questions": [q for q in questions if q], "conversations": conversations,
                "visitorKey": str(inputs.get("visitorKey") or ""),
                "contact": str(inputs.get("contact") or ""), "question": str(inputs.get("question") or ""),
                "channel": str(inputs.get("channel") or ""), "sender": str(inputs.get("sender") or ""),
                "started": str(p.get("startedAt") or "")[:16].replace("T", " "), "outcome": p.get("outcome"),
                "conversationId": p.get("conversationId")}

    def lead(self, lead_id: str) -> dict[str, Any] | None:
        node = self.store().get(lead_id, guards=self.guards())
        if node is None or "Task" not in node.labels or node.properties.get("kind") != "follow-up":
            return None
        return self.lead_view(node)

    def messages(self, conversation: str, page: int = 1) -> tuple[list[dict[str, Any]], bool]:
        """One page of a conversation's Messages, oldest first (the last page when ``page`` is 0)."""
        rows = self.store().find(guards=self.guards(), labels=["Message"], where={"conversationId": conversation},
                                 limit=MAX_SCAN)
        rows.sort(key=lambda n: _stamp(n.properties))
        start = (page - 1) * MESSAGE_PAGE if page else max(0, len(rows) - MESSAGE_PAGE)
        chosen = rows[start:start + MESSAGE_PAGE]
        out = []
        for n in chosen:
            p = n.properties
            role = str(p.get("role") or "")
            who = "visitor" if role == "user" else ("owner" if p.get("sender") == "owner" else "agent")
            seen = None
            if who == "owner":
                seen = ("seen by the visitor " + str(p.get("seenAt"))[:16].replace("T", " ") if p.get("seenAt")
                        else "not seen by the visitor yet" if p.get("deliveryStatus") == "waiting"
                        else "delivery failed" if p.get("deliveryStatus") == "failed" else "sent")
            out.append({"role": role, "who": who, "text": str(p.get("text") or ""), "at": _when(_stamp(p)),
                        "seen": seen, "unseen": who == "owner" and p.get("channel") == "webchat"
                        and not p.get("seenAt")})
        return out, start + MESSAGE_PAGE < len(rows)

    def conversation_rows(self, page: int, channel: str = "") -> tuple[list[dict[str, Any]], bool]:
        """One page of conversations, each with its first visitor question, message count, last
        activity and the contact from the visitor's lead; grouped by person (a returning visitor's
        conversations under one heading: the same visitor key, else the same channel sender).
        A conversation stored as Messages alone (a webchat visitor who wrote once, a one-message
        import) is listed among them by its last message."""
        end = page * PAGE_SIZE
        stored = self.store().find(guards=self.guards(), labels=["Conversation"],
                                   where={"channel": channel} if channel else None, order_by="lastMessageAt",
                                   descending=True, limit=end + 1)
        views = [self.conversation_view(node) for node in stored] + self.message_only_views(channel)
        views.sort(key=lambda v: str(v["lastAt"]), reverse=True)
        rows = views[:end + 1]
        by_conv, by_visitor = self.contacts()
        groups: dict[str, dict[str, Any]] = {}
        for view in rows[(page - 1) * PAGE_SIZE:end]:
            messages = self.store().find(guards=self.guards(), labels=["Message"],
                                         where={"conversationId": view["id"]}, limit=MAX_SCAN)
            messages.sort(key=lambda n: _stamp(n.properties))
            asked = next((n.properties for n in messages if n.properties.get("role") == "user"
                          and str(n.properties.get("text") or "").strip()), None)
            visitor = next((str(n.properties["visitorKey"]) for n in messages
                            if isinstance(n.properties.get("visitorKey"), str) and n.properties["visitorKey"]), "")
            view["first"] = trimmed(str(asked.get("text") or "")) if asked else ""
            view["count"] = len(messages)
            view["contact"] = by_conv.get(view["id"]) or (by_visitor.get(visitor, "") if visitor else "")
            key = f"visitor:{visitor}" if visitor else f"sender:{view['channel']}:{view['fullSender']}"
            group = groups.setdefault(key, {"key": key, "contact": "", "channel": view["channel"],
                                            "sender": view["sender"], "conversations": []})
            group["contact"] = group["contact"] or view["contact"]
            group["conversations"].append(view)
        out = list(groups.values())
        for group in out:
            if group["contact"]:
                group["who"] = group["contact"]
            else:
                group["who"] = f"{CHANNELS.get(group['channel'], group['channel'] or 'A')} visitor " \
                               f"{group['sender'][-6:] if group['channel'] == 'webchat' else group['sender']}".strip()
        return out, len(rows) > end

    def contacts(self) -> tuple[dict[str, str], dict[str, str]]:
        """The contacts visitors left on their leads: by conversation id and by visitor key."""
        by_conv: dict[str, str] = {}
        by_visitor: dict[str, str] = {}
        rows = self.store().find(guards=self.guards(), labels=["Task"], where={"kind": "follow-up"}, limit=MAX_SCAN)
        for node in sorted(rows, key=lambda n: str(n.properties.get("startedAt") or "")):
            view = self.lead_view(node)
            if not view["contact"]:
                continue
            for conv in view["conversations"]:
                by_conv[conv] = view["contact"]
            if view["visitorKey"]:
                by_visitor[view["visitorKey"]] = view["contact"]
        return by_conv, by_visitor

    def conversation_view(self, node: Any) -> dict[str, Any]:
        p = node.properties
        channel = str(p.get("channel") or "")
        sender = str(p.get("sender") or p.get("senderId") or "")
        return {"id": node.id, "channel": channel, "sender": sender[:24], "fullSender": sender,
                "channelName": CHANNELS.get(channel, channel),
                "scope": str(p.get("scope") or ""), "held": bool(p.get("ownerHolds")),
                "last": str(p.get("lastMessageAt") or "")[:16].replace("T", " "),
                "lastAt": str(p.get("lastMessageAt") or ""), "label": str(p.get("title") or f"{channel} {sender[:12]}")}

    def message_only_views(self, channel: str = "") -> list[dict[str, Any]]:
        """The conversations that are Messages alone, no Conversation node (webchat makes it on the
        visitor's second message; an import may carry none), among the last :data:`MAX_SCAN`
        Messages stored."""
        found = self.store().find(guards=self.guards(), labels=["Message"],
                                  where={"channel": channel} if channel else None, limit=MAX_SCAN)
        by_conv: dict[str, list[Any]] = {}
        for n in found:
            conv = n.properties.get("conversationId")
            if isinstance(conv, str) and conv:
                by_conv.setdefault(conv, []).append(n)
        if not by_conv:
            return []
        known = {n.id for n in self.store().find(guards=self.guards(), labels=["Conversation"], limit=MAX_SCAN)}
        return [self.messages_view(conv, rows) for conv, rows in by_conv.items() if conv not in known
                and self.store().get(conv, guards=self.guards(), include_deleted=True) is None]

    def first_message_view(self, conv_id: str) -> dict[str, Any] | None:
        """A webchat conversation of one visitor message has Messages but no Conversation node yet
        (the second message makes it): its view from its Messages, so a link to it (a returning
        visitor's earlier visit on their lead, the conversations list) opens it and the owner can
        answer it."""
        rows = self.store().find(guards=self.guards(), labels=["Message"], where={"conversationId": conv_id},
                                 limit=MAX_SCAN)
        return self.messages_view(conv_id, rows) if rows else None

    def messages_view(self, conv_id: str, rows: list[Any]) -> dict[str, Any]:
        """A conversation's view read from (some of) its Messages: who from the first, when from the last."""
        ordered = sorted(rows, key=lambda n: (_stamp(n.properties), _sent(n.properties)))
        p = ordered[0].properties
        channel, sender = str(p.get("channel") or ""), str(p.get("sender") or "")
        if p.get("role") != "user":
            sender = str(p.get("recipient") or "")
        last = _sent(ordered[-1].properties)
        return {"id": conv_id, "channel": channel, "sender": sender[:24], "fullSender": sender,
                "channelName": CHANNELS.get(channel, channel), "scope": str(p.get("scope") or ""), "held": False,
                "last": last[:16].replace("T", " "), "lastAt": last,
                "label": f"{CHANNELS.get(channel, channel)} {sender[:12]}".strip()}

    def lead_conversation(self, lead: dict[str, Any]) -> str | None:
        """The stored conversation a lead was left in (for the leads list's link), else None."""
        conv = lead["conversationId"] or (lead["conversations"][0] if lead["conversations"] else None)
        if not conv and lead["channel"] and lead["sender"]:
            conv = self.conversation_id(lead["channel"], lead["sender"])
        if conv and self.store().get(str(conv), guards=self.guards()) is not None:
            return str(conv)
        return None

    def task_rows(self, page: int) -> tuple[list[dict[str, Any]], bool]:
        rows = self.store().find(guards=self.guards(), labels=["Task"], order_by="startedAt", descending=True,
                                 limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE)
        out = [{"href": f"/admin/tasks/{n.id}",
                "cells": [str(n.properties.get("title") or n.id), str(n.properties.get("kind") or ""),
                          str(n.properties.get("status") or ""),
                          str(n.properties.get("startedAt") or "")[:16].replace("T", " ")]}
               for n in rows[:PAGE_SIZE]]
        return out, len(rows) > PAGE_SIZE

    def task(self, task_id: str) -> tuple[dict[str, Any], list[dict[str, str]]] | None:
        node = self.store().get(task_id, guards=self.guards())
        if node is None or "Task" not in node.labels:
            return None
        p = node.properties
        view = {"title": str(p.get("title") or node.id), "kind": str(p.get("kind") or ""),
                "status": str(p.get("status") or ""), "started": str(p.get("startedAt") or ""),
                "completed": p.get("completedAt"), "outcome": p.get("outcome"),
                "conversation": p.get("conversationId"), "steps": [str(x) for x in (p.get("steps") or [])][:200]}
        near = self.store().expand([node.id], guards=self.guards(), limit=PAGE_SIZE * 4).get(node.id, [])
        produced = [{"id": n.node.id, "label": ",".join(n.node.labels),
                     "name": str(n.node.properties.get("name") or n.node.properties.get("title") or "")}
                    for n in near if n.type == "PRODUCED" and n.direction == "out"][:PAGE_SIZE * 4]
        view["secondsLogged"] = int(p.get("secondsLogged") or 0)  # time on tasks (docs/memory.md#time-on-tasks)
        view["timerRunning"] = any(n.type == "LOGGED_AGAINST" and n.direction == "in"
                                   and n.node.properties.get("endedAt") is None for n in near)
        return view, produced

    def audit_rows(self, page: int) -> tuple[list[dict[str, Any]], bool]:
        rows = self.store().find(guards=self.guards(), labels=["ToolCall"], order_by="startedAt", descending=True,
                                 limit=PAGE_SIZE + 1, offset=(page - 1) * PAGE_SIZE)
        out = []
        for n in rows[:PAGE_SIZE]:
            p = n.properties
            conv = p.get("conversationId")
            out.append({"href": f"/admin/conversations/{conv}" if conv else None,
                        "cells": [str(p.get("startedAt") or "")[:19].replace("T", " "), str(p.get("toolName") or ""),
                                  str(p.get("pluginName") or ""), "error" if p.get("isError") else "ok",
                                  str(p.get("input") or "")[:200]]})
        return out, len(rows) > PAGE_SIZE

    def search(self, query: str, page: int) -> tuple[list[dict[str, Any]], bool]:
        """memory-search (``host.memory_search``) as the owner and as a public visitor, one page each."""
        owner = self.host.principal
        views = []
        more = False
        for title, intro, principal in (
                ("As the owner", "Everything the account's memory holds for this text.", owner),
                ("As a public visitor would see it", "Only what a visitor's turn may read: the public scope, "
                 "no one else's conversation.", owner.visitor())):
            hits = self.host.memory_search(query, principal, limit=SEARCH_PAGE * page + 1)
            more = more or len(hits) > SEARCH_PAGE * page
            chosen = hits[(page - 1) * SEARCH_PAGE:page * SEARCH_PAGE]
            views.append({"title": title, "intro": intro, "hits": [
                {"title": node_title(h.labels, h.properties),
                 "text": trimmed(str(h.properties.get("text") or h.properties.get("description") or ""), 200),
                 "label": ",".join(h.labels), "scope": str(h.properties.get("scope") or ""),
                 "score": round(h.score, 4)} for h in chosen]})
        return views, more

    def log_lines(self, page: int) -> tuple[list[dict[str, str]], bool]:
        """The tail's lines, newest first, each with its time from ``server.log.times`` when it has one."""
        folder = self.host.home / "logs"
        try:
            with (folder / "server.log").open("rb") as fh:
                fh.seek(0, 2)
                size = fh.tell()
                start = max(0, size - LOG_WINDOW)
                fh.seek(start)
                tail = fh.read(LOG_WINDOW)
        except OSError:
            return [], False
        times = log_times(folder / LOG_TIMES, start)
        now = time.time()
        lines: list[dict[str, str]] = []
        offset = start
        segments = tail.split(b"\n")
        if segments and not segments[-1]:
            segments.pop()  # the newline that ends the last line
        for index, segment in enumerate(segments):
            at = offset
            offset += len(segment) + 1
            if index == 0 and start > 0:
                continue  # the first one is cut
            stamp = times.get((at, len(segment) + 1), "")
            shown = local_time(stamp, now) if stamp else ""
            for text in segment.decode("utf-8", "replace").splitlines() or [""]:
                lines.append({"text": text[:1000], "at": stamp, "time": shown})
        lines.reverse()
        first = (page - 1) * LOG_PAGE
        return lines[first:first + LOG_PAGE], first + LOG_PAGE < len(lines)

    # ------------------------------------------------------------------ writes
    def _record(self, channel: str, sender: str, text: str) -> tuple[str, str, dict[str, Any]]:
        account = self.account
        if not account:
            raise UserError("no account is served")
        conv = self.conversation_id(channel, sender)
        earlier = self.store().find(guards=self.guards(), labels=["Message"], where={"conversationId": conv},
                                    limit=MAX_SCAN)
        earlier.sort(key=lambda n: _stamp(n.properties))
        target: dict[str, Any] = {}
        scope = "public"
        visitor: str | None = None  # whose browser (or number) the reply waits for, when they left
        for n in earlier:
            if isinstance(n.properties.get("target"), dict):
                target = dict(n.properties["target"])
            if n.properties.get("role") == "user" and n.properties.get("scope"):
                scope = str(n.properties["scope"])
            if n.properties.get("role") == "user" and isinstance(n.properties.get("visitorKey"), str):
                visitor = n.properties["visitorKey"]
        rid = f"msg-owner-{uuid.uuid4().hex}"
        props = {"role": "assistant", "channel": channel, "sender": "owner", "recipient": sender, "text": text,
                 "conversationId": conv, "kind": "owner-reply", "createdNs": time.time_ns(),
                 "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "deliveryStatus": "pending",
                 "scope": scope, **({"target": target} if target else {}),
                 **({"visitorKey": visitor} if visitor else {})}
        row: dict[str, Any] = {"id": rid, "labels": ["Message", CHANNEL_MESSAGE_LABELS.get(channel, "Message")],
                               "properties": props}
        conv_props: dict[str, Any] = {"ownerHolds": True, "lastMessageAt": props["createdAt"]}  # held until handed back
        linked = [rid]
        if self.store().get(conv, guards=self.guards()) is None:  # a one-message visitor has no Conversation yet
            conv_props.update(channel=channel, sender=sender, startedAt=props["createdAt"], scope=scope,
                              title=f"{channel} {sender}")
            linked += [n.id for n in earlier]
        rows = [row, {"id": conv, "labels": ["Conversation"], "properties": conv_props,
                      "edges": [{"type": "HAS_MESSAGE", "to": m} for m in linked]}]
        self.store().upsert_many(rows, guards=Principal.system(account).guards)
        self.host.call_each(hooks.MESSAGES_STORED, account_id=account, message_ids=[rid])
        return rid, conv, target

    async def reply(self, channel: str, sender: str, text: str) -> dict[str, Any]:
        """Store the owner's reply and send it through the channel's adapter."""
        rid, _conv, target = await asyncio.to_thread(self._record, channel, sender, text)
        send = next((a.send for a in self.host.collect(hooks.CHANNEL_ADAPTERS).items() if a.name == channel), None)
        msg = SimpleNamespace(channel=channel, sender=sender, target=target or {"session": sender}, text="",
                              platform_id=f"owner:{rid}", reply=None, phone=None, name=None)
        if send is None:
            outcome: dict[str, Any] = {"ok": False, "reason": f"no-adapter:{channel}"}
        else:
            try:
                result = send(self.host, msg, text)
                outcome = await result if asyncio.iscoroutine(result) else result
            except Exception as exc:  # the stored reply says it failed; the page says so too
                outcome = {"ok": False, "reason": f"send-error:{str(exc).splitlines()[0][:200] if str(exc) else ''}"}
        outcome = outcome if isinstance(outcome, dict) else {"ok": bool(outcome)}
        if outcome.get("ok") and outcome.get("live") is False:  # webchat: the visitor's page is closed
            outcome["waiting"] = True
        status = {"deliveryStatus": ("waiting" if outcome.get("waiting") else "sent") if outcome.get("ok") else "failed",
                  "platformMessageId": outcome.get("platformId"),
                  "failureReason": None if outcome.get("ok") else outcome.get("reason", "unknown")}
        clean = {k: v for k, v in status.items() if v is not None}
        await asyncio.to_thread(self.store().upsert_node, ["Message"], clean, node_id=rid,
                                guards=Principal.system(self.guards().account_id).guards)
        log("console", "op=reply", channel=channel, messageId=rid, ok=bool(outcome.get("ok")),
            waiting=bool(outcome.get("waiting")))
        return outcome

    def contact_of(self, conv: str) -> str:
        """The contact a visitor of this conversation left (on their lead), else empty."""
        rows = self.store().find(guards=self.guards(), labels=["Task"], where={"kind": "follow-up"}, limit=MAX_SCAN)
        for node in sorted(rows, key=lambda n: str(n.properties.get("startedAt") or ""), reverse=True):
            view = self.lead_view(node)
            own = self.conversation_id(view["channel"], view["sender"]) if view["sender"] else None
            if view["contact"] and (conv in view["conversations"] or conv == own):
                return view["contact"]
        return ""

    def hand_back(self, conv: str) -> bool:
        if self.store().get(conv, guards=self.guards()) is None:
            return False
        self.store().upsert_node(["Conversation"], {"ownerHolds": False, "heldNoticed": False}, node_id=conv,
                                 guards=Principal.system(self.guards().account_id).guards)
        log("console", "op=hand-back", conversation=conv[5:13])
        return True

    def doctor_folder(self) -> Path:
        """The install this server was started from; a UserError when none is recorded."""
        folder, source = config_dir_source(self.host.env)
        if source == "default" or not folder.is_dir():  # never a ~/.claude plughost did not install into
            raise UserError("no install is recorded for this server: run `plughost install` first")
        return Path(folder)

    def doctor_start(self) -> bool:
        """Start ``plughost doctor`` on the install in a background thread (it starts every MCP server
        and can take a minute under load); False when a run is already going."""
        folder = self.doctor_folder()
        if not DOCTOR_LOCK.acquire(blocking=False):
            return False
        DOCTOR_RUN.update(running=True, started=time.strftime("%H:%M", time.localtime()), error="")

        def run() -> None:
            try:
                report = doctor.run(folder, home=self.host.env.get("HOME"), timeout=DOCTOR_TIMEOUT_S, workers=2)
                doctor.record(self.host.home, report)
                log("console", "op=doctor", servers=len(report.checks), findings=report.findings)
            except Exception as exc:  # the page says it failed; the last result stays
                DOCTOR_RUN["error"] = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
                log("console", "op=doctor-failed", error=DOCTOR_RUN["error"])
            finally:
                DOCTOR_RUN["running"] = False
                DOCTOR_LOCK.release()

        threading.Thread(target=run, name="console-doctor", daemon=True).start()
        log("console", "op=doctor-started")
        return True

    def person_command(self, name: str, argv: list[str]) -> str:
        """Run the ``erase`` / ``export`` command a plugin publishes (``plughost_cli_commands``), its output as text."""
        command = next((c for c in self.host.collect(hooks.CLI_COMMANDS).items() if c.name == name), None)
        if command is None:
            raise UserError(f"no plugin serves `plughost {name}`")
        parser = argparse.ArgumentParser(prog=f"plughost {name}", exit_on_error=False)
        command.configure(parser)
        if name == "export":
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "export.json"
                command.run(parser.parse_args([*argv, "--out", str(out)]), self.host)
                return out.read_text(encoding="utf-8")
        buffer = io.StringIO()
        with PERSON_LOCK, contextlib.redirect_stdout(buffer):
            command.run(parser.parse_args(argv), self.host)
        return buffer.getvalue()

    def task_tool(self, name: str, args: dict[str, Any]) -> Any:
        owners = [c.plugin for c in self.host.collect(hooks.TOOLS) if c.item.name == name]
        if not owners:
            raise UserError(f"no plugin serves {name}")
        return self.host.call_tool(owners[0], name, args)


def log_times(path: Path, start: int) -> dict[tuple[int, int], str]:
    """``(offset, length) -> UTC time`` for the lines server.log holds from byte ``start`` on.

    The sidecar is read backwards in chunks until an entry before ``start`` (or its first byte,
    or :data:`LOG_TIMES_MAX`); a torn or foreign entry is skipped.
    """
    found: dict[tuple[int, int], str] = {}
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            end = fh.tell()
            pos, carry = end, b""
            while pos > 0 and end - pos < LOG_TIMES_MAX:
                step = min(64 * 1024, pos)
                pos -= step
                fh.seek(pos)
                chunk = fh.read(step) + carry
                head, _, body = chunk.partition(b"\n") if pos > 0 else (b"", b"", chunk)
                carry = head if pos > 0 else b""
                earliest = None
                for raw in body.split(b"\n"):
                    parts = raw.split()
                    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
                        continue
                    at = int(parts[0])
                    earliest = at if earliest is None else min(earliest, at)
                    if at >= start:
                        found[(at, int(parts[1]))] = parts[2].decode("ascii", "replace")
                if earliest is not None and earliest < start:
                    break
    except OSError:
        return {}
    return found


def local_time(stamp: str, now: float) -> str:
    """A UTC ``2026-12-05T14:31:57Z`` as the server's local ``HH:MM:SS``, with the date when not today."""
    try:
        when = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except (ValueError, OverflowError):
        return ""
    local = time.localtime(when)
    if time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d", time.localtime(now)):
        return time.strftime("%H:%M:%S", local)
    return time.strftime("%Y-%m-%d %H:%M:%S", local)


def make_routes(host: Any, login: PinLogin) -> list[Route]:
    from starlette.responses import FileResponse, RedirectResponse

    console = Console(host, login)

    async def login_page(request: Any) -> Any:
        refused = console.narrowed()
        if refused is not None:
            return refused
        session, _ = console.session_of(request)
        nxt = safe_next(request.query_params.get("next"))
        if session is not None:
            return RedirectResponse(nxt, status_code=303, headers=HEADERS)
        return console.render("login.html", title="Sign in", account=console.account or "(none)", next=nxt,
                              error=None, **PIN_FIELD)

    async def login_post(request: Any) -> Any:
        refused = console.narrowed()
        if refused is not None:
            return refused
        form = await console.form(request)
        nxt = safe_next((form or {}).get("next"))
        account = console.account
        if not account:
            return console.render("error.html", 503, title="No account",
                                  detail="This server serves no account (set ACCOUNT_ID).")
        if not same_origin(request):
            return console.render("error.html", 403, title="Refused", detail="Cross-origin sign-in refused.")
        try:
            pin = sessions.check_pin((form or {}).get("pin"))
        except UserError:
            return console.render("login.html", 400, title="Sign in", account=account, next=nxt,
                                  error=f"The PIN is {sessions.pin_rule(sessions.SIGN_IN_MIN_PIN)}.", **PIN_FIELD)
        token, _user, refused = await login.attempt(account, pin)
        if token is None:
            status = int(getattr(refused, "status_code", 401))
            error = ("Too many wrong PINs: sign-in is locked for a few minutes. Wait, then try again." if status == 429
                     else "That PIN is not right." if sessions.has_pin(host.home, account)
                     else f"No admin PIN is set for this account yet: run `plughost admin set-pin {account}`.")
            page = console.render("login.html", status, title="Sign in", account=account, next=nxt, error=error,
                                  **PIN_FIELD)
            retry = getattr(refused, "headers", {}).get("retry-after")
            if status == 429 and retry:  # the lockout says when to try again, as the JSON route does
                page.headers["Retry-After"] = retry
            return page
        log("console", "op=login", accountId=account[:8])
        response = RedirectResponse(nxt, status_code=303, headers=HEADERS)
        set_cookie(response, token)
        return response

    async def logout(request: Any) -> Any:
        session, form, refused = await console.guarded_post(request)
        if refused is not None:
            return refused
        if session is not None:  # the token itself stops working, not only this browser's cookie
            sessions.revoke(host.home, session)
            log("console", "op=logout")
        response = RedirectResponse("/admin/login", status_code=303, headers=HEADERS)
        response.delete_cookie(COOKIE, path="/")
        return response

    def signed_in(view: Any) -> Any:
        async def endpoint(request: Any) -> Any:
            refused = console.narrowed()
            if refused is not None:
                return refused
            session, token = console.session_of(request)
            if session is None or token is None:
                return console.to_login(request)
            csrf = csrf_of(sessions.load_secret(host.home), token)
            return await view(request, session, csrf)

        return endpoint

    async def home(request: Any, session: Any, csrf: str) -> Any:
        rows = await asyncio.to_thread(host.store().find, guards=console.guards(), labels=["Task"],
                                       where={"kind": "follow-up", "status": "running"}, limit=1000)
        return console.render("home.html", title="Console", session=session, csrf=csrf, current="/admin", open_leads=len(rows))

    async def leads(request: Any, session: Any, csrf: str) -> Any:
        page = console.page_of(request)
        rows, more = await asyncio.to_thread(console.lead_rows, page)
        return console.render("leads.html", title="Leads", session=session, csrf=csrf, current="/admin/leads", rows=rows,
                              page=page, more=more)

    def lead_context(lead: dict[str, Any]) -> dict[str, Any]:
        conv = lead["conversationId"] or (console.conversation_id(lead["channel"], lead["sender"])
                                          if lead["channel"] and lead["sender"] else None)
        messages = console.messages(conv, 0)[0] if conv else []
        node = host.store().get(conv, guards=console.guards()) if conv else None
        earlier = earlier_of(lead)
        return {"messages": messages, "can_reply": bool(lead["channel"] and lead["sender"]), "earlier": earlier,
                "contact": lead["contact"],
                "held": bool(node is not None and node.properties.get("ownerHolds")), "conversation_id": conv,
                "reply_action": f"/admin/leads/{lead['id']}/reply"}

    def earlier_of(lead: dict[str, Any]) -> list[dict[str, Any]]:
        """What this visitor told us in earlier conversations (their slices, by the key on the lead):
        an order they described last time is there for the owner to read."""
        if not lead["visitorKey"]:
            return []
        rows = host.store().find(guards=console.guards(), labels=["VisitorSlice"],
                                 where={"sliceToken": lead["visitorKey"]}, limit=50)
        rows.sort(key=lambda n: str(n.properties.get("lastAt") or ""), reverse=True)
        return [{"at": str(n.properties.get("lastAt") or "")[:16].replace("T", " "),
                 "conversation": str(n.properties.get("conversationId") or ""),
                 "lines": [str(x) for x in n.properties.get("lines") or []][:20]}
                for n in rows if n.properties.get("sliceToken") == lead["visitorKey"]][:10]

    async def lead_page(request: Any, session: Any, csrf: str) -> Any:
        lead = await asyncio.to_thread(console.lead, request.path_params["lead"])
        if lead is None:
            return console.render("error.html", 404, title="No such lead", detail="That lead does not exist.",
                                  session=session)
        context = await asyncio.to_thread(lead_context, lead)
        reach = f" Reach them at {lead['contact']}." if lead["contact"] else ""
        notice = {"sent": "Reply sent.", "failed": "The reply was stored but could not be sent." + reach,
                  "waiting": WAITING + (f" If they don't, reach them at {lead['contact']}." if lead["contact"] else ""),
                  "empty": "Write a reply first: nothing was sent.",
                  "done": "Marked done."}.get(request.query_params.get("notice", ""))
        return console.render("lead.html", title=lead["title"], session=session, current="/admin/leads", lead=lead,
                              back_to=f"/admin/leads/{lead['id']}",
                              csrf=csrf, notice=notice, **context)

    async def lead_reply(request: Any) -> Any:
        session, form, refused = await console.guarded_post(request)
        if refused is not None or form is None:
            return refused
        lead = await asyncio.to_thread(console.lead, request.path_params["lead"])
        if lead is None or not (lead["channel"] and lead["sender"]):
            return console.render("error.html", 404, title="No such lead", detail="That lead cannot be answered here.",
                                  session=session)
        text = form.get("text", "").strip()[:MAX_REPLY]
        if not text:
            return RedirectResponse(f"/admin/leads/{lead['id']}?notice=empty", status_code=303, headers=HEADERS)
        outcome = await console.reply(lead["channel"], lead["sender"], text)
        if lead["status"] not in FINAL:
            try:
                await asyncio.to_thread(console.task_tool, "work-update",
                                        {"taskId": lead["id"], "step": "the owner replied from the console"})
            except UserError:
                pass
        notice = ("waiting" if outcome.get("waiting") else "sent") if outcome.get("ok") else "failed"
        return RedirectResponse(f"/admin/leads/{lead['id']}?notice={notice}", status_code=303, headers=HEADERS)

    async def lead_done(request: Any) -> Any:
        session, form, refused = await console.guarded_post(request)
        if refused is not None or form is None:
            return refused
        lead = await asyncio.to_thread(console.lead, request.path_params["lead"])
        if lead is None:
            return console.render("error.html", 404, title="No such lead", detail="That lead does not exist.",
                                  session=session)
        if lead["status"] not in FINAL:
            outcome = form.get("outcome", "").strip()[:500] or "done from the console"
            await asyncio.to_thread(console.task_tool, "work-complete", {"taskId": lead["id"], "outcome": outcome})
            log("console", "op=lead-done", task=lead["id"][5:13])
        return RedirectResponse(f"/admin/leads/{lead['id']}?notice=done", status_code=303, headers=HEADERS)

    async def conversations(request: Any, session: Any, csrf: str) -> Any:
        page = console.page_of(request)
        channel = request.query_params.get("channel", "")
        channel = channel if channel in CHANNELS else ""
        rows, more = await asyncio.to_thread(console.conversation_rows, page, channel)
        return console.render("conversations.html", title="Conversations", session=session, csrf=csrf,
                              current="/admin/conversations", rows=rows, page=page, more=more, channel=channel,
                              channels=(("", "All"), *((c, CHANNELS[c]) for c in CHANNELS)),
                              pager_query=f"channel={channel}&" if channel else "")

    def conversation_of(conv_id: str) -> dict[str, Any] | None:
        node = host.store().get(conv_id, guards=console.guards())
        if node is None:
            return console.first_message_view(conv_id)
        return console.conversation_view(node) if "Conversation" in node.labels else None

    async def conversation_page(request: Any, session: Any, csrf: str) -> Any:
        conv = await asyncio.to_thread(conversation_of, request.path_params["conversation"])
        if conv is None:
            return console.render("error.html", 404, title="No such conversation",
                                  detail="That conversation does not exist.", session=session)
        page = console.page_of(request)
        messages, more = await asyncio.to_thread(console.messages, conv["id"], page)
        contact = await asyncio.to_thread(console.contact_of, conv["id"])
        notice = {"sent": "Reply sent.", "failed": "The reply was stored but could not be sent." + (
                      f" Reach them at {contact}." if contact else " They left no contact to reach them otherwise."),
                  "waiting": WAITING + (f" If they don't, reach them at {contact}." if contact
                                        else " They left no contact to reach them otherwise."),
                  "empty": "Write a reply first: nothing was sent."}.get(
            request.query_params.get("notice", ""))
        return console.render("conversation.html", title=conv["label"], session=session,
                              current="/admin/conversations", conversation=conv, messages=messages, page=page,
                              more=more, csrf=csrf, notice=notice, can_reply=bool(conv["channel"] and conv["fullSender"]),
                              held=conv["held"], conversation_id=conv["id"], back_to=f"/admin/conversations/{conv['id']}",
                              contact=contact,
                              reply_action=f"/admin/conversations/{conv['id']}/reply")

    async def conversation_reply(request: Any) -> Any:
        session, form, refused = await console.guarded_post(request)
        if refused is not None or form is None:
            return refused
        conv = await asyncio.to_thread(conversation_of, request.path_params["conversation"])
        if conv is None or not (conv["channel"] and conv["fullSender"]):
            return console.render("error.html", 404, title="No such conversation",
                                  detail="That conversation cannot be answered here.", session=session)
        text = form.get("text", "").strip()[:MAX_REPLY]
        notice = "?notice=empty"
        if text:
            outcome = await console.reply(conv["channel"], conv["fullSender"], text)
            notice = "?notice=" + (("waiting" if outcome.get("waiting") else "sent") if outcome.get("ok") else "failed")
        return RedirectResponse(f"/admin/conversations/{conv['id']}{notice}", status_code=303, headers=HEADERS)

    async def tasks(request: Any, session: Any, csrf: str) -> Any:
        page = console.page_of(request)
        rows, more = await asyncio.to_thread(console.task_rows, page)
        return console.render("table.html", title="Tasks", session=session, csrf=csrf, current="/admin/tasks", rows=rows,
                              columns=("Task", "Kind", "Status", "Started"), page=page, more=more,
                              intro="Work the agents and visitors raised, newest first.")

    async def task_page(request: Any, session: Any, csrf: str) -> Any:
        found = await asyncio.to_thread(console.task, request.path_params["task"])
        if found is None:
            return console.render("error.html", 404, title="No such task", detail="That task does not exist.",
                                  session=session)
        task, produced = found
        return console.render("task.html", title=task["title"], session=session, csrf=csrf, current="/admin/tasks", task=task,
                              produced=produced)

    async def audit(request: Any, session: Any, csrf: str) -> Any:
        page = console.page_of(request)
        rows, more = await asyncio.to_thread(console.audit_rows, page)
        return console.render("table.html", title="Tool calls", session=session, csrf=csrf, current="/admin/audit", rows=rows,
                              columns=("When", "Tool", "Plugin", "Result", "Input (redacted)"), page=page, more=more,
                              intro="The tool-call audit of admin sessions, newest first; the time links to its conversation.")

    async def logs(request: Any, session: Any, csrf: str) -> Any:
        page = console.page_of(request)
        lines, more = await asyncio.to_thread(console.log_lines, page)
        return console.render("logs.html", title="Logs", session=session, csrf=csrf, current="/admin/logs", lines=lines,
                              page=page, more=more, size=LOG_PAGE, window=LOG_WINDOW // 1024)

    async def hand_back(request: Any) -> Any:
        session, form, refused = await console.guarded_post(request)
        if refused is not None or form is None:
            return refused
        conv = request.path_params["conversation"]
        if not await asyncio.to_thread(console.hand_back, conv):
            return console.render("error.html", 404, title="No such conversation",
                                  detail="That conversation does not exist (erased, or never started).", session=session)
        back = safe_next(form.get("back")) if form.get("back") else f"/admin/conversations/{conv}"
        return RedirectResponse(back, status_code=303, headers=HEADERS)

    async def memory(request: Any, session: Any, csrf: str) -> Any:
        query = (request.query_params.get("q") or "").strip()[:200]
        page = min(console.page_of(request), SEARCH_MAX_PAGE)
        views, more = await asyncio.to_thread(console.search, query, page) if query else ([], False)
        return console.render("memory.html", title="Memory", session=session, csrf=csrf, current="/admin/memory", q=query,
                              views=views, page=page, more=more and page < SEARCH_MAX_PAGE)

    async def health_page(request: Any, session: Any, csrf: str) -> Any:
        from plughost.plugins.admin import health

        notice = {"busy": "A doctor run is already going; its result shows here when it ends (reload the page).",
                  "started": "Doctor is running in the background; reload this page to see the result."}.get(
            request.query_params.get("notice", ""))
        report = await asyncio.to_thread(doctor.last, host.home)
        findings = doctor_view(report)

        with anyio.move_on_after(health.PROBE_TIMEOUT_S):
            _status, body = await anyio.to_thread.run_sync(health.snapshot, host, abandon_on_cancel=True)
            gates, attention = gate_view(body.get("gates") or {}, body)
            return console.render("health.html", title="Gates", session=session, csrf=csrf, current="/admin/health",
                                  body=body, gates=gates, gates_ran=bool((body.get("gates") or {}).get("ran")),
                                  attention=attention, doctor=report, findings=findings, notice=notice,
                                  run=dict(DOCTOR_RUN))
        return console.render("error.html", 503, title="Gates", detail="The health probe timed out.", session=session)

    async def doctor_post(request: Any) -> Any:
        session, form, refused = await console.guarded_post(request)
        if refused is not None or form is None:
            return refused
        try:
            started = await asyncio.to_thread(console.doctor_start)
        except UserError as exc:
            return console.render("error.html", 409, title="Doctor", detail=str(exc), session=session)
        return RedirectResponse(f"/admin/health?notice={'started' if started else 'busy'}", status_code=303,
                                headers=HEADERS)

    async def people(request: Any, session: Any, csrf: str) -> Any:
        return console.render("people.html", title="Erase / export", session=session, current="/admin/people",
                              csrf=csrf, receipt=None, error=None, value="")

    async def people_post(request: Any) -> Any:
        from starlette.responses import Response

        session, form, refused = await console.guarded_post(request)
        if refused is not None or form is None:
            return refused
        token = token_of(request) or ""
        csrf = csrf_of(sessions.load_secret(host.home), token)
        kind, value, mode = form.get("kind", ""), form.get("value", "").strip()[:200], form.get("mode", "")

        def again(status: int, error: str | None = None, receipt: Any = None) -> Any:
            return console.render("people.html", status, title="Erase / export", session=session,
                                  current="/admin/people", csrf=csrf, receipt=receipt, error=error, value=value)

        if kind not in PERSON_KINDS or not value or mode not in ("export", "dry-run", "erase"):
            return again(400, "Choose how to find the person, give a value and an action.")
        if mode == "erase" and form.get("confirm") != "yes":
            return again(400, "Tick the box to confirm the erase.")
        argv = [f"--{kind}", value]
        try:
            if mode == "export":
                text = await asyncio.to_thread(console.person_command, "export", argv)
                return Response(text, media_type="application/json", headers={
                    **HEADERS, "Content-Disposition": 'attachment; filename="export.json"'})
            out = await asyncio.to_thread(console.person_command, "erase",
                                          [*argv, "--json", *(["--dry-run"] if mode == "dry-run" else [])])
            receipt = json.loads(out.strip().splitlines()[-1])
        except (UserError, ValueError, IndexError, SystemExit) as exc:
            said = str(exc).splitlines()[0][:300] if str(exc) else "The request was refused."
            for flag, word in (("--contact: ", "Contact: "), ("--visitor: ", "Visitor id: "),
                               ("--conversation: ", "Conversation id: ")):
                said = said.replace(flag, word)  # the command's flags are the form's fields here
            return again(400, said)
        log("console", "op=erase" if mode == "erase" else "op=erase-dry-run", nodes=receipt.get("nodes"))
        return again(200, receipt=receipt)

    # ------------------------------------------------------------------ the owner's agent sessions
    def session_rows(session: Any) -> list[dict[str, Any]]:
        found = host.first(hooks.OWNER_SESSIONS)
        if found is None:
            return []
        rows = found.list(host.principal, session.user_id)
        for row in rows:
            row["actions"] = {"current": ["stop"], "open": ["resume", "stop"]}.get(
                row["status"], ["resume", *(["purge"] if row.get("transcript") else [])])
        return rows

    def sessions_page_of(session: Any, csrf: str, status: int = 200, error: str | None = None,
                         notice: str | None = None, text: str = "") -> Any:
        from plughost.plugins.admin.owner_sessions import PERMISSION_MODES, SESSION_MODELS

        models = [m.strip() for m in SESSION_MODELS.read(host.env).split(",") if m.strip()]
        return console.render("sessions.html", status, title="Sessions", session=session, csrf=csrf,
                              current="/admin/sessions", rows=session_rows(session), modes=PERMISSION_MODES,
                              models=models, error=error, notice=notice, text=text)

    async def sessions_page(request: Any, session: Any, csrf: str) -> Any:
        return await asyncio.to_thread(sessions_page_of, session, csrf)

    async def sessions_post(request: Any) -> Any:
        from plughost.plugins.admin.owner_sessions import MAX_TEXT, check_levers

        session, form, refused = await console.guarded_post(request)
        if refused is not None or form is None:
            return refused
        csrf = csrf_of(sessions.load_secret(host.home), token_of(request) or "")
        text = form.get("initialMessage", "")
        if not text.strip() or len(text) > MAX_TEXT:
            return await asyncio.to_thread(sessions_page_of, session, csrf, 400,
                                           f"First message: write one, at most {MAX_TEXT} characters.", None, text)
        found = host.first(hooks.OWNER_SESSIONS)
        try:
            mode, model = check_levers(host.env, form.get("permissionMode") or None, form.get("model") or None)
            if found is None:
                raise UserError("sessions: no plugin keeps agent sessions (the channels plugin is off)")
            view = await found.start(host.principal, session.user_id, text, permission_mode=mode, model=model)
        except UserError as exc:
            return await asyncio.to_thread(sessions_page_of, session, csrf, 400, str(exc), None, text)
        log("console", "op=session-start", conversation=view.get("conversation"))
        return RedirectResponse("/admin/sessions", status_code=303, headers=HEADERS)

    async def sessions_change(request: Any) -> Any:
        session, form, refused = await console.guarded_post(request)
        if refused is not None or form is None:
            return refused
        action, number = request.path_params["action"], request.path_params["conversation"]
        found = host.first(hooks.OWNER_SESSIONS)
        if action not in ("stop", "resume", "purge") or not number.isdigit() or found is None:
            return console.render("error.html", 404, title="Not found", detail="There is no such session action.",
                                  session=session)
        try:
            view = await asyncio.to_thread(getattr(found, action), host.principal, session.user_id, int(number))
        except UserError as exc:
            csrf = csrf_of(sessions.load_secret(host.home), token_of(request) or "")
            return await asyncio.to_thread(sessions_page_of, session, csrf, 409, str(exc).split(": ", 1)[-1])
        if view is None:
            return console.render("error.html", 404, title="No such session",
                                  detail="You have no session with that number.", session=session)
        log("console", f"op=session-{action}", conversation=int(number))
        return RedirectResponse("/admin/sessions", status_code=303, headers=HEADERS)

    async def agents_page(request: Any, session: Any, csrf: str) -> Any:
        refused = console.narrowed()
        if refused is not None:
            return refused
        try:
            rows = await asyncio.to_thread(agent_pages.overview, host, console.account or "")
        except UserError as exc:
            return console.render("error.html", 409, title="Public agent", detail=str(exc), session=session, csrf=csrf)
        return console.render("agents.html", title="Public agent", session=session, csrf=csrf, current="/admin/agents",
                              rows=rows)

    def agent_notice(request: Any) -> str | None:
        return {"saved": "Saved; its knowledge was assembled again.", "unchanged": "Nothing changed.",
                "rebuilt": "Its knowledge was assembled again from your public documents.",
                "rebuild-failed": "Assembling its knowledge failed; the log says why."}.get(
            request.query_params.get("notice", ""))

    async def agent_page(request: Any, session: Any, csrf: str, error: str | None = None, status: int = 200) -> Any:
        refused = console.narrowed()
        if refused is not None:
            return refused
        slug = request.path_params["agent"]
        try:
            agent = await asyncio.to_thread(agent_pages.detail, host, console.account or "", slug)
        except UserError as exc:
            agent, error = None, str(exc)
        if agent is None:
            return console.render("error.html", 404, title="No such agent",
                                  detail=error or "This account has no agent of that name.", session=session, csrf=csrf)
        return console.render("agent.html", status, title=f"Agent {slug}", session=session, csrf=csrf,
                              current="/admin/agents", agent=agent, error=error, notice=agent_notice(request))

    async def agent_file_post(request: Any) -> Any:
        session, form, refused = await console.guarded_post(request, agent_pages.MAX_FILE + 4096)
        if refused is not None or form is None:
            return refused
        slug, name = request.path_params["agent"], request.path_params["file"]
        try:
            if await asyncio.to_thread(agent_pages.detail, host, console.account or "", slug) is None:
                raise UserError("agent: this account has no agent of that name")
            changed = await asyncio.to_thread(agent_pages.save, host, console.account or "", slug, name,
                                              form.get("text", ""))
        except UserError as exc:
            token = token_of(request) or ""
            return await agent_page(request, session, csrf_of(sessions.load_secret(host.home), token),
                                    error=str(exc), status=400)
        return RedirectResponse(f"/admin/agents/{slug}?notice={'saved' if changed else 'unchanged'}", status_code=303,
                                headers=HEADERS)

    async def agent_rebuild(request: Any) -> Any:
        session, form, refused = await console.guarded_post(request)
        if refused is not None or form is None:
            return refused
        slug = request.path_params["agent"]
        try:
            if await asyncio.to_thread(agent_pages.detail, host, console.account or "", slug) is None:
                raise UserError("agent: this account has no agent of that name")
        except UserError as exc:
            return console.render("error.html", 404, title="No such agent", detail=str(exc), session=session)
        failed = await asyncio.to_thread(agent_pages.rebuild, host, console.account or "", slug)
        return RedirectResponse(f"/admin/agents/{slug}?notice={'rebuild-failed' if failed else 'rebuilt'}",
                                status_code=303, headers=HEADERS)

    async def not_found(request: Any, session: Any, csrf: str) -> Any:
        return console.render("error.html", 404, title="Not found", detail="There is no such console page.",
                              session=session, csrf=csrf)

    async def stylesheet(request: Any) -> Any:
        return FileResponse(HERE / "static" / "console.css", media_type="text/css; charset=utf-8",
                            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "public, max-age=3600"})

    return [
        Route("/admin", endpoint=signed_in(home), methods=("GET",), name="console-home"),
        Route("/admin/login", endpoint=login_page, methods=("GET",), name="console-login"),
        Route("/admin/login", endpoint=login_post, methods=("POST",), name="console-login-post"),
        Route("/admin/logout", endpoint=logout, methods=("POST",), name="console-logout"),
        Route("/admin/conversations/{conversation}/hand-back", endpoint=hand_back, methods=("POST",),
              name="console-hand-back"),
        Route("/admin/static/console.css", endpoint=stylesheet, methods=("GET",), name="console-css"),
        Route("/admin/leads", endpoint=signed_in(leads), methods=("GET",), name="console-leads"),
        Route("/admin/leads/{lead}", endpoint=signed_in(lead_page), methods=("GET",), name="console-lead"),
        Route("/admin/leads/{lead}/reply", endpoint=lead_reply, methods=("POST",), name="console-lead-reply"),
        Route("/admin/leads/{lead}/done", endpoint=lead_done, methods=("POST",), name="console-lead-done"),
        Route("/admin/tasks", endpoint=signed_in(tasks), methods=("GET",), name="console-tasks"),
        Route("/admin/tasks/{task}", endpoint=signed_in(task_page), methods=("GET",), name="console-task"),
        Route("/admin/audit", endpoint=signed_in(audit), methods=("GET",), name="console-audit"),
        Route("/admin/memory", endpoint=signed_in(memory), methods=("GET",), name="console-memory"),
        Route("/admin/health", endpoint=signed_in(health_page), methods=("GET",), name="console-health"),
        Route("/admin/health/doctor", endpoint=doctor_post, methods=("POST",), name="console-doctor"),
        Route("/admin/people", endpoint=signed_in(people), methods=("GET",), name="console-people"),
        Route("/admin/people", endpoint=people_post, methods=("POST",), name="console-people-post"),
        Route("/admin/logs", endpoint=signed_in(logs), methods=("GET",), name="console-logs"),
        Route("/admin/sessions", endpoint=signed_in(sessions_page), methods=("GET",), name="console-sessions"),
        Route("/admin/sessions", endpoint=sessions_post, methods=("POST",), name="console-sessions-start"),
        Route("/admin/sessions/{conversation}/{action}", endpoint=sessions_change, methods=("POST",),
              name="console-sessions-change"),
        Route("/admin/agents", endpoint=signed_in(agents_page), methods=("GET",), name="console-agents"),
        Route("/admin/agents/{agent}", endpoint=signed_in(agent_page), methods=("GET",), name="console-agent"),
        Route("/admin/agents/{agent}/files/{file}", endpoint=agent_file_post, methods=("POST",),
              name="console-agent-file"),
        Route("/admin/agents/{agent}/rebuild", endpoint=agent_rebuild, methods=("POST",), name="console-agent-rebuild"),
        Route("/admin/conversations", endpoint=signed_in(conversations), methods=("GET",),
              name="console-conversations"),
        Route("/admin/conversations/{conversation}", endpoint=signed_in(conversation_page), methods=("GET",),
              name="console-conversation"),
        Route("/admin/conversations/{conversation}/reply", endpoint=conversation_reply, methods=("POST",),
              name="console-conversation-reply"),
        Route("/admin/{rest:path}", endpoint=signed_in(not_found), methods=("GET",), name="console-not-found"),
    ]
