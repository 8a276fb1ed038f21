"""Erase on request and export: ``plughost erase`` and ``plughost export`` (docs/cli.md#erase-and-export).

A request names a person one of three ways: ``--contact`` (an email address, matched ignoring case,
or a phone number, matched by its digits: ``+49 170 1234567``, ``0049-170-1234567`` and
``0170 1234567`` are one number), ``--visitor`` (a channel sender id) or ``--conversation`` (a
Conversation id). What it reaches, in the account of ``ACCOUNT_ID``, soft-deleted nodes included:

- every node that holds the value: in its id or any property (a Message's ``text``, a follow-up
  Task's ``inputs``, a ToolCall's ``input`` / ``output``, a Briefing, an Entity, a profile ...);
- for a visitor, its Conversations (``sender``); for every Conversation reached, its Messages and
  every node hanging from it (``HAS_MESSAGE``, ``HAS_BRIEFING``, ``HAS_TOOL_CALL``, a Task
  ``RAISED_DURING`` it) or naming it (``conversationId``);
- a visitor's own memory (docs/channels.md#visitor-memory): for ``--visitor`` (a webchat visitor
  token or a sender id) and ``--contact`` (their number), the Messages and ``VisitorSlice`` nodes
  keyed by its hash (for ``--visitor`` their Conversations too, and every Message and slice of
  the visitor key of any Message reached; for ``--conversation``, that conversation's slices);
- for every Task reached, its time records (``TimeEntry``, ``TimeAdjustment``);
- the Entity and Fact nodes derived only from what is erased (no other node links them).

The store's ``erase_nodes`` removes them with their edges, embeddings and full-text terms at
once (no grace period). The receipt counts what went (nodes per label, edges, embeddings,
full-text documents) and holds no personal data; ``--dry-run`` counts the same and removes nothing.
Admin only: it reads and deletes without per-row guards.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plughost import CliCommand, GraphStore, Guards, Node, UserError, log
from plughost.api.store import (
    CONVERSATION_LABEL,
    DERIVED_LABELS,
    HAS_MESSAGE,
    MESSAGE_LABEL,
    TEXT_PROPERTIES,
    VISITOR_SLICE_LABEL,
    require_admin,
    visitor_key,
)

ATTACHED = frozenset({HAS_MESSAGE, "HAS_BRIEFING", "HAS_TOOL_CALL", "RAISED_DURING"})
"""Edges between a Conversation and what hangs from it (either direction)."""
PAGE = 1000
EMAIL = re.compile(r"[^\s@]{1,64}@[^\s@]{1,253}\.[^\s@]{1,63}")
PHONE_CHARS = re.compile(r"\+?[\d ().\-/]+")
PHONE_RUN = re.compile(r"\+?\d[\d ().\-/]{4,24}\d")
MIN_PHONE_DIGITS = 7
ID_CHARS = re.compile(r"[^\x00-\x1f\x7f]{1,512}")


def _phone_key(text: str) -> str:
    """A phone number's digits, an international ``00`` prefix dropped."""
    digits = re.sub(r"\D", "", text)
    return digits[2:] if digits.startswith("00") else digits


def _same_phone(a: str, b: str) -> bool:
    """The same digits (``+49`` and ``0049`` are one prefix). A national form (``0170 …``) is not
    matched to an international one: the country it dropped is unknown, and a guess erases other
    people's numbers ending alike; the person's other form is a second request."""
    return a == b


@dataclass
class Request:
    """What to erase: the kind of request and how a stored string holds it."""

    kind: str  # contact | visitor | conversation
    value: str
    prefilter: str | None  # lower-case ASCII the store may prefilter rows by
    holds: Callable[[str], bool]


def _token_test(value: str) -> Callable[[str], bool]:
    """Whether a string holds ``value`` as a whole token (not inside a longer id)."""
    token = re.compile(rf"(?<![\w-]){re.escape(value)}(?![\w-])")
    return lambda s: token.search(s) is not None


