"""Reports: durable workflow output (docs/memory.md#reports) — ``memory-report-write|read-latest|list``.

A report is a ``Report`` node embedded on title + body. Writes are idempotent on
(accountId, title, minute of occurredAt) by construction: the node id is derived from that
triple, so a repeated call (or two concurrent writers) lands on one node. Reports are parented
by an inbound ``PRODUCED`` edge from the session's Conversation, else the account's AdminUser.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from plughost import (
    AccountUnset,
    CliCommand,
    Embedder,
    GraphStore,
    Guards,
    Principal,
    StateKey,
    Tool,
    UserError,
    WriteDenied,
    log,
)
from plughost.api.principals import resolve
from plughost.api.store import guarded_upsert_many
from plughost.api.util import parse_time, redact_text
from plughost.plugins.memory.work.preferences import owner_user

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

BODY_MAX = 10_000
TITLE_MAX = 300
SCAN_MAX = 100_000


def _principal(principal: Principal | None) -> Principal:
    if principal is None or not principal.account:
        raise AccountUnset("ACCOUNT_ID: not set; expected the id of the account reports belong to (an account under "
                           "PLUGHOST_HOME/accounts/)")
    return principal


def _occurred(value: str | None) -> str:
    if value is None:
        return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return parse_time(value, "occurredAt").astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def report_id(account: str, title: str, occurred_at: str, guards: Guards | None = None) -> str:
    """Stable per (account, title, minute): the idempotency key is the node id.

    A narrowed process's reports are keyed by its guards too (scopes, agent), so its idempotency
    lookup can neither find nor land on a report it cannot read (an admin's, say).
    """
    minute = occurred_at[:16]
    key = f"{account}\0{title}\0{minute}"
    if guards is not None and guards.narrowed:
        key += f"\0{','.join(guards.allowed_scopes or ()) if guards.allowed_scopes is not None else '*'}" \
               f"\0{guards.agent_slug or ''}"
    return "rpt_" + hashlib.sha256(key.encode()).hexdigest()[:24]


def _metadata(node: Any) -> dict[str, Any]:
    p = node.properties
    return {"reportId": node.id, "title": p.get("title"), "keywords": p.get("keywords") or [],
            "sourceWorkflow": p.get("sourceWorkflow"), "occurredAt": p.get("occurredAt"),
            "bodyChars": len(p.get("body") or "")}


class Reports:
    def __init__(self, store: GraphStore, embedder: Embedder | None, env: Mapping[str, str],
                 principal: Principal | None = None) -> None:
        self.store, self.embedder, self.env = store, embedder, env
        self.principal = principal or resolve(env)  # the call's principal, resolved once

    def guards(self) -> Guards:
        return _principal(self.principal).guards

    def _parent(self) -> str | None:
        session = _principal(self.principal).session_node
        if session:
            node = self.store.get(session, guards=self.guards())
            if node is not None and "Conversation" in node.labels:
                return node.id
            found = self.store.find(guards=self.guards(), labels=["Conversation"], where={"sessionId": session},
                                    limit=1)
            if found:
                return found[0].id
        owner = owner_user(self.store, self.guards())
        admins = [owner] if owner is not None else self.store.find(guards=self.guards(), labels=["AdminUser"], limit=1)
        return admins[0].id if admins else None

    def write(self, *, title: str, body: str, keywords: list[str] | None = None, sourceWorkflow: str | None = None,
              occurredAt: str | None = None) -> dict[str, Any]:  # noqa: N803
        started = time.perf_counter()
        guards = self.guards()
        account = guards.account_id
        title = (title or "").strip()
        if not title or len(title) > TITLE_MAX:
            raise UserError(f"title: expected 1 to {TITLE_MAX} characters")
        if not isinstance(body, str) or not body.strip():
            raise UserError("body: expected non-empty text")
        if len(body) > BODY_MAX:
            raise UserError(f"body: {len(body):,} characters; expected at most {BODY_MAX:,} (nothing was written)")
        tags = list(dict.fromkeys(k.strip().lower() for k in (keywords or []) if k and k.strip()))
        when = _occurred(occurredAt)
        rid = report_id(account, title, when, guards)
        existing = self.store.get(rid, guards=guards)
        if existing is not None:
            log("reports", "op=write", reportId=rid, keywords=",".join(tags) or None,
                ms=round((time.perf_counter() - started) * 1000), idempotent=1)
            return {**_metadata(existing), "idempotent": True}
        # Admin processes write admin reports; a narrowed one writes into its own first scope.
        scope = "admin" if guards.allowed_scopes is None else (guards.allowed_scopes or (None,))[0]
        title, body = redact_text(title), redact_text(body)  # agent-written, like a briefing: no secret kept
        props: dict[str, Any] = {"title": title, "body": body, "keywords": tags, "occurredAt": when}
        if scope is not None:
            props["scope"] = scope
        if sourceWorkflow:
            props["sourceWorkflow"] = sourceWorkflow
        row: dict[str, Any] = {"id": rid, "labels": ["Report"], "properties": props}
        vector = None
        if self.embedder is not None:
            try:
                vector = self.embedder.embed([f"{title}\n\n{body}"])[0]
            except Exception as exc:
                log("graph-write", "warn", reason="embed-failed", labels="Report", node=rid,
                    error=f"{type(exc).__name__}: {exc}"[:160])
        if vector is not None:
            row["embedding"] = vector
        rows = [row]
        parent = self._parent()
        source = self.store.get(parent, guards=guards) if parent else None
        if source is not None:
            rows.append({"id": parent, "labels": list(source.labels), "properties": {},
                         "edges": [{"type": "PRODUCED", "to": rid}]})
        else:
            parent = None
        try:
            guarded_upsert_many(self.store, rows, guards=guards)
        except WriteDenied as exc:
            raise UserError(f"memory-report-write: {exc} ({exc.reason})") from None
        log("reports", "op=write", reportId=rid, keywords=",".join(tags) or None,
            ms=round((time.perf_counter() - started) * 1000))
        node = self.store.get(rid, guards=guards)
        if node is None:  # written under these guards, so readable under them
            raise UserError(f"memory-report-write: report '{rid}' is not readable after writing (store-error)")
        return {**_metadata(node), "idempotent": False, "parent": parent, "embedded": vector is not None}

    def _all(self, *, keyword: str | None = None, source_workflow: str | None = None) -> list[Any]:
        if keyword:
            nodes = [h.node for h in self.store.keyword_search(keyword, SCAN_MAX, guards=self.guards(),
                                                                labels=["Report"])]
            if source_workflow:
                nodes = [n for n in nodes if n.properties.get("sourceWorkflow") == source_workflow]
        else:
            where = {"sourceWorkflow": source_workflow} if source_workflow else None
            nodes = self.store.find(guards=self.guards(), labels=["Report"], where=where, limit=SCAN_MAX)
        return sorted(nodes, key=lambda n: (n.properties.get("occurredAt") or "", n.id), reverse=True)

    def read_latest(self, *, keyword: str, limit: int = 1) -> dict[str, Any]:
        started = time.perf_counter()
        _principal(self.principal)
        if limit < 1:
            raise UserError("limit: expected a positive integer")
        nodes = self._all(keyword=keyword)[:limit]
        log("reports", "op=read-latest", reportId=nodes[0].id if nodes else None, keywords=keyword.lower(),
            ms=round((time.perf_counter() - started) * 1000), hits=len(nodes))
        return {"reports": [{**_metadata(n), "body": n.properties.get("body")} for n in nodes]}

    def list(self, *, keyword: str | None = None, sourceWorkflow: str | None = None, limit: int = 20,  # noqa: A003, N803
             cursor: str | None = None) -> dict[str, Any]:
        """Newest first, metadata only. ``cursor`` (from ``nextCursor``) pages stably while reports arrive."""
        started = time.perf_counter()
        _principal(self.principal)
        if limit < 1 or limit > 200:
            raise UserError("limit: expected an integer from 1 to 200")
        nodes = self._all(keyword=keyword, source_workflow=sourceWorkflow)
        total = len(nodes)
        if cursor:
            occurred, _, last_id = cursor.partition("|")
            if not last_id:
                raise UserError("cursor: expected the nextCursor value of a previous page")
            nodes = [n for n in nodes if (n.properties.get("occurredAt") or "", n.id) < (occurred, last_id)]
        page = nodes[:limit]
        more = len(nodes) > limit
        next_cursor = f"{page[-1].properties.get('occurredAt') or ''}|{page[-1].id}" if page and more else None
        log("reports", "op=list", reportId=None, keywords=(keyword or "").lower() or None,
            ms=round((time.perf_counter() - started) * 1000), total=total)
        return {"reports": [_metadata(n) for n in page], "total": total, "nextCursor": next_cursor}


REPORTS: StateKey[Reports] = StateKey("memory.reports")


def service(host: Host) -> Reports:
    return host.state.setdefault(REPORTS, lambda: Reports(host.store(), host.embedder(), host.env))


def report_tools(host: Host) -> list[Tool]:
    def memory_report_write(**args: Any) -> Any:
        return service(host).write(**args)

    def memory_report_read_latest(**args: Any) -> Any:
        return service(host).read_latest(**args)

    def memory_report_list(**args: Any) -> Any:
        return service(host).list(**args)

    return [Tool("memory-report-write", memory_report_write),
            Tool("memory-report-read-latest", memory_report_read_latest),
            Tool("memory-report-list", memory_report_list)]


# ---------------------------------------------------------------------- `plughost report`
REPORT_HELP = "reports: write one (from a file or stdin), show the latest per keyword, list metadata"


def configure_cli(parser: Any) -> None:
    sub = parser.add_subparsers(dest="report_action", metavar="ACTION", required=True)
    w = sub.add_parser("write", help="write a report; the body comes from FILE or stdin")
    w.add_argument("--title", required=True)
    w.add_argument("--file", help="body file (default: read stdin)")
    w.add_argument("--keywords", default="", help="comma list of keywords")
    w.add_argument("--source-workflow")
    latest = sub.add_parser("latest", help="the newest report(s) with a keyword")
    latest.add_argument("keyword")
    latest.add_argument("--limit", type=int, default=1)
    ls = sub.add_parser("list", help="report metadata, newest first")
    ls.add_argument("--keyword")
    ls.add_argument("--source-workflow")
    ls.add_argument("--limit", type=int, default=20)
    ls.add_argument("--cursor")
    for p in (w, latest, ls):
        p.add_argument("--json", action="store_true", help="print JSON")


def run_cli(args: Any, host: Host) -> int:
    reports = service(host)
    if args.report_action == "write":
        if args.file:
            try:
                with open(args.file, encoding="utf-8") as fh:
                    body = fh.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise UserError(f"--file {args.file}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
        else:
            body = sys.stdin.read()
        result = reports.write(title=args.title, body=body,
                               keywords=[k for k in args.keywords.split(",") if k.strip()],
                               sourceWorkflow=args.source_workflow)
    elif args.report_action == "latest":
        result = reports.read_latest(keyword=args.keyword, limit=args.limit)
    else:
        result = reports.list(keyword=args.keyword, sourceWorkflow=args.source_workflow, limit=args.limit,
                              cursor=args.cursor)
    if args.json or args.report_action == "write":
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 0
    rows = result["reports"]
    for r in rows:
        print(f"{r['occurredAt']}  {r['reportId']}  {r['title']}  [{', '.join(r['keywords'])}]")
        if args.report_action == "latest":
            print(f"\n{r['body']}\n")
    if args.report_action == "list" and result.get("nextCursor"):
        print(f"next page: --cursor '{result['nextCursor']}'")
    return 0


def report_commands() -> list[Any]:
    return [CliCommand("report", REPORT_HELP, configure_cli, run_cli)]
