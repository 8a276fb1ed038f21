"""Typed values that hooks return (docs/architecture.md#hooks).

Every extension-point hook returns a list of one of these; :func:`plughost.runtime.host.Host.collect`
flattens the lists, checks each item's type and rejects two items with one ``key``, naming both
plugins. Capabilities with a single provider (the store, the embedder) return protocol objects
described in :mod:`plughost.ports.graph` and :mod:`plughost.ports.embedding`.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from plughost.ports.principal import PUBLIC as PUBLIC_ROLE
from plughost.ports.principal import Principal, Role
from plughost.util.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    import argparse

    from plughost.runtime.host import Host

ToolHandler = Callable[..., Any]
"""Called with the validated arguments as keyword arguments; sync or async; returns str or JSON."""


@dataclass(frozen=True)
class Tool:
    """One MCP tool a plugin serves: its name and its handler.

    A tool declared in its plugin's PLUGIN.md (``tools:``) takes its description, input schema,
    admin flag and eager flag from there only: the code gives ``Tool(name, handler)`` and nothing
    else. The optional fields are the declaration of a tool no PLUGIN.md declares (an entry-point
    plugin without one, a plugin registered in process); for a declared tool, a value given here
    that differs from PLUGIN.md is one of the plugin's tool problems (PLUGIN.md's is served).

    A ``handler`` of None withholds a declared tool in this configuration: it is absent from
    ``tools/list`` (e.g. the graph plugin's ``write-cypher`` under ``PLUGHOST_GRAPH_READ_ONLY=1``).
    ``from_signature`` marks the description and schema :meth:`from_function` derived from the
    handler: a declaration without PLUGIN.md, a check against it with one.
    """

    name: str
    handler: ToolHandler | None
    description: str | None = field(default=None, kw_only=True)
    input_schema: Mapping[str, Any] | None = field(default=None, kw_only=True)
    admin_allowlist: bool | None = field(default=None, kw_only=True)
    eager: bool | None = field(default=None, kw_only=True)
    from_signature: bool = field(default=False, kw_only=True)

    @property
    def key(self) -> str:
        return self.name

    @classmethod
    def from_function(
        cls,
        fn: ToolHandler,
        *,
        name: str | None = None,
        admin_allowlist: bool | None = None,
        eager: bool | None = None,
    ) -> Tool:
        """Build a tool from a function: its signature gives the schema, its docstring the text.

        ``snake_case`` names become ``kebab-case`` tool names unless ``name`` is given. For a tool
        PLUGIN.md declares, its ``inputSchema`` (when given) is checked against the signature and
        the docstring is not used.
        """
        doc = inspect.getdoc(fn) or ""
        description = doc.split("\n\n")[0].replace("\n", " ").strip() or fn.__name__
        return cls(
            name or fn.__name__.replace("_", "-"),
            fn,
            description=description,
            input_schema=schema_from_signature(fn),
            admin_allowlist=admin_allowlist,
            eager=eager,
            from_signature=True,
        )


_PARAM_DOC = re.compile(r"^\s*:param\s+(\w+):\s*(.+)$|^\s*(\w+)\s*(?:\([^)]*\))?:\s+(.+)$", re.M)


def _json_type(annotation: Any) -> dict[str, Any]:
    """Map a Python annotation to a JSON Schema fragment (the common cases only)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation in (inspect.Parameter.empty, Any):
        return {}
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _json_type(options[0])
        return {"anyOf": [_json_type(a) for a in options]}
    if origin is Literal:
        return {"enum": list(args)}
    if annotation is str:
        return {"type": "string"}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if annotation is dict or origin in (dict, Mapping):
        return {"type": "object"}
    if annotation in (list, tuple) or origin in (list, tuple, Sequence):
        item = _json_type(args[0]) if args else {}
        return {"type": "array", "items": item} if item else {"type": "array"}
    return {}


def schema_from_signature(fn: ToolHandler) -> dict[str, Any]:
    """JSON Schema (object) for a function's keyword parameters; docstring `name: text` lines describe them."""
    hints = typing.get_type_hints(fn)
    docs: dict[str, str] = {}
    for m in _PARAM_DOC.finditer(inspect.getdoc(fn) or ""):
        key, text = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        docs[key] = text.strip()
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        prop = _json_type(hints.get(pname, param.annotation))
        if pname in docs:
            prop["description"] = docs[pname]
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        elif param.default is not None and isinstance(param.default, (str, int, float, bool)):
            prop["default"] = param.default
        properties[pname] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


GateStatus = Literal["ok", "fail", "warn", "error"]


@dataclass
class GateResult:
    """What one gate found. ``lines`` are printed verbatim, in order."""

    status: GateStatus
    inspected: int = 0
    lines: list[str] = field(default_factory=list)
    defects: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class GateContext:
    """Everything a gate may look at; gates read, never write."""

    host: Host
    env: Mapping[str, str]
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Gate:
    """A boot self-test. ``fatal`` gates refuse boot on a defect; the others say it loudly."""

    name: str
    check: Callable[[GateContext], GateResult]
    fatal: bool = True
    order: int = 100

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True)
class Route:
    """An HTTP route on the host's ASGI app: an endpoint, or a mounted ASGI ``app``."""

    path: str
    endpoint: Callable[..., Any] | None = None
    methods: tuple[str, ...] = ("GET",)
    name: str | None = None
    app: Any = None

    @property
    def key(self) -> str:
        if self.app is not None:
            return f"MOUNT {self.path}"
        return f"{','.join(sorted(self.methods))} {self.path}"


