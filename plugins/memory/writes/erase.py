"""Erase on request and export: ``plughost erase`` and ``plughost export`` (docs/cli.md#erase-and-export).

A request names one person by one of their identifiers: ``--contact`` (an email address, ignoring
case, or a phone number, by its digits: ``+49 170 1234567`` and ``0049-170-1234567`` are one
number), ``--visitor`` (a webchat visitor token or a channel sender id) or ``--conversation`` (a
Conversation id). It is matched against :data:`IDENTIFIER_PROPERTIES` alone, never a status, role,
scope, title or message text. What it reaches, in the account of ``ACCOUNT_ID``, soft-deleted nodes
included, grows until nothing new is found:

- the nodes whose identifier properties hold one of the person's identifiers;
- every Conversation they took part in, and everything of it: the nodes naming it
  (``conversationId``: its Messages, the leads raised in it, its slices) or hanging from it
  (``HAS_MESSAGE``, ``HAS_BRIEFING``, ``HAS_TOOL_CALL``, a Task ``RAISED_DURING`` it);
- the identifiers those hold in turn: their conversations' senders, the visitor keys of their user
  Messages (every conversation of the same browser or number), their leads' contacts;
- for every Task reached, its time records (``TimeEntry``, ``TimeAdjustment``);
- the Entity and Fact nodes derived only from what is erased (no other node links them).

:func:`collect` computes that set for both erase and export, so the receipt and the export count
the same nodes. The store's ``erase_nodes`` removes them with their edges, embeddings and full-text
terms at once (no grace period). The receipt counts what went (nodes per label, edges, embeddings,
full-text documents) and the ``mentions``: nodes left that hold one of the person's contacts in
their text (an owner's note, another visitor's message), not theirs, listed by id in the export
for the operator. ``--dry-run`` counts the same and removes nothing. Admin only: it reads and
deletes without per-row guards.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plughost import CliCommand, GraphStore, Node, Principal, UserError, log
from plughost.api import hooks
from plughost.api.store import (
    CONVERSATION_LABEL,
    DERIVED_LABELS,
    HAS_MESSAGE,
    MESSAGE_LABEL,
    TEXT_PROPERTIES,
    VISITOR_SLICE_LABEL,
    conversation_node_id,
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


@dataclass
class Request:
    """What to erase: the kind of request and its value (normalised: an email lower case, a phone
    number its digits)."""

    kind: str  # contact | visitor | conversation
    value: str
    contact: str | None = None  # email | phone, for a contact


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
            return Request("contact", value.lower(), "email")
        key = _phone_key(value)
        if not PHONE_CHARS.fullmatch(value) or len(key) < MIN_PHONE_DIGITS:
            raise UserError(f"--contact: expected an email address or a phone number of at least "
                            f"{MIN_PHONE_DIGITS} digits")
        return Request("contact", key, "phone")
    if not value or not ID_CHARS.fullmatch(str(raw)):  # the id as given: a trailing newline is not trimmed away
        raise UserError(f"--{flag}: expected a non-empty id of at most 512 characters, without control characters")
    return Request(flag, value)


# ------------------------------------------------------------------ who the person is
IDENTIFIER_PROPERTIES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "email": (("Task", "inputs", "contact"), (MESSAGE_LABEL, "senderAddress", "user")),
    "phone": (("Task", "inputs", "contact"), (MESSAGE_LABEL, "senderPhone", ""),
              (MESSAGE_LABEL, "sender", "whatsapp"), (CONVERSATION_LABEL, "sender", "whatsapp")),
    "visitor-key": ((MESSAGE_LABEL, "visitorKey", ""), (VISITOR_SLICE_LABEL, "sliceToken", "")),
    "sender": ((CONVERSATION_LABEL, "sender", ""), (MESSAGE_LABEL, "sender", "user")),
    "conversation": ((CONVERSATION_LABEL, "id", ""), ("*", "conversationId", "")),
}
"""The only properties a request is matched against, per kind of identifier: ``(label, property,
qualifier)``. A contact is a follow-up lead's ``inputs.contact`` (the address or number the visitor
left), an imported mail's ``senderAddress`` (a user Message's), a Message's ``senderPhone``, a WhatsApp sender (their number); a webchat visitor token, a
Telegram or WhatsApp sender and a number are matched through their hash (``visitorKey`` on user
Messages, ``sliceToken`` on slices); a sender id is a Conversation's ``sender`` or a user Message's
(``qualifier``: the Message's ``role``, or for a ``sender`` the channel whose sender ids are phone
numbers); a Conversation id is itself or any node's ``conversationId``. Never ``status``, ``role``,
``scope``, a title or message text: a visitor named ``answered`` is one Conversation's sender, not
every answered Message."""

NOT_A_PERSON = frozenset({"", "owner", "agent", "admin", "system"})
"""Sender values that name the system's side of a conversation, never a visitor."""