def request_of(args: argparse.Namespace) -> Request:
    """The one request the flags name; bad input is one line naming the flag (exit 2)."""
    given = [(flag, getattr(args, flag)) for flag in ("contact", "visitor", "conversation")
             if getattr(args, flag, None) is not None]
    if len(given) != 1:
        raise UserError("--contact / --visitor / --conversation: expected exactly one of them"
                        + (f", got {len(given)}" if given else ""))
    flag, raw = given[0]
    value = str(raw).strip()
    if flag == "contact" and any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UserError("--contact: expected an email address or a phone number, without control characters")
    if flag == "contact":
        if "@" in value:
            if not EMAIL.fullmatch(value):
                raise UserError("--contact: expected an email address (name@example.com) or a phone number")
            pattern = re.compile(rf"(?<![\w.+-]){re.escape(value)}(?![\w-])(?!\.[\w-])", re.IGNORECASE)
            return Request("contact", value, value.lower() if value.isascii() else None,
                           lambda s: pattern.search(s) is not None)
        key = _phone_key(value)
        if not PHONE_CHARS.fullmatch(value) or len(key) < MIN_PHONE_DIGITS:
            raise UserError(f"--contact: expected an email address or a phone number of at least "
                            f"{MIN_PHONE_DIGITS} digits")

        def holds_phone(s: str) -> bool:
            return any(_same_phone(key, _phone_key(m.group())) for m in PHONE_RUN.finditer(s))

        return Request("contact", value, None, holds_phone)
    if not value or not ID_CHARS.fullmatch(str(raw)):  # the id as given: a trailing newline is not trimmed away
        raise UserError(f"--{flag}: expected a non-empty id of at most 512 characters, without control characters")
    return Request(flag, value, value.lower() if value.isascii() else None, _token_test(value))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


DERIVED_PROPERTIES = frozenset({"searchContext"})
"""Properties built from other nodes (a turn's indexed form holds the turns before it): they never
make a node the person's; :func:`erase` rebuilds them once the nodes they copied are gone."""


def holds(node: Node, test: Callable[[str], bool]) -> bool:
    return test(node.id) or any(test(s) for k, v in node.properties.items() if k not in DERIVED_PROPERTIES
                                for s in _strings(v))


def _scan(store: GraphStore, account: str, prefilter: str | None, test: Callable[[str], bool]) -> dict[str, Node]:
    found: dict[str, Node] = {}
    after = ""
    while True:
        page = store.scan_nodes(account_id=account, contains=prefilter, after=after, limit=PAGE)
        for node in page:
            if holds(node, test):
                found[node.id] = node
        if len(page) < PAGE:
            return found
        after = page[-1].id


def _get(store: GraphStore, account: str, node_id: str) -> Node | None:
    return store.get(node_id, guards=Guards(account), include_deleted=True)


def request_keys(account: str, request: Request) -> set[str]:
    """The visitor keys a request names itself: a visitor token or sender id on every channel, a number."""
    if request.kind == "visitor":
        return {visitor_key(account, f"{channel}:{request.value}") for channel in ("webchat", "telegram", "whatsapp")}
    if request.kind == "contact" and "@" not in request.value:
        return {visitor_key(account, f"phone:{_phone_key(request.value)}")}
    return set()


def _keyed(store: GraphStore, account: str, key: str) -> dict[str, Node]:
    """A visitor key's Messages and slices."""
    guards = Guards(account)
    rows = [*store.find(guards=guards, labels=[MESSAGE_LABEL], where={"visitorKey": key}, limit=1_000_000),
            *store.find(guards=guards, labels=[VISITOR_SLICE_LABEL], where={"sliceToken": key}, limit=1_000_000)]
    return {n.id: n for n in rows}