@dataclass(frozen=True)
class CliCommand:
    """A top-level `plughost <name>` subcommand contributed by a plugin."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Host], int]

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True)
class ChannelAdapter:
    """A messaging channel: its inbound routes and how a reply goes out."""

    name: str
    routes: tuple[Route, ...] = ()
    send: Callable[..., Awaitable[Any] | Any] | None = None

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True)
class RetrievalBoost:
    """A score bump applied in the BOOST stage: returns the fractional bump for one result row."""

    name: str
    bump: Callable[[Mapping[str, Any]], float]

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True)
class AgentTurn:
    """One turn an agent runner answers (docs/plugin-api.md#agent-runners): who is acting, the
    conversation, the sender's text and the composed prompt.

    ``principal`` is the turn's own principal, resolved once by the channels pipeline: an admin's
    session (:attr:`Role.ADMIN_SESSION <plughost.Role>`) for an admin or a scheduled turn, else a
    public visitor confined to ``conversation``. A runner that starts a process hands it down with
    ``plughost.api.principals.child_env(env, turn.principal)``.

    :meth:`as_dict` is the turn in the documented JSON form (the command runner's stdin, the dict
    a runner got before this type): the same keys, in the same order.
    """

    principal: Principal
    conversation: str
    """The sender's conversation key (``sessionId``): what the turn's stored messages carry."""
    agent_session: str
    """The agent's own session for this sender and kind of turn (``agentSession``)."""
    channel: str
    sender: str
    message_id: str
    prompt: str
    """The composed prompt (``payload``): rules, context and the message."""
    text: str
    """The sender's own words, as written."""
    user_id: str | None = None
    screening: Mapping[str, object] = field(default_factory=dict)
    scheduled: bool = False
    visitor_key: str | None = None
    """A returning visitor's key (hashed): set on a visitor's turn only."""
    visitor_memory: tuple[str, ...] = ()
    specialist: str | None = None

    @staticmethod
    def role_of(principal: Principal) -> str:
        """The role word of a turn's principal in wire formats and log lines: ``admin`` for an
        admin's session, else the role's own name (``public``, ``session``)."""
        return "admin" if principal.role is Role.ADMIN_SESSION else principal.role.value

    @property
    def role(self) -> str:
        return self.role_of(self.principal)

    @property
    def admin(self) -> bool:
        """An admin's (or the owner's scheduled) turn: the admin tools, the owner's rules."""
        return self.principal.role is Role.ADMIN_SESSION

    @staticmethod
    def kind_of(principal: Principal, scheduled: bool) -> str:
        """Who a turn runs for: ``scheduled`` (an owner's message to the sender), ``admin`` (an
        admin writing in) or ``visitor``; each kind has agent sessions of its own."""
        return "scheduled" if scheduled else ("admin" if principal.role is Role.ADMIN_SESSION else "visitor")

    @property
    def kind(self) -> str:
        return self.kind_of(self.principal, self.scheduled)

    def as_dict(self) -> dict[str, object]:
        """The documented JSON form of the turn (docs/channels.md#runners), key for key."""
        out: dict[str, object] = {
            "sessionId": self.conversation, "agentSession": self.agent_session, "turnKind": self.kind,
            "accountId": self.principal.account, "channel": self.channel, "sender": self.sender,
            "role": self.role, "userId": self.user_id, "messageId": self.message_id, "payload": self.prompt,
            "text": self.text, "screening": dict(self.screening), "scheduled": self.scheduled,
        }
        if self.visitor_key:
            out.update(visitorKey=self.visitor_key, visitorMemory=list(self.visitor_memory))
        if self.specialist:
            out["specialist"] = self.specialist
        return out

    @classmethod
    def from_dict(cls, payload: Mapping[str, object], principal: Principal) -> AgentTurn:
        """A turn from its JSON form, its principal narrowed from ``principal`` (the serving
        process's) to the payload's role and conversation (``role`` absent: ``public``).

        The keys of :data:`TURN_REQUIRED` must be there as strings, ``sessionId`` not empty (a
        visitor's turn is confined to it); else ``ValueError`` naming each (anything but a mapping
        lacks them all). ``role`` ``admin`` needs an admin's ``principal`` (a turn is never wider
        than the principal it is given): else ``ValueError`` naming ``role``. The other keys,
        absent, are empty."""
        if not isinstance(payload, Mapping):
            payload = {}
        problems = [f"{key}: missing" if key not in payload else f"{key}: expected a string, got "
                    f"{type(payload[key]).__name__}" for key in TURN_REQUIRED if not isinstance(payload.get(key), str)]
        if not problems and not str(payload["sessionId"]).strip():
            problems.append("sessionId: empty (the conversation the turn is confined to)")
        if not problems and payload.get("role") == "admin" and not principal.rights.admin:
            problems.append(f"role: 'admin' but the principal given is not an admin's ({principal.describe()}); "
                            "a turn is never wider than its principal")
        if problems:
            raise ValueError("AgentTurn.from_dict: " + "; ".join(problems) + " (the turn's JSON form: docs/channels.md#runners)")

        def text(key: str) -> str:
            value = payload.get(key)
            return value if isinstance(value, str) else ""

        def maybe(key: str) -> str | None:
            return text(key) or None

        conversation = text("sessionId")
        screening = payload.get("screening")
        memory = payload.get("visitorMemory")
        return cls(principal.for_turn(text("role") or PUBLIC_ROLE, conversation), conversation,
                   text("agentSession"), text("channel"), text("sender"), text("messageId"), text("payload"),
                   text("text"), maybe("userId"), dict(screening) if isinstance(screening, Mapping) else {},
                   payload.get("scheduled") is True, maybe("visitorKey"),
                   tuple(str(m) for m in memory) if isinstance(memory, list | tuple) else (), maybe("specialist"))


TURN_REQUIRED: tuple[str, ...] = ("sessionId", "agentSession", "channel", "sender", "messageId", "payload", "text")
"""The keys of a turn's JSON form that :meth:`AgentTurn.from_dict` requires: the fields every turn has."""


class AgentRunner(Protocol):
    """Turns an agent turn into a reply (the ``plughost_agent_runner`` hook's answer)."""

    async def run(self, session_id: str, turn: AgentTurn) -> str: ...


PERMISSION_MODES = ("default", "acceptEdits", "plan", "auto", "dontAsk")
"""The permission modes an owner may start an agent session in: the Claude Code CLI's
``--permission-mode`` choices but ``bypassPermissions`` (it skips every check; never offered over HTTP)."""


class OwnerSessions(Protocol):
    """An owner's agent sessions: listed, started with a first message, stopped, resumed, purged
    (the ``plughost_owner_sessions`` hook's answer; docs/console.md#sessions).

    ``principal`` is the caller's, an admin of the account (the caller has checked the admin
    session); ``user`` the admin session's user, whose sessions these are. A session is one of the
    user's admin conversations, by number; each method answers the session as a JSON-ready dict
    (``conversation, conversationId, sessionId, status, permissionMode, model, messages, ...``), None
    when the user has no such session, and raises :class:`plughost.UserError` (one line naming the
    field) for a request it refuses."""

    def list(self, principal: Principal, user: str) -> list[dict[str, object]]: ...

    async def start(self, principal: Principal, user: str, text: str, *, permission_mode: str | None,
                    model: str | None) -> dict[str, object]: ...

    def stop(self, principal: Principal, user: str, conversation: int) -> dict[str, object] | None: ...

    def resume(self, principal: Principal, user: str, conversation: int) -> dict[str, object] | None: ...

    def purge(self, principal: Principal, user: str, conversation: int) -> dict[str, object] | None: ...


def takes_turn(runner: object) -> bool:
    """Whether ``runner.run`` is declared with the typed turn (its second parameter annotated
    :class:`AgentTurn`); a runner written for the dict is not (:func:`run_agent`)."""
    try:
        params = list(inspect.signature(getattr(runner, "run", None)).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    if len(params) < 2:
        return False
    note = params[1].annotation
    if isinstance(note, str):
        return note.rsplit(".", 1)[-1].strip("'\" ") == "AgentTurn"
    return note is AgentTurn


_deprecated_runners: set[type] = set()
"""The runner classes whose old ``run`` was logged already (one ``op=runner-deprecated`` line each)."""


async def run_agent(runner: AgentRunner, session_id: str, turn: AgentTurn, *, tag: str = "channels") -> str:
    """One turn through ``runner``: the typed turn, or for a runner whose ``run`` still takes the
    payload dict, :meth:`AgentTurn.as_dict` with a :class:`DeprecationWarning` (the dict goes in
    the next minor release). Python hides that warning by default, so the first such turn of each
    runner class also logs ``[<tag>] warn op=runner-deprecated runner=<Class> detail="..."`` (``tag``:
    the caller's, the channels pipeline's by default)."""
    if takes_turn(runner):
        return await runner.run(session_id, turn)
    import warnings

    from plughost.util.log import log

    name = type(runner).__name__
    detail = (f"{name}.run(session_id, payload): an agent runner takes the typed turn now, "
              "`async def run(self, session_id: str, turn: AgentTurn) -> str`; the payload dict "
              "(turn.as_dict()) is passed until the next minor release")
    if type(runner) not in _deprecated_runners:
        _deprecated_runners.add(type(runner))
        log(tag, "warn", "op=runner-deprecated", runner=name, detail=detail)
    warnings.warn(detail, DeprecationWarning, stacklevel=2)
    legacy = typing.cast("Callable[[str, dict[str, object]], Awaitable[str]]", runner.run)
    return await legacy(session_id, turn.as_dict())


@dataclass(frozen=True)
class CollectionSource:
    """A kind of file a folder collection indexes (the ``plughost_collection_sources`` hook).

    ``parse(text, relpath)`` returns ``{title, body, frontmatter, links, aliases, keywords}``:
    ``body`` is Markdown (what the sectioniser splits), ``links`` a list of ``(kind, target)``
    (``wikilink`` targets are note names, ``markdown`` targets relative paths); an optional
    ``warnings`` list names what was indexed other than written (broken frontmatter), for the
    sync report.
    """

    name: str
    patterns: tuple[str, ...]
    parse: Callable[[str, str], Mapping[str, Any]]

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True)
class MemoryHit:
    """One row of ``host.memory_search``: a node a reader of the call's principal may see, best first.

    ``properties`` are what that principal may read of the node (reserved and hidden keys left
    out); ``score`` is the pipeline's fused score, comparable within one search only.
    """

    id: str
    labels: tuple[str, ...]
    score: float
    properties: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any], source: str = "plughost_memory_search") -> MemoryHit:
        """A ``plughost_memory_search`` row (``{id, labels, score, properties}``); a malformed one
        is one :class:`UserError` line naming the field."""
        if not isinstance(row, Mapping):
            raise UserError(f"{source}: row: expected an object with id, labels, score, properties")
        node_id, labels, score, props = row.get("id"), row.get("labels"), row.get("score"), row.get("properties")
        if not isinstance(node_id, str) or not node_id:
            raise UserError(f"{source}: row field 'id': expected a non-empty string, got {node_id!r:.40}")
        if not isinstance(labels, list | tuple) or not all(isinstance(x, str) for x in labels):
            raise UserError(f"{source}: row field 'labels': expected a list of strings")
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise UserError(f"{source}: row field 'score': expected a number, got {score!r:.40}")
        if not isinstance(props, Mapping):
            raise UserError(f"{source}: row field 'properties': expected an object")
        return cls(node_id, tuple(labels), float(score), dict(props))