def _contact_of(node: Node) -> str | None:
    """The contact a follow-up lead holds (``inputs.contact``), if any."""
    inputs = node.properties.get("inputs")
    if isinstance(inputs, str):
        try:
            inputs = json.loads(inputs)
        except ValueError:
            return None
    value = inputs.get("contact") if isinstance(inputs, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _norm_contact(value: str) -> tuple[str, str] | None:
    """(email | phone, normalised value) of a stored contact."""
    if "@" in value:
        return ("email", value.strip().lower()) if EMAIL.fullmatch(value.strip()) else None
    key = _phone_key(value)
    return ("phone", key) if PHONE_CHARS.fullmatch(value.strip()) and len(key) >= MIN_PHONE_DIGITS else None


@dataclass
class Record:
    """What identifies a stored node, read once from the account's scan (no text kept)."""

    id: str
    labels: tuple[str, ...]
    conversation: str | None
    visitor_key: str | None
    sender: str | None  # a Conversation's or a user Message's sender id
    contacts: frozenset[tuple[str, str]]
    task: str | None  # a time record's taskId


def record_of(node: Node) -> Record:
    p = node.properties
    labels = tuple(node.labels)

    def text(key: str) -> str | None:
        value = p.get(key)
        return value if isinstance(value, str) and value else None

    contacts: set[tuple[str, str]] = set()
    is_msg, is_conv = MESSAGE_LABEL in labels, CONVERSATION_LABEL in labels
    if "Task" in labels and (c := _contact_of(node)) and (n := _norm_contact(c)):
        contacts.add(n)
    if is_msg and (phone := text("senderPhone")) and (n := _norm_contact(phone)) and n[0] == "phone":
        contacts.add(n)
    if is_msg and p.get("role") == "user" and (address := text("senderAddress")) and (n := _norm_contact(address)) \
            and n[0] == "email":  # an imported mail's sender (memory import-archive)
        contacts.add(n)
    sender = text("sender") if is_conv or (is_msg and p.get("role") == "user") else None
    if (is_msg or is_conv) and sender and p.get("channel") == "whatsapp" and \
            len(key := _phone_key(sender)) >= MIN_PHONE_DIGITS:
        contacts.add(("phone", key))
    key_prop = text("visitorKey") if is_msg else text("sliceToken") if VISITOR_SLICE_LABEL in labels else None
    return Record(node.id, labels, text("conversationId"), key_prop,
                  sender if sender not in NOT_A_PERSON else None, frozenset(contacts),
                  text("taskId") if {"TimeEntry", "TimeAdjustment"} & set(labels) else None)


@dataclass
class Person:
    """The identifiers an erase found for one person: it grows until nothing new is reached."""

    contacts: set[tuple[str, str]]
    keys: set[str]
    senders: set[str]
    conversations: set[str]


def _person_of(account: str, request: Request) -> Person:
    person = Person(set(), set(), set(), set())
    if request.kind == "contact":
        person.contacts.add((str(request.contact), request.value))
    elif request.kind == "visitor":
        person.senders.add(request.value)
        person.keys |= {visitor_key(account, f"{channel}:{request.value}") for channel in CHANNELS}
        person.conversations |= {conversation_node_id(account, channel, request.value) for channel in CHANNELS}
    else:
        person.conversations.add(request.value)
    return person


CHANNELS = ("webchat", "telegram", "whatsapp")


def _phone_keys(account: str, contacts: set[tuple[str, str]]) -> set[str]:
    return {visitor_key(account, f"phone:{v}") for kind, v in contacts if kind == "phone"}


def _scan_records(store: GraphStore, account: str) -> dict[str, Record]:
    """Every node of the account (soft-deleted too), as its identifiers alone."""
    out: dict[str, Record] = {}
    after = ""
    while True:
        page = store.scan_nodes(account_id=account, contains=None, after=after, limit=PAGE)
        for node in page:
            out[node.id] = record_of(node)
        if len(page) < PAGE:
            return out
        after = page[-1].id


def _get(store: GraphStore, account: str, node_id: str) -> Node | None:
    return store.get(node_id, guards=Principal.owner(account).guards, include_deleted=True)


def collect(store: GraphStore, account: str, request: Request) -> dict[str, Node]:
    """Every node of the one person the request names (the module docstring says which), by id: the
    one set both erase and export use, so the receipt and the export count the same."""
    return gather(store, account, request)[0]


def gather(store: GraphStore, account: str, request: Request) -> tuple[dict[str, Node], Person]:
    """:func:`collect`, and the identifiers of the person it found."""
    records = _scan_records(store, account)
    person = _person_of(account, request)
    by_conv: dict[str, set[str]] = {}
    for r in records.values():
        if r.conversation:
            by_conv.setdefault(r.conversation, set()).add(r.id)
    found: set[str] = set()
    done_convs: set[str] = set()
    while True:
        before = (len(found), _extent(person))
        keys = person.keys | _phone_keys(account, person.contacts)
        found.update(r.id for r in records.values() if _names_person(r, person, keys))
        for node_id in list(found):  # what the person's nodes say about them
            _learn(person, records[node_id])
        fresh = sorted(person.conversations - done_convs)
        done_convs.update(fresh)
        for conv in fresh:  # everything of their conversations: what names it, what hangs from it
            found |= by_conv.get(conv, set())
        if fresh:
            found |= _attached(store, account, records, fresh)
        if (len(found), _extent(person)) == before and not fresh:
            break
    tasks = {i for i in found if "Task" in records[i].labels}
    found |= {r.id for r in records.values() if r.task is not None and r.task in tasks}  # their time records
    nodes = {n.id: n for n in (_get(store, account, i) for i in sorted(found)) if n is not None}
    nodes.update(_orphans(store, account, nodes))
    return nodes, person


def _extent(person: Person) -> tuple[int, int, int, int]:
    """How much is known of the person (the search ends when a round adds nothing)."""
    return len(person.contacts), len(person.keys), len(person.senders), len(person.conversations)


def _names_person(r: Record, person: Person, keys: set[str]) -> bool:
    """Whether a record names the person by an identifier of IDENTIFIER_PROPERTIES, nothing else."""
    return bool(r.contacts & person.contacts) or (r.visitor_key is not None and r.visitor_key in keys) \
        or (r.sender is not None and r.sender in person.senders) or r.id in person.conversations


def _learn(person: Person, r: Record) -> None:
    """What one of the person's nodes says about them: conversations, senders, keys, contacts."""
    if r.conversation:
        person.conversations.add(r.conversation)
    if CONVERSATION_LABEL in r.labels:
        person.conversations.add(r.id)
    if r.sender:
        person.senders.add(r.sender)
    if r.visitor_key and MESSAGE_LABEL in r.labels:
        person.keys.add(r.visitor_key)
    person.contacts |= r.contacts


def _attached(store: GraphStore, account: str, records: dict[str, Record], conversations: list[str]) -> set[str]:
    """The nodes hanging from the conversations by an ATTACHED edge."""
    live = [c for c in conversations if c in records]
    return {n for src, etype, dst, _ in store.node_edges(live, account_id=account) if etype in ATTACHED
            for n in (src, dst) if n in records}


def _orphans(store: GraphStore, account: str, found: dict[str, Node]) -> dict[str, Node]:
    """The Entity and Fact nodes only the person's nodes link (derived from what they said)."""
    found = dict(found)
    out: dict[str, Node] = {}
    while True:
        edges = store.node_edges(list(found), account_id=account)
        targets = {dst for src, _, dst, _ in edges if src in found and dst not in found}
        derived = [n for n in (_get(store, account, t) for t in sorted(targets))
                   if n is not None and DERIVED_LABELS.intersection(n.labels)]
        if not derived:
            return out
        sources: dict[str, set[str]] = {n.id: set() for n in derived}
        for src, _, dst, _ in store.node_edges([n.id for n in derived], account_id=account):
            if dst in sources:
                sources[dst].add(src)
        orphans = [n for n in derived if sources[n.id] <= found.keys()]
        if not orphans:
            return out
        for n in orphans:
            found[n.id] = out[n.id] = n


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


def receipt(found: dict[str, Node], counts: dict[str, int], mentions: list[str]) -> dict[str, Any]:
    labels = Counter(_label(n) for n in found.values())
    return {"nodes": counts["nodes"], "labels": dict(sorted(labels.items())), "edges": counts["edges"],
            "embeddings": counts["embeddings"], "fulltext": counts["fulltext"], "mentions": len(mentions)}


def mentions_of(store: GraphStore, account: str, found: dict[str, Node], person: Person) -> list[str]:
    """The ids of the nodes erase leaves that still hold one of the person's contacts in their text
    (an owner's note "call back ada@…", another visitor's message naming her): not the person's, so
    never taken; counted in the receipt and listed by id in the export for the operator to review."""
    if not person.contacts:
        return []
    test = contact_test(person)
    emails = sorted(v for kind, v in person.contacts if kind == "email")
    prefilter = emails[0] if len(emails) == 1 and len(person.contacts) == 1 and emails[0].isascii() else None
    out: list[str] = []
    after = ""
    while True:
        page = store.scan_nodes(account_id=account, contains=prefilter, after=after, limit=PAGE)
        out += [n.id for n in page if n.id not in found and
                test(json.dumps(n.properties, ensure_ascii=False, default=str))]
        if len(page) < PAGE:
            return out
        after = page[-1].id


def senders_of(found: dict[str, Node], person: Person) -> list[str]:
    """The channel sender ids an erase reached: the visitor asked for, the Conversations' senders and
    the user Messages' (what other plugins key their files by)."""
    out = set(person.senders)
    for n in found.values():
        if CONVERSATION_LABEL in n.labels or (MESSAGE_LABEL in n.labels and n.properties.get("role") == "user"):
            sender = n.properties.get("sender")
            if isinstance(sender, str) and sender not in NOT_A_PERSON:
                out.add(sender)
    return sorted(out)


def contact_test(person: Person) -> Callable[[str], bool]:
    """Whether a string holds one of the person's contacts: an email address as a whole address
    (ignoring case), a phone number by its digits in any format."""
    emails = [re.compile(rf"(?<![\w.+-]){re.escape(v)}(?![\w-])(?!\.[\w-])", re.IGNORECASE)
              for kind, v in sorted(person.contacts) if kind == "email"]
    phones = {v for kind, v in person.contacts if kind == "phone"}

    def holds(text: str) -> bool:
        return any(p.search(text) for p in emails) or \
            bool(phones and any(_phone_key(m.group()) in phones for m in PHONE_RUN.finditer(text)))

    return holds


def erase_outside(host: Any, account: str, person: Person, found: dict[str, Node], *,
                  dry_run: bool) -> tuple[dict[str, int], list[str]]:
    """Each plugin's files outside the store (``plughost_person_erased``): counts, and the plugins that failed."""
    tally: Counter[str] = Counter()
    errors = host.call_each(hooks.PERSON_ERASED, account_id=account, senders=senders_of(found, person),
                            holds=contact_test(person), dry_run=dry_run, tally=tally)
    return dict(sorted((k, v) for k, v in tally.items())), sorted({e.plugin for e in errors})


def erase(store: GraphStore, account: str, request: Request, *, dry_run: bool,
          host: Any = None) -> dict[str, Any]:
    """Collect and (unless ``dry_run``) delete; the receipt of counts (``files``: what other plugins
    removed outside the store, when ``host`` is given)."""
    found, person = gather(store, account, request)
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
            from plughost.plugins.memory.embedding.reindex import reindex_contexts

            reindex_contexts(store, None, account_id=account, conversation_ids=kept)
            store.erase_nodes([], account_id=account)  # no node: the full-text merge and the WAL truncation again
    result = receipt(found, counts, mentions_of(store, account, found, person))
    if host is not None:
        result["files"], result["failed"] = erase_outside(host, account, person, found, dry_run=dry_run)
    return result


def export(store: GraphStore, account: str, request: Request) -> dict[str, Any]:
    """Every node the request reaches: id, labels, properties (never an embedding), deleted or not,
    and every edge touching them."""
    found, person = gather(store, account, request)
    nodes = [{"id": n.id, "labels": list(n.labels), "properties": n.properties, "deleted": n.deleted}
             for n in sorted(found.values(), key=lambda n: n.id)]
    edges = [{"source": s, "type": t, "target": d, "properties": p}
             for s, t, d, p in store.node_edges(list(found), account_id=account)]
    return {"request": request.kind, "account": account, "nodes": nodes, "edges": edges,
            "mentions": mentions_of(store, account, found, person)}


def _line(result: dict[str, Any]) -> str:
    labels = ",".join(f"{k}:{v}" for k, v in result["labels"].items()) or "none"
    files = ",".join(f"{k}:{v}" for k, v in result.get("files", {}).items() if v) or "none"
    return (f"nodes={result['nodes']} labels={labels} edges={result['edges']} embeddings={result['embeddings']} "
            f"fulltext={result['fulltext']} mentions={result['mentions']}" + (f" files={files}" if "files" in result else ""))


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
        edges=result["edges"], embeddings=result["embeddings"], fulltext=result["fulltext"],
        mentions=result["mentions"], files=files)
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