def collect(store: GraphStore, account: str, request: Request) -> dict[str, Node]:
    """Every node the request reaches (the module docstring says which), by id."""
    found = _scan(store, account, request.prefilter, request.holds)
    if request.kind == "conversation" and request.value not in found:
        node = _get(store, account, request.value)
        if node is not None:
            found[node.id] = node
    done: set[str] = set()
    keys, seen = request_keys(account, request), set[str]()
    while True:  # a visitor's keys, and the conversations reached: what hangs from them or names them
        if request.kind == "visitor":
            keys |= {str(n.properties["visitorKey"]) for n in found.values()
                     if isinstance(n.properties.get("visitorKey"), str)}
        fresh = sorted(keys - seen)
        seen.update(fresh)
        for key in fresh:
            keyed = _keyed(store, account, key)
            found.update(keyed)
            for conv in {str(n.properties["conversationId"]) for n in keyed.values()
                         if request.kind == "visitor" and n.properties.get("conversationId")} - found.keys():
                if (node := _get(store, account, conv)) is not None and CONVERSATION_LABEL in node.labels:
                    found[node.id] = node
        todo = [n.id for n in found.values() if CONVERSATION_LABEL in n.labels and n.id not in done]
        if not todo:
            if fresh:
                continue
            break
        done.update(todo)
        for conv in todo:
            found.update(_scan(store, account, conv.lower() if conv.isascii() else None, _token_test(conv)))
        for src, etype, dst, _ in store.node_edges(todo, account_id=account):
            other = dst if src in done else src
            if etype in ATTACHED and other not in found and (node := _get(store, account, other)) is not None:
                found[node.id] = node
    for task in [n.id for n in found.values() if "Task" in n.labels]:  # its time records go with it
        for label in ("TimeEntry", "TimeAdjustment"):
            found.update((n.id, n) for n in store.find(guards=Guards(account), labels=[label],
                                                       where={"taskId": task}, limit=1_000_000))
    while True:  # derived nodes no surviving node links
        edges = store.node_edges(list(found), account_id=account)
        targets = {dst for src, _, dst, _ in edges if src in found and dst not in found}
        derived = [n for n in (_get(store, account, t) for t in sorted(targets))
                   if n is not None and DERIVED_LABELS.intersection(n.labels)]
        if not derived:
            return found
        sources: dict[str, set[str]] = {n.id: set() for n in derived}
        for src, _, dst, _ in store.node_edges([n.id for n in derived], account_id=account):
            if dst in sources:
                sources[dst].add(src)
        orphans = [n for n in derived if sources[n.id] <= found.keys()]
        if not orphans:
            return found
        found.update((n.id, n) for n in orphans)


def _indexed(node: Node) -> bool:
    """Whether the node has text in the full-text union (what the stores index)."""
    for key in TEXT_PROPERTIES:
        value = node.properties.get(key)
        if isinstance(value, (list, tuple)):
            if any(v is not None and str(v) for v in value):
                return True
        elif value is not None and str(value):
            return True
    return False


def _label(node: Node) -> str:
    return node.labels[0] if node.labels else "(none)"


def receipt(found: dict[str, Node], counts: dict[str, int]) -> dict[str, Any]:
    labels = Counter(_label(n) for n in found.values())
    return {"nodes": counts["nodes"], "labels": dict(sorted(labels.items())), "edges": counts["edges"],
            "embeddings": counts["embeddings"], "fulltext": counts["fulltext"]}


def senders_of(found: dict[str, Node], request: Request) -> list[str]:
    """The channel sender ids an erase reached: the visitor asked for, the Conversations' senders and
    the user Messages' (what other plugins key their files by)."""
    out = {request.value} if request.kind == "visitor" else set()
    for n in found.values():
        if CONVERSATION_LABEL in n.labels or (MESSAGE_LABEL in n.labels and n.properties.get("role") == "user"):
            sender = n.properties.get("sender")
            if isinstance(sender, str) and sender and sender != "owner":
                out.add(sender)
    return sorted(out)


def erase_outside(host: Any, account: str, request: Request, found: dict[str, Node], *,
                  dry_run: bool) -> tuple[dict[str, int], list[str]]:
    """Each plugin's files outside the store (``plughost_person_erased``): counts, and the plugins that failed."""
    from plughost.api import hooks

    tally: Counter[str] = Counter()
    errors = host.call_each(hooks.PERSON_ERASED, account_id=account, senders=senders_of(found, request),
                            holds=request.holds, dry_run=dry_run, tally=tally)
    return dict(sorted((k, v) for k, v in tally.items())), sorted({e.plugin for e in errors})


def erase(store: GraphStore, account: str, request: Request, *, dry_run: bool,
          host: Any = None) -> dict[str, Any]:
    """Collect and (unless ``dry_run``) delete; the receipt of counts (``files``: what other plugins
    removed outside the store, when ``host`` is given)."""
    found = collect(store, account, request)
    if dry_run:
        counts = {"nodes": len(found), "edges": len(store.node_edges(list(found), account_id=account)),
                  "embeddings": sum(n.has_embedding for n in found.values()),
                  "fulltext": sum(_indexed(n) for n in found.values())}
    else:
        # the conversations that keep turns after an erased one: their indexed form is rebuilt
        kept = sorted({str(n.properties["conversationId"]) for n in found.values()
                       if MESSAGE_LABEL in n.labels and n.properties.get("conversationId")
                       and str(n.properties["conversationId"]) not in found})
        counts = store.erase_nodes(list(found), account_id=account)
        if kept:
            from plughost.plugins.memory.reindex import reindex_contexts

            reindex_contexts(store, None, account_id=account, conversation_ids=kept)
            store.erase_nodes([], account_id=account)  # no node: the full-text merge and the WAL truncation again
    result = receipt(found, counts)
    if host is not None:
        result["files"], result["failed"] = erase_outside(host, account, request, found, dry_run=dry_run)
    return result


