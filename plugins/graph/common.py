"""What both store backends share: input validation, the text union, write account checks.

Everything here is cheap to import (no numpy, no neo4j).
"""

from __future__ import annotations

import json
import math
import os
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

from plughost import AccountMismatch, Guards, UserError, log
from plughost.api.principals import resolve
from plughost.api.settings import GRAPH_READ_ONLY
from plughost.api.store import EDGE_KEYS as _EDGE_KEYS
from plughost.api.store import LINE_KEYS as _ROW_KEYS
from plughost.api.store import (
    NAME_RE,
    RESERVED_LABELS,
    RESERVED_PROPERTIES,
    STORE_SET_KEYS,
    TEXT_PROPERTIES,
    int_problem,
    labels_problem,
    stamps_of,
)
from plughost.api.util import bounded_repr
from plughost.plugins.graph.settings import EMBED_DIMENSIONS, VECTOR_THREADS

GRACE_DAYS = 7.0
EXPAND_LIMIT = 20
LINKED_LIMIT = 5000
"""The most sources :meth:`GraphStore.linked` returns per origin."""


def env_account(env: Mapping[str, str]) -> str | None:
    """The process's account (its principal's), None when unset."""
    return resolve(env).account


def env_dimensions(env: Mapping[str, str]) -> int:
    """Vector dimensions the store indexes: ``PLUGHOST_EMBED_DIMENSIONS``, else ``EMBED_DIMENSIONS``, else 384."""
    dims = EMBED_DIMENSIONS.read(env)
    if dims is not None:
        return dims
    raw = env.get("EMBED_DIMENSIONS") or "384"
    try:
        return int(raw)
    except ValueError:
        raise UserError(f"EMBED_DIMENSIONS: expected an integer, got {raw!r}") from None


class StoreEnv:
    """What both stores read from their environment: the account, the vector dimensions and
    whether the process may write (``PLUGHOST_GRAPH_READ_ONLY``)."""

    env: dict[str, str]

    @property
    def account_id(self) -> str | None:
        return env_account(self.env)

    @property
    def dimensions(self) -> int:
        return env_dimensions(self.env)

    @property
    def read_only(self) -> bool:
        return GRAPH_READ_ONLY.read(self.env)


def vector_threads(env: Mapping[str, str]) -> int:
    """``PLUGHOST_VECTOR_THREADS``: threads that score one vector query (default: the cores, at most 4)."""
    return VECTOR_THREADS.read(env) or max(1, min(os.cpu_count() or 1, 4))


def new_id() -> str:
    return uuid.uuid4().hex


@lru_cache(maxsize=8192)
def iso(ts: float | None) -> str | None:
    """A stored time as ISO 8601 UTC, milliseconds (cached: a batch's rows share their times, and a
    search builds two for every node whose properties it reads)."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_GOOD_NAMES: set[str] = set()


def check_name(value: Any, what: str) -> str:
    if type(value) is str and value in _GOOD_NAMES:
        return value
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise UserError(f"{what}: expected an identifier ([A-Za-z_][A-Za-z0-9_]*), got {value!r:.60}")
    if len(_GOOD_NAMES) < 10000:
        _GOOD_NAMES.add(value)
    return value


def check_labels(labels: Any, what: str = "labels") -> tuple[str, ...]:
    if (type(labels) is list and len(labels) == 1 and type(labels[0]) is str and labels[0] in _GOOD_NAMES
            and labels[0] not in RESERVED_LABELS):  # the common case, fast
        return (labels[0],)
    problem = labels_problem(labels, what)  # every importer's words (plughost.api.store.check_line)
    if problem:
        raise UserError(problem)
    out: list[str] = []
    for label in labels:
        check_name(label, what)  # remembered: the next row's label passes the fast path
        if label not in out:
            out.append(label)
    return tuple(out)


def check_account(expected: str | None, account_id: str, *, node: str | None = None) -> None:
    """Writes must name the process's account (docs/guards.md#write-guards); anything else is logged and rejected."""
    if not expected or account_id != expected:
        log("graph-write", "reject", reason="invalid-account-id", accountId=bounded_repr(account_id),
            **({"node": node} if node else {}))
        raise AccountMismatch(
            f"accountId: '{account_id}' is not this process's account (ACCOUNT_ID="
            f"{expected or 'unset'}); writes must target ACCOUNT_ID"
        )


