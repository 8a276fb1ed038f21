"""The memory write path (docs/memory.md#writes): write, update, delete, restore, ingest.

Every entry point validates its input against the memory schema (known labels, camelCase
property names, Neo4j-compatible values), resolves provenance for people and organisations,
embeds vector-indexed nodes (a failed embed never aborts the write), and writes node and
edges in one store transaction so nothing is half-written. The account always comes from the
process's ``ACCOUNT_ID``. Callers wrap each call in :func:`plughost.plugins.memory.writes.outcome.run_with_outcome`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plughost import Embedder, GraphStore, Guards, Principal, log
from plughost.api.principals import resolve
from plughost.api.store import (
    FULLTEXT_EXTRA_LABELS,
    LONE_SURROGATE,
    RESERVED_PROPERTIES,
    VECTOR_LABELS,
    guarded_upsert_many,
)
from plughost.api.util import bounded_repr
from plughost.plugins.memory import entities, sectioniser
from plughost.plugins.memory.embedding.indexed_form import chunk_context
from plughost.plugins.memory.embedding.reindex import reindex_contexts
from plughost.plugins.memory.embedding.text import embedding_text, is_vector_label
from plughost.plugins.memory.settings import MEMORY_EXTRA_LABELS
from plughost.plugins.memory.writes.outcome import Call, WriteRejected

EXTRA_LABELS = ("Project", "Note", "Topic", "Tag", "Attachment", "Document", "Skill", "Offer")
PROVENANCE_LABELS = ("Person", "UserProfile", "AdminUser", "Organization", "LocalBusiness")
PROVENANCE_SOURCES = ("Task", "Conversation", "Message")
PROPERTY_NAME = re.compile(r"^[a-z][A-Za-z0-9]{0,63}$")
EDGE_TYPE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
VISIBILITY = ("scope", "agents")
"""The properties that decide who reads a node: a document's change of them carries to its parts."""


def known_labels(env: Mapping[str, str]) -> frozenset[str]:
    """The writable labels: the indexed ones plus a few structural ones, extendable by env."""
    extra = MEMORY_EXTRA_LABELS.read(env) or []
    return frozenset((*VECTOR_LABELS, *FULLTEXT_EXTRA_LABELS, *EXTRA_LABELS, *extra))


@dataclass
class Relationship:
    type: str
    target: str
    direction: str  # out | in
    properties: dict[str, Any] | None