def export(store: GraphStore, account: str, request: Request) -> dict[str, Any]:
    """Every node the request reaches: id, labels, properties (never an embedding), deleted or not,
    and every edge touching them."""
    found = collect(store, account, request)
    nodes = [{"id": n.id, "labels": list(n.labels), "properties": n.properties, "deleted": n.deleted}
             for n in sorted(found.values(), key=lambda n: n.id)]
    edges = [{"source": s, "type": t, "target": d, "properties": p}
             for s, t, d, p in store.node_edges(list(found), account_id=account)]
    return {"request": request.kind, "account": account, "nodes": nodes, "edges": edges}


def _line(result: dict[str, Any]) -> str:
    labels = ",".join(f"{k}:{v}" for k, v in result["labels"].items()) or "none"
    files = ",".join(f"{k}:{v}" for k, v in result.get("files", {}).items() if v) or "none"
    return (f"nodes={result['nodes']} labels={labels} edges={result['edges']} embeddings={result['embeddings']} "
            f"fulltext={result['fulltext']}" + (f" files={files}" if "files" in result else ""))


def _target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--contact", metavar="VALUE", help="an email address or phone number the person left")
    parser.add_argument("--visitor", metavar="ID", help="a channel sender id, or a webchat visitor token (their memory)")
    parser.add_argument("--conversation", metavar="ID", help="a Conversation id")


def configure_erase(parser: argparse.ArgumentParser) -> None:
    _target(parser)
    parser.add_argument("--dry-run", action="store_true", help="count what would go; remove nothing")
    parser.add_argument("--json", action="store_true", help="the receipt as JSON")


def configure_export(parser: argparse.ArgumentParser) -> None:
    _target(parser)
    parser.add_argument("--out", type=Path, default=None, help="write the JSON to this new file (mode 0600)")


def _setup(args: argparse.Namespace, host: Any, what: str) -> tuple[GraphStore, str, Request]:
    request = request_of(args)
    account = str(host.principal.require_account(f"the id of the account to {what} from"))
    require_admin(host.principal, what)  # it reads and deletes without per-row guards
    store = host.store()
    if not hasattr(store, "erase_nodes"):
        raise UserError(f"{what}: the {getattr(store, 'backend', '?')} store cannot erase nodes (no erase_nodes)")
    return store, account, request


def run_erase(args: argparse.Namespace, host: Any) -> int:
    store, account, request = _setup(args, host, "erase")
    result = erase(store, account, request, dry_run=args.dry_run, host=host)
    failed = result.pop("failed", [])
    if args.json:
        print(json.dumps({"dryRun": bool(args.dry_run), **result}, sort_keys=True))
    else:
        print(("erase dry-run (nothing removed): " if args.dry_run else "erased: ") + _line(result))
    files = ",".join(f"{k}:{v}" for k, v in result.get("files", {}).items() if v) or None
    log("erase", "op=dry-run" if args.dry_run else "op=done", request=request.kind, account=account[:8],
        nodes=result["nodes"], labels=",".join(f"{k}:{v}" for k, v in result["labels"].items()) or None,
        edges=result["edges"], embeddings=result["embeddings"], fulltext=result["fulltext"], files=files)
    for plugin in failed:
        print(f"plughost erase: plugin '{plugin}' could not erase its files outside the store (see the log); "
              "run the same erase again", file=sys.stderr)
    return 1 if failed else 0


def run_export(args: argparse.Namespace, host: Any) -> int:
    store, account, request = _setup(args, host, "export")
    data = export(store, account, request)
    text = json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True, default=str) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        try:
            fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            raise UserError(f"--out: {args.out} exists; expected a new file") from None
        except OSError as exc:
            raise UserError(f"--out: cannot create {args.out} ({exc.strerror})") from None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    log("export", "op=done", request=request.kind, account=account[:8], nodes=len(data["nodes"]),
        edges=len(data["edges"]), out="file" if args.out is not None else "stdout")
    return 0


def commands() -> list[CliCommand]:
    return [CliCommand("erase", "remove every node holding a person's contact, visitor id or conversation, "
                       "with its edges, embeddings and full-text terms (admin only)", configure_erase, run_erase),
            CliCommand("export", "a person's data (what erase would remove) as JSON (admin only)",
                       configure_export, run_export)]