def _not_serialisable(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


_ENCODER = c_make_encoder({}, _not_serialisable, encode_basestring_ascii, None, ": ", ", ", False, False, False) \
    if c_make_encoder is not None else None


def to_json(value: Any) -> str:
    """``json.dumps(value, allow_nan=False)``, byte for byte, through one long-lived C encoder.

    ``json.dumps`` builds a new encoder on every call, which costs more than encoding a small
    node's properties; imports encode one object per line.
    """
    if _ENCODER is None:  # an interpreter without the C accelerator
        return json.dumps(value, allow_nan=False)
    return "".join(_ENCODER(value, 0))


def labels_json(labels: Sequence[str]) -> str:
    """The stored labels array: labels are validated identifiers, so it needs no escaping."""
    return '["' + '","'.join(labels) + '"]'


@dataclass(slots=True)
class Prepared:
    """One validated node write."""

    id: str | None
    labels: tuple[str, ...]
    properties: dict[str, Any]
    embedding: list[float] | None
    props_json: str | None = None  # json.dumps(properties) when no value is None (fast insert path)


def check_embedding(vector: Any, what: str = "embedding") -> list[float] | None:
    if vector is None:
        return None
    if isinstance(vector, (str, bytes)) or not isinstance(vector, Sequence) and not hasattr(vector, "tolist"):
        raise UserError(f"{what}: expected a list of numbers")
    values = vector.tolist() if hasattr(vector, "tolist") else list(vector)
    if not values:
        raise UserError(f"{what}: expected a non-empty list of numbers")
    try:
        out = list(map(float, values))
    except (TypeError, ValueError):
        raise UserError(f"{what}: expected a list of numbers") from None
    # a NaN or an infinity makes the sum non-finite; only then (or on an overflowing sum) look closer
    if not math.isfinite(sum(out)) and not all(math.isfinite(v) for v in out):
        raise UserError(f"{what}: expected finite numbers")
    return out


_GOOD_KEYS: set[str] = set()


def _check_keys(props: Mapping[str, Any], what: str) -> None:
    """Property keys are identifiers (as labels and edge types are); the cache keeps it one set test a row."""
    if _GOOD_KEYS.issuperset(props):
        return
    for key in props:
        if key in _GOOD_KEYS:
            continue
        if type(key) is not str or not NAME_RE.match(key):
            raise UserError(f"{what}.properties.{str(key)[:40]}: expected an identifier key "
                            "([A-Za-z_][A-Za-z0-9_]*, at most 100 characters)")
        if len(_GOOD_KEYS) < 10000:
            _GOOD_KEYS.add(key)


def prepare(labels: Any, properties: Any, *, account_id: str, node_id: Any = None, embedding: Any = None,
            what: str = "node", parsed: bool = False, encode: Callable[[Any], str] = to_json,
            small_ints: bool = False, dims: int | None = None, strict: bool = False) -> Prepared:
    """Validate one node write: identifier keys, no store-set key (``createdAt`` ...), 64-bit
    integers, ``accountId`` equal to the write's (then dropped), ``embedding`` (also accepted
    inside ``properties``) ``dims`` long when ``dims`` is given.

    ``parsed``: ``properties`` came from a JSON parser, so its keys are strings already, and the
    dict is the caller's to give away (it is used as is, not copied).
    ``encode``: the properties encoder (a faster one for values it encodes exactly, see
    :mod:`plughost.plugins.graph.staging`). ``small_ints``: the parser already guarantees integers of
    at most 18 digits, so the 64-bit check is skipped. ``strict`` (imports): a store-set key is
    an error naming it; otherwise it is dropped.

    One check per concern, in this order (the first problem is the one reported): labels, the
    properties object and the id, reserved keys (:func:`_own_properties`), key names, integers,
    the scope and agent tags, the encoding, the embedding.
    """
    lab = _node_labels(labels, what)
    properties = _properties_object(properties, what)
    _check_node_id(node_id, what)
    props, embedding = _own_properties(properties, account_id, node_id, embedding, what, parsed=parsed,
                                       strict=strict)
    _check_keys(props, what)
    if not small_ints:
        _check_ints(props, what)
    _check_tags(props, what)
    text = _encoded(props, encode, what)
    vector = _node_vector(embedding, dims, what)
    return Prepared(node_id, lab, props, vector, None if None in props.values() else text)


def _node_labels(labels: Any, what: str) -> tuple[str, ...]:
    if type(labels) is list and len(labels) == 1 and type(labels[0]) is str and labels[0] in _GOOD_NAMES:
        return (labels[0],)  # the common case, without building the error prefix
    return check_labels(labels, f"{what}.labels")


def _properties_object(properties: Any, what: str) -> Mapping[str, Any]:
    if properties is None:
        return {}
    if type(properties) is not dict and not isinstance(properties, Mapping):
        raise UserError(f"{what}.properties: expected an object, got {type(properties).__name__}")
    return properties


def _check_node_id(node_id: Any, what: str) -> None:
    if node_id is not None and (not isinstance(node_id, str) or not node_id.strip() or len(node_id) > 200):
        raise UserError(f"{what}.id: expected a non-empty string of at most 200 characters")


def _own_properties(properties: Mapping[str, Any], account_id: str, node_id: Any, embedding: Any, what: str, *,
                    parsed: bool, strict: bool) -> tuple[dict[str, Any], Any]:
    """The node's own properties and its embedding: ``accountId`` checked against the write's and
    dropped, an ``embedding`` property taken as the embedding (unless one is given), a store-set
    key dropped (``strict``: refused)."""
    if parsed and type(properties) is dict and "" not in properties and RESERVED_PROPERTIES.isdisjoint(properties):
        return properties, embedding  # nothing to check or drop key by key
    props: dict[str, Any] = {}
    for key, value in properties.items():
        if type(key) is not str or not key:
            raise UserError(f"{what}.properties: keys must be non-empty strings")
        if key not in RESERVED_PROPERTIES:
            props[key] = value
        elif key == "accountId":
            if value != account_id:
                check_account(account_id, str(value), node=node_id)
        elif key == "embedding":
            if embedding is None:
                embedding = value
        elif strict and key in STORE_SET_KEYS:
            raise UserError(f"{what}.properties.{key}: reserved; the store sets it")
    return props, embedding


def _check_ints(props: Mapping[str, Any], what: str) -> None:
    """Integers (and integers in lists) fit in 64 bits (``plughost.ports.jsonl.int_problem``)."""
    for key, value in props.items():
        if type(value) is int or type(value) is list:
            problem = int_problem(value, f"{what}.properties.{key}")
            if problem:
                raise UserError(problem)


def _check_tags(props: dict[str, Any], what: str) -> None:
    """``scope`` a string, ``agents`` a list of slugs (one slug becomes a list of it)."""
    scope = props.get("scope")
    if scope is not None and not isinstance(scope, str):
        raise UserError(f"{what}.properties.scope: expected a string or null")
    agents = props.get("agents")
    if agents is None:
        return
    if isinstance(agents, str):
        agents = [agents]
    if not isinstance(agents, list) or not (len(agents) == 1 and type(agents[0]) is str
                                            or all(isinstance(a, str) for a in agents)):
        raise UserError(f"{what}.properties.agents: expected a list of agent slugs")
    props["agents"] = agents


def _encoded(props: Mapping[str, Any], encode: Callable[[Any], str], what: str) -> str:
    try:
        return encode(props)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UserError(f"{what}.properties: not JSON-serialisable ({exc})") from None


def _node_vector(embedding: Any, dims: int | None, what: str) -> list[float] | None:
    vector = None if embedding is None else check_embedding(embedding, f"{what}.embedding")
    if vector is not None and dims is not None and len(vector) != dims:
        raise UserError(f"{what}.embedding: {len(vector)} numbers; this store indexes {dims}-dimension vectors")
    return vector


_TEXT_KEYS = frozenset(TEXT_PROPERTIES)


def text_of(properties: Mapping[str, Any]) -> str:
    """The canonical text-property union that BM25 indexes."""
    parts: list[str] = []
    for key in properties:  # nodes carry few keys: walk them, not the whole union
        if key not in _TEXT_KEYS:
            continue
        value = properties[key]
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            parts.extend(str(v) for v in value if v is not None)
        else:
            parts.append(str(value))
    return "\n".join(parts)


def keywords_of(properties: Mapping[str, Any]) -> list[str]:
    """``keywords`` as lower-cased tags: a list, or a comma-separated string."""
    value = properties.get("keywords")
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [value]
    out: list[str] = []
    for item in items:
        tag = str(item).strip().lower()
        if tag and tag not in out:
            out.append(tag)
    return out


_FTS_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def fts_terms(text: str, max_terms: int = 32) -> list[list[str]]:
    """User text → terms, each a list of word tokens (letters and digits; punctuation splits).

    ``INV-2024-0042`` becomes one term of three tokens, matched as an adjacent phrase, so it is
    found exactly; nothing the user types can reach the query syntax.
    """
    terms: list[list[str]] = []
    for chunk in str(text).split():
        tokens = [t.lower() for t in _FTS_TOKEN.findall(chunk)]
        if tokens and tokens not in terms:
            terms.append(tokens)
        if len(terms) >= max_terms:
            break
    return terms


def guards_ok(guards: Any) -> Guards:
    if not isinstance(guards, Guards):
        raise TypeError("guards: expected a host.graph.Guards (from the call's principal)")
    return guards


def prepare_rows(rows: Iterable[Any], account_id: str) -> tuple[list[Prepared], list[tuple[int, int, str, str, Any]]]:
    """Validate ``{id?, labels, properties, embedding?, edges?}`` rows (errors name the row)."""
    items: list[Prepared] = []
    edges: list[tuple[int, int, str, str, Any]] = []
    for i, row in enumerate(rows):
        item, row_edges = prepare_row(row, account_id, f"rows[{i}]")
        items.append(item)
        edges.extend((i, j, t, to, p) for j, (t, to, p) in enumerate(row_edges))
    return items, edges


def prepare_row(row: Any, account_id: str, what: str, parsed: bool = False,
                encode: Callable[[Any], str] = to_json, small_ints: bool = False,
                dims: int | None = None, strict: bool = False) -> tuple[Prepared, list[tuple[str, str, Any]]]:
    if type(row) is not dict and not isinstance(row, Mapping):
        raise UserError(f"{what}: expected an object {{id?, labels, properties, edges?}}")
    if not row.keys() <= _ROW_KEYS:
        unknown = sorted(set(row) - _ROW_KEYS)
        raise UserError(f"{what}: unknown key '{unknown[0]}' (expected id, labels, properties, embedding, edges, "
                        "stamps)")
    if "stamps" in row and row["stamps"] is not None:
        stamps_of(row["stamps"], f"{what}.stamps")
    item = prepare(row.get("labels"), row.get("properties"), account_id=account_id, node_id=row.get("id"),
                   embedding=row.get("embedding"), what=what, parsed=parsed, encode=encode, small_ints=small_ints,
                   dims=dims, strict=strict)
    raw_edges = row.get("edges") or []
    if type(raw_edges) is not list:
        if not isinstance(raw_edges, list):
            raise UserError(f"{what}.edges: expected a list of {{type, to, properties?}}")
    out: list[tuple[str, str, Any]] = []
    good = _GOOD_NAMES
    for j, e in enumerate(raw_edges):  # the usual edge, exactly {type, to}, checked inline
        if type(e) is dict and len(e) == 2:
            etype, to = e.get("type"), e.get("to")
            if type(etype) is str and etype in good and type(to) is str and to:
                out.append((etype, to, None))
                continue
        out.append(check_edge(e, what, j))
    return item, out


def check_edge(edge: Any, what: str, index: int | None = None) -> tuple[str, str, dict[str, Any] | None]:
    """Validate ``{type, to, properties?}`` (``what``/``index`` name it in the error)."""
    if type(edge) is dict and type(edge.get("to")) is str and edge["to"] and type(edge.get("type")) is str \
            and edge["type"] in _GOOD_NAMES and not edge.get("properties") and edge.keys() <= _EDGE_KEYS:
        return edge["type"], edge["to"], None  # the common case, fast
    if index is not None:
        what = f"{what}.edges[{index}]"
    if not isinstance(edge, Mapping):
        raise UserError(f"{what}: expected an object {{type, to, properties?}}")
    if not edge.keys() <= _EDGE_KEYS:
        raise UserError(f"{what}: unknown key '{sorted(set(edge) - _EDGE_KEYS)[0]}' (expected type, to, properties)")
    etype = check_name(edge.get("type"), f"{what}.type")
    to = edge.get("to")
    if not isinstance(to, str) or not to:
        raise UserError(f"{what}.to: expected a node id string")
    props = edge.get("properties")
    if props is not None and not isinstance(props, Mapping):
        raise UserError(f"{what}.properties: expected an object")
    if props:
        try:
            json.dumps(props, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UserError(f"{what}.properties: not JSON-serialisable ({exc})") from None
    return etype, to, dict(props) if props else None