class MemoryWriter:
    """The write operations over one store and embedder, for the process's account."""

    def __init__(self, store: GraphStore, embedder: Embedder | None, env: Mapping[str, str],
                 principal: Principal | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.env = env
        self.labels_known = known_labels(env)
        self.principal = principal or resolve(env)  # the call's principal, resolved once

    # ------------------------------------------------------------------ context
    @property
    def account_id(self) -> str:
        return self._principal().account_id

    def _principal(self) -> Principal:
        # no account: AccountUnset, which an MCP server answers with the install's fix (as every memory tool)
        self.principal.require_account("the id of the account writes go to (an account under PLUGHOST_HOME/accounts/)")
        return self.principal

    def guards(self) -> Guards:
        """The process's guards: every read and write of a tool call runs under them (docs/guards.md#write-guards)."""
        return self._principal().guards

    # ------------------------------------------------------------------ validation
    def check_labels(self, labels: Any, *, allow_empty: bool = False) -> list[str]:
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise WriteRejected("invalid-input", "labels: expected a list of label names")
        if not labels and not allow_empty:
            raise WriteRejected("invalid-input", "labels: expected at least one label")
        unknown = [x for x in labels if x not in self.labels_known]
        if unknown:
            raise WriteRejected("schema-unknown-label",
                                f"labels: '{unknown[0]}' is not a known label (e.g. Person, Organization, "
                                "KnowledgeDocument, Event, Task, Preference)")
        return list(dict.fromkeys(labels))

    def check_properties(self, properties: Any, *, allow_null: bool = False) -> dict[str, Any]:
        if not isinstance(properties, Mapping):
            raise WriteRejected("invalid-input", "properties: expected an object")
        out: dict[str, Any] = {}
        for key, value in properties.items():
            if key == "accountId":
                if value != self.account_id:
                    log("graph-write", "reject", reason="invalid-account-id", accountId=bounded_repr(value))
                    raise WriteRejected("account-isolation",
                                        f"properties.accountId: '{value}' is not this process's account")
                continue
            if key in RESERVED_PROPERTIES:
                raise WriteRejected("invalid-input", f"properties.{key}: reserved; the store sets it")
            if not PROPERTY_NAME.match(key):
                raise WriteRejected("schema-property-naming",
                                    f"properties.{key}: property names are camelCase ([a-z][A-Za-z0-9]*, "
                                    "at most 64 characters)")
            out[key] = self._check_value(key, value, allow_null)
        scope = out.get("scope")
        if scope is not None:
            if not isinstance(scope, str):
                raise WriteRejected("invalid-input", "properties.scope: expected a string (public, shared, admin)")
            allowed = self.guards().allowed_scopes
            if allowed is not None and scope not in allowed:
                raise WriteRejected("account-isolation", f"properties.scope: '{scope}' is outside this process's "
                                    f"ALLOWED_SCOPES ({','.join(allowed) or 'none'})")
        return out

    @staticmethod
    def _check_value(key: str, value: Any, allow_null: bool) -> Any:
        scalar = (str, int, float, bool)
        if value is None:
            if allow_null:
                return None
            raise WriteRejected("invalid-input", f"properties.{key}: null is not a value (omit the key)")
        if isinstance(value, scalar):
            if isinstance(value, float) and value != value:
                raise WriteRejected("invalid-input", f"properties.{key}: NaN is not a value")
            if isinstance(value, str) and not _storable(value):
                raise WriteRejected("invalid-input", f"properties.{key}: {LONE_SURROGATE}")
            return value
        if isinstance(value, list) and all(isinstance(v, scalar) for v in value):
            if any(isinstance(v, str) and not _storable(v) for v in value):
                raise WriteRejected("invalid-input", f"properties.{key}: {LONE_SURROGATE}")
            kinds = {float if type(v) is int else type(v) for v in value}  # ints and floats mix (numbers)
            if len(kinds) > 1:
                raise WriteRejected("invalid-input", f"properties.{key}: list items must all have one type")
            return value
        raise WriteRejected("invalid-input", f"properties.{key}: expected a string, number, boolean or a list "
                            "of one of them (no nested objects)")

    def check_relationships(self, relationships: Any) -> list[Relationship]:
        if relationships is None:
            return []
        if not isinstance(relationships, list):
            raise WriteRejected("invalid-input", "relationships: expected a list of {type, targetId, direction?}")
        out = []
        for i, rel in enumerate(relationships):
            if not isinstance(rel, Mapping):
                raise WriteRejected("invalid-input", f"relationships[{i}]: expected an object {{type, targetId}}")
            etype, target = rel.get("type"), rel.get("targetId")
            direction = rel.get("direction", "out")
            if not isinstance(etype, str) or not EDGE_TYPE.match(etype):
                raise WriteRejected("invalid-input", f"relationships[{i}].type: expected UPPER_SNAKE_CASE, "
                                    f"got {etype!r:.40}")
            if not isinstance(target, str) or not target:
                raise WriteRejected("invalid-input", f"relationships[{i}].targetId: expected a node id")
            if direction not in ("out", "in"):
                raise WriteRejected("invalid-input", f"relationships[{i}].direction: expected 'out' or 'in'")
            props = rel.get("properties")
            if props is not None and not isinstance(props, Mapping):
                raise WriteRejected("invalid-input", f"relationships[{i}].properties: expected an object")
            out.append(Relationship(etype, target, direction, dict(props) if props else None))
        return out

    def _live(self, node_id: str, what: str) -> Any:
        node = self.store.get(node_id, guards=self.guards())
        if node is None:
            raise WriteRejected("invalid-target-node-id", f"{what}: no node '{node_id}' in this account")
        return node

    # ------------------------------------------------------------------ embedding
    def embed_many(self, texts: Sequence[str], *, labels: Sequence[str], node: str | None = None) \
            -> list[list[float] | None]:
        """Vectors for texts, or Nones after one ``embed-failed`` warning: a failed embed never aborts a write."""
        if not texts or self.embedder is None:
            return [None] * len(texts)
        unique = list(dict.fromkeys(texts))
        try:
            vectors = self.embedder.embed(unique)
        except Exception as exc:
            log("graph-write", "warn", reason="embed-failed", labels=",".join(labels), node=node,
                inputs=len(unique), error=f"{type(exc).__name__}: {exc}"[:160])
            return [None] * len(texts)
        by_text = dict(zip(unique, vectors, strict=True))
        return [by_text[t] for t in texts]

    def embed_node(self, labels: Sequence[str], properties: Mapping[str, Any], node: str | None) -> list[float] | None:
        text = embedding_text(labels, properties)
        if text is None:
            return None
        return self.embed_many([text], labels=labels, node=node)[0]

    # ------------------------------------------------------------------ provenance
    def _provenance(self, labels: Sequence[str], task_id: str | None,
                    rels: list[Relationship]) -> tuple[str | None, str]:
        """The inbound PRODUCED source for gated labels: (source id or None, description)."""
        if task_id is not None:
            task = self.store.get(task_id, guards=self.guards())
            if task is None or "Task" not in task.labels:
                raise WriteRejected("producedby-task-not-found",
                                    f"producedByTaskId: no Task '{task_id}' in this account")
            return task_id, f"task:{task_id}"
        if not any(label in PROVENANCE_LABELS for label in labels):
            return None, "not-required"
        for rel in rels:
            if rel.type == "PRODUCED" and rel.direction == "in":
                source = self.store.get(rel.target, guards=self.guards())
                if source is not None and any(x in PROVENANCE_SOURCES for x in source.labels):
                    return None, f"relationship:{rel.target}"
        session = self._principal().session_node
        if session:
            node = self.store.get(session, guards=self.guards())
            if node is not None and any(x in PROVENANCE_SOURCES for x in node.labels):
                return node.id, f"session:{node.id}"
            found = self.store.find(guards=self.guards(), labels=["Conversation"], where={"sessionId": session},
                                    limit=1)
            if found:
                return found[0].id, f"session:{found[0].id}"
        log("graph-write", "warn", reason="missing-provenance", labels=",".join(labels))
        return None, "missing"

    # ------------------------------------------------------------------ operations
    def write(self, call: Call, *, labels: Any, properties: Any, relationships: Any = None,
              producedByTaskId: str | None = None, id: str | None = None) -> dict[str, Any]:  # noqa: A002, N803
        call.labels = [x for x in labels if isinstance(x, str)] if isinstance(labels, list) else ()
        if isinstance(properties, Mapping):
            call.name = properties.get("name") or properties.get("title")
        self.account_id  # noqa: B018 - raises (account-isolation) when unset
        labs = self.check_labels(labels)
        call.labels = labs
        props = self.check_properties(properties)
        rels = self.check_relationships(relationships)
        if id is not None:
            if self.store.get(id, guards=self.guards(), include_deleted=True) is not None:
                raise WriteRejected("conflicting-element-id",
                                    f"id: node '{id}' already exists (use memory-update to change it)")
        for i, rel in enumerate(rels):
            self._live(rel.target, f"relationships[{i}].targetId")
        source, provenance = self._provenance(labs, producedByTaskId, rels)
        node_id = id or uuid.uuid4().hex
        vector = self.embed_node(labs, props, node_id)
        row: dict[str, Any] = {"id": node_id, "labels": labs, "properties": props,
                               "edges": [{"type": r.type, "to": r.target, **({"properties": r.properties}
                                                                                if r.properties else {})}
                                         for r in rels if r.direction == "out"]}
        if vector is not None:
            row["embedding"] = vector
        rows = [row] + self._inbound_rows(node_id, [r for r in rels if r.direction == "in"] + (
            [Relationship("PRODUCED", source, "in", None)] if source else []))
        guarded_upsert_many(self.store, rows, guards=self.guards())
        self._entities([(node_id, props)])
        call.element_id = node_id
        return {"elementId": node_id, "labels": labs, "embedded": vector is not None,
                "relationships": len(rels) + (1 if source else 0), "provenance": provenance}

    def _inbound_rows(self, node_id: str, inbound: list[Relationship]) -> list[dict[str, Any]]:
        """Inbound edges as rows of their (existing, live) source nodes, so they commit with the node."""
        rows: dict[str, dict[str, Any]] = {}
        for rel in inbound:
            if rel.target not in rows:
                source = self._live(rel.target, "relationship source")
                rows[rel.target] = {"id": source.id, "labels": list(source.labels), "properties": {}, "edges": []}
            edge: dict[str, Any] = {"type": rel.type, "to": node_id}
            if rel.properties:
                edge["properties"] = rel.properties
            rows[rel.target]["edges"].append(edge)
        return list(rows.values())

    def update(self, call: Call, *, id: str, properties: Any = None, addLabels: Any = None) \
            -> dict[str, Any]:  # noqa: A002, N803
        call.element_id = id
        self.account_id  # noqa: B018 - raises (account-isolation) when unset
        node = self._live(id, "id")
        call.labels, call.name = node.labels, node.properties.get("name") or node.properties.get("title")
        props = self.check_properties(properties or {}, allow_null=True)
        extra = self.check_labels(addLabels or [], allow_empty=True)
        if not props and not extra:
            raise WriteRejected("invalid-input", "properties: nothing to change (give properties or addLabels)")
        labels = list(dict.fromkeys([*node.labels, *extra]))
        call.labels = labels
        merged = {k: v for k, v in node.properties.items() if k not in RESERVED_PROPERTIES}
        for key, value in props.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        call.name = merged.get("name") or merged.get("title")
        vector = self.embed_node(labels, merged, id) if is_vector_label(labels) else None
        carried = {k: props[k] for k in VISIBILITY if k in props}
        parts = self._parts(node) if carried else []
        guarded_upsert_many(self.store, [{"id": id, "labels": labels, "properties": props,
                                          **({"embedding": vector} if vector is not None else {})},
                                         *({"id": p.id, "labels": list(p.labels), "properties": carried}
                                           for p in parts)],
                            guards=self.guards())
        if entities.derivation(node.properties) != entities.derivation(merged):
            before = [(id, node.properties), *((p.id, p.properties) for p in parts)]
            after = [(n.id, n.properties) for n in (self.store.get(i, guards=self.guards()) for i, _ in before)
                     if n is not None]
            self._rederive(before, after=after)
        return {"elementId": id, "labels": labels, "changed": sorted(props), "embedded": vector is not None}

    def delete(self, call: Call, *, id: str) -> dict[str, Any]:  # noqa: A002
        call.element_id = id
        self.account_id  # noqa: B018 - raises when unset
        node = self._live(id, "id")
        call.labels, call.name = node.labels, node.properties.get("name") or node.properties.get("title")
        sources = self._sources(node)
        touched = self.store.soft_delete(id, guards=self.guards())
        self._rederive(sources)
        return {"elementId": id, "deleted": touched, "graceDays": 7}

    def restore(self, call: Call, *, id: str) -> dict[str, Any]:  # noqa: A002
        call.element_id = id
        self.account_id  # noqa: B018
        node = self.store.get(id, guards=self.guards(), include_deleted=True)
        if node is None:
            raise WriteRejected("invalid-target-node-id", f"id: no node '{id}' in this account (or purged)")
        call.labels, call.name = node.labels, node.properties.get("name") or node.properties.get("title")
        if not node.deleted:
            return {"elementId": id, "restored": 0, "note": "node was not deleted"}
        restored = self.store.restore(id, guards=self.guards())
        live = self.store.get(id, guards=self.guards())
        if live is not None:
            self._entities([(sid, props) for sid, props in self._sources(live)
                            if entities.extractable((), props)])
            self._recontext([live.properties])
        return {"elementId": id, "restored": restored}

    def ingest(self, call: Call, *, content: str, title: str | None = None, format: str = "auto",  # noqa: A002
               attachmentId: str | None = None, summary: str | None = None, scope: str | None = None,  # noqa: N803
               agents: list[str] | None = None, keywords: list[str] | None = None) -> dict[str, Any]:
        call.labels, call.name = ["KnowledgeDocument"], title
        account = self.account_id
        if not isinstance(content, str) or not content.strip():
            raise WriteRejected("invalid-input", "content: expected non-empty text or Markdown")
        if format not in ("auto", "markdown", "text"):
            raise WriteRejected("invalid-input", "format: expected auto, markdown or text")
        doc = sectioniser.sectionise(content, title=title, fmt=format, summary=summary)
        call.name = doc.title
        attachment = attachmentId or sectioniser.content_attachment_id(content)
        shared: dict[str, Any] = {}
        if scope is not None:
            shared["scope"] = scope
        if agents:
            shared["agents"] = list(agents)
        shared = self.check_properties(shared)
        doc_props = {"title": doc.title, "summary": doc.summary, "attachmentId": attachment, "format": doc.format,
                     "sectionCount": len(doc.sections), "contentChars": len(content), **shared}
        if keywords:
            doc_props["keywords"] = list(keywords)
        stable_id = sectioniser.document_id(account, attachment)
        rows: list[dict[str, Any]] = []
        section_rows: list[dict[str, Any]] = []
        chunk_rows: list[dict[str, Any]] = []
        for sec in doc.sections:
            sid = sectioniser.section_id(stable_id, sec.index)
            srow: dict[str, Any] = {"id": sid, "labels": ["Section"], "edges": [],
                    "properties": {"title": sec.title, "body": sec.body, "summary": sec.summary, "index": sec.index,
                                   "path": list(sec.path), "attachmentId": attachment, **shared}}
            for ch in sec.chunks:
                cid = sectioniser.chunk_id(stable_id, sec.index, ch.index)
                srow["edges"].append({"type": "HAS_CHUNK", "to": cid})
                chunk_rows.append({"id": cid, "labels": ["Chunk"],
                                   "properties": {"content": ch.content, "summary": ch.summary, "index": ch.index,
                                                  "sectionIndex": sec.index, "attachmentId": attachment,
                                                  **chunk_context(doc.title, sec.path or (sec.title,)), **shared}})
            section_rows.append(srow)
        doc_row: dict[str, Any] = {"labels": ["KnowledgeDocument"], "properties": doc_props,
                                   "edges": [{"type": "HAS_SECTION", "to": r["id"]} for r in section_rows]}
        existing = self.store.get(stable_id, guards=self.guards(), include_deleted=True)
        if existing is None and not self.store.find(guards=self.guards(), labels=["KnowledgeDocument"],
                                                    where={"attachmentId": attachment}, limit=1):
            doc_row["id"] = stable_id  # a new document: its id is stable too
        # otherwise the store resolves the document by attachmentId and replaces its hierarchy
        all_rows = [doc_row, *section_rows, *chunk_rows]
        texts = [embedding_text(r["labels"], r["properties"]) or "" for r in all_rows]
        vectors = self.embed_many(texts, labels=["KnowledgeDocument"], node=doc_row.get("id"))
        for row, vector in zip(all_rows, vectors, strict=True):
            if vector is not None:
                row["embedding"] = vector
        # children first so the document's edges find their targets in the same transaction
        rows = [*chunk_rows, *section_rows, doc_row]
        guarded_upsert_many(self.store, rows, guards=self.guards())
        self._entities([(r["id"], r["properties"]) for r in chunk_rows])
        doc_id = doc_row.get("id") or self._document_by_attachment(attachment)
        call.element_id = doc_id
        return {"elementId": doc_id, "title": doc.title, "attachmentId": attachment, "format": doc.format,
                "sections": len(section_rows), "chunks": len(chunk_rows),
                "embedded": sum(v is not None for v in vectors)}

    def _entities(self, written: list[tuple[str, Mapping[str, Any]]]) -> None:
        """The entities and facts of what was just written (``PLUGHOST_MEMORY_ENTITIES``); a failure
        leaves the write as it is (``plughost memory reindex --entities`` extracts it later)."""
        if not entities.enabled(self.env):
            return
        try:
            entities.write(self.store, written, guards=self.guards())
        except Exception as exc:  # noqa: BLE001
            log("memory-entities", "warn", reason="extract-failed", node=written[0][0] if written else "",
                error=type(exc).__name__)

    def _parts(self, node: Any) -> list[Any]:
        """The live Sections and Chunks under a KnowledgeDocument, or the Chunks under a Section,
        along the HAS_SECTION / HAS_CHUNK edges ingest writes (the hierarchy a delete cascades
        to): a change of scope or agents carries to them in the same transaction, so no part
        of a document stays readable where the document no longer is. Read whatever the
        process's guards, so a part it could not change refuses the whole update."""
        levels = [("HAS_SECTION", "Section"), ("HAS_CHUNK", "Chunk")]
        levels = levels if "KnowledgeDocument" in node.labels else levels[1:] if "Section" in node.labels else []
        owner = Principal.owner(self.account_id).guards
        out: list[Any] = []
        current = {node.id}
        for edge, label in levels:
            targets = [t for s, e, t, _ in self.store.node_edges(sorted(current), account_id=self.account_id)
                       if e == edge and s in current]
            found = [n for n in (self.store.get(t, guards=owner) for t in dict.fromkeys(targets))
                     if n is not None and label in n.labels]
            out += found
            current = {n.id for n in found}
        return out

    def _sources(self, node: Any) -> list[tuple[str, dict[str, Any]]]:
        """A node and, for a document or section, the chunks a delete or restore cascades to: the
        sources whose derived entities follow it."""
        out = [(node.id, dict(node.properties))]
        attachment = node.properties.get("attachmentId")
        if attachment is not None and {"KnowledgeDocument", "Section"}.intersection(node.labels):
            where: dict[str, Any] = {"attachmentId": attachment}
            if "Section" in node.labels and "KnowledgeDocument" not in node.labels:
                where["sectionIndex"] = node.properties.get("index")
            out += [(c.id, dict(c.properties)) for c in self.store.find(
                guards=self.guards(), labels=["Chunk"], where=where, limit=10000)]
        return out

    def _rederive(self, before: Sequence[tuple[str, Mapping[str, Any]]],
                  after: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> None:
        """Withdraw the entities and facts derived from sources that changed how they read (scope,
        agents, text, speaker, time) or were deleted (whatever the flag: they copy the source's
        words), then extract the still-live ones again under ``PLUGHOST_MEMORY_ENTITIES``."""
        try:
            entities.withdraw(self.store, [sid for sid, _ in before], guards=self.guards(),
                              before=dict(before))
        except Exception as exc:  # noqa: BLE001
            log("memory-entities", "warn", reason="withdraw-failed", node=before[0][0] if before else "",
                error=type(exc).__name__)
        written = [(sid, props) for sid, props in after if entities.extractable((), props)]
        if written:
            self._entities(written)
        self._recontext([props for _, props in before])

    def _recontext(self, changed: Sequence[Mapping[str, Any]]) -> None:
        """Rebuild the indexed form of the conversations whose turns changed how they read or went:
        a later turn's ``searchContext`` holds the words of the turns before it, and must not keep
        those of a turn now private, edited or deleted."""
        conversations = sorted({str(p["conversationId"]) for p in changed if p.get("conversationId")})
        if not conversations:
            return
        try:
            reindex_contexts(self.store, self.embedder, account_id=self.account_id, conversation_ids=conversations)
        except Exception as exc:  # noqa: BLE001 - the write stands; `plughost memory reindex --context` repairs
            log("reindex", "warn", reason="context-failed", conversations=len(conversations), error=type(exc).__name__)

    def _document_by_attachment(self, attachment: str) -> str | None:
        found = self.store.find(guards=self.guards(), labels=["KnowledgeDocument"], where={"attachmentId": attachment},
                                limit=1)
        return found[0].id if found else None


def _storable(text: str) -> bool:
    """Whether UTF-8 can carry the text: a lone surrogate (from a ``\\uD800`` escape) cannot,
    and neither store nor the logs could keep it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
