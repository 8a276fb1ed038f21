"""Who is acting: the one place a call's principal is decided (docs/roles.md).

Every entry point (a CLI command, an MCP server over stdio, a request on ``/mcp/*`` or any HTTP
route, a hook process, a runner turn, a scheduled job, the collections watcher) resolves its
:class:`Principal` here, once, and hands it down; no other module reads the variables in
:data:`VARS` (a test fails on any such read). A child process or a narrowed host gets its
variables from :func:`child_env`, so the splice of an environment is decided here too.

The rule every role follows is one table, :data:`ROLES`; the narrower reading always wins: a
session that does not say it is an admin's reads public memory only and is never admin, and
``ALLOWED_SCOPES`` / ``AGENT_SLUG`` only ever narrow.

Only the standard library and ``plughost.util.settings`` / ``plughost.util.errors`` are imported: the hook
process resolves its caller with this module too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from plughost.util import settings
from plughost.util.errors import AccountUnset, UserError
from plughost.util.settings import csv_list

ACCOUNT = "ACCOUNT_ID"
SCOPES = "ALLOWED_SCOPES"
USER_SCOPE = "user"
"""The scope of a visitor's own memory (docs/channels.md#visitor-memory). ``ALLOWED_SCOPES`` never
grants it: a process narrowed to it reads, writes and deletes none of it, as any other narrowed one."""
AGENT = "AGENT_SLUG"
SESSION = "SESSION_ID"
SESSION_NODE = "SESSION_NODE_ID"
RUNNER_ROLE = settings.SESSION_ROLE.name
RUNNER_SESSION = settings.SESSION_ID.name
VARS: tuple[str, ...] = (ACCOUNT, SCOPES, AGENT, SESSION, SESSION_NODE, RUNNER_ROLE, RUNNER_SESSION)
"""The principal's inputs in a process environment; nothing outside this module reads them."""

PUBLIC = "public"
ISOLATION = "account-isolation"

ACCOUNT_ID_RULE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""What an account id may look like (it names a folder, so no separators): the one rule, which
``Principal.owner`` / ``.system`` and ``plughost.runtime.accounts.check_id`` both apply."""
ACCOUNT_ID_EXPECTED = "letters, digits, '.', '-' or '_' (1-128 characters, starting with a letter or digit)"


class Role(StrEnum):
    """Who a call is, from the owner down to a stranger; :data:`ROLES` says what each may do."""

    OPERATOR = "operator"
    SYSTEM = "system"
    OWNER = "owner"
    ADMIN_SESSION = "admin-session"
    SCOPED = "scoped"
    AGENT = "agent"
    SESSION = "session"
    PUBLIC = "public"


@dataclass(frozen=True)
class Rights:
    """One row of the role table. ``admin``: admin-only tools and commands (the tool-call audit,
    other roles' tasks, imports, purge, reindex, preferences, collections) unless something
    narrows; ``public_only``: reads and writes hold ``public`` at most, whatever else is asked."""

    admin: bool
    public_only: bool
    who: str
    reads: str
    changes: str


ROLES: dict[Role, Rights] = {
    Role.OPERATOR: Rights(True, False, "the install's operator: no ACCOUNT_ID (install-wide commands)",
                          "nothing of an account (account commands refuse)", "install-wide maintenance only"),
    Role.SYSTEM: Rights(True, False, "the host itself for an account: imports, derived data (embeddings, entities, "
                        "indexed forms), channel records, upkeep; never resolved from an environment",
                        "everything in the account", "everything in the account, as written: no default scope or agent"),
    Role.OWNER: Rights(True, False, "the account's owner: the CLI, the owner's MCP servers, the HTTP token",
                       "everything in the account", "everything in the account"),
    Role.ADMIN_SESSION: Rights(True, False, "an owner's session: an admin runner turn, an admin session token",
                               "everything in the account; briefings of its own session only",
                               "everything in the account"),
    Role.SCOPED: Rights(False, False, "a process narrowed by ALLOWED_SCOPES",
                        "nodes in its scopes, and legacy nodes with no scope",
                        "nodes it reads, kept in its scopes; no admin-only tool"),
    Role.AGENT: Rights(False, False, "an agent's process: AGENT_SLUG (with or without scopes)",
                       "nodes tagged with its agent, within its scopes",
                       "nodes it reads, keeping its own tag; no admin-only tool"),
    Role.SESSION: Rights(False, True, "a session-confined process: SESSION_ID, or a runner turn naming no admin role",
                         "public nodes and legacy unscoped ones; its own conversation and briefings",
                         "public nodes it reads; its own conversation; no admin-only tool"),
    Role.PUBLIC: Rights(False, True, "a public visitor: webchat, a channel sender, PLUGHOST_SESSION_ROLE=public",
                        "public nodes and legacy unscoped ones; its own conversation and briefings",
                        "public nodes it reads; its own conversation; no admin-only tool"),
}
"""The one table of what each role may read and change (rendered in ``docs/roles.md`` by :func:`role_table`)."""


def role_table() -> str:
    """:data:`ROLES` as the markdown table of ``docs/roles.md`` (a test pins the page to it)."""
    rows = ["| role | who | reads | may change | admin-only tools |", "|---|---|---|---|---|"]
    for role, r in ROLES.items():
        rows.append(f"| `{role.value}` | {r.who} | {r.reads} | {r.changes} | {'yes' if r.admin else 'no'} |")
    rows.append("| another account | any principal of account B | nothing of account A | nothing of account A | no |")
    return "\n".join(rows)


# Another account is no role: a principal's account bounds every read and write, so account B's
# principal sees nothing of account A whatever its role.


@dataclass(frozen=True)
class Guards:
    """The guard layers' inputs for one read or write, applied by the store inside each query.

    ``allowed_scopes`` None means no scope filter (admin); ``agent_slug`` None means no agent
    filter. Built from a :class:`Principal` (``principal.guards``), never from the environment.
    """

    account_id: str
    allowed_scopes: tuple[str, ...] | None = None
    agent_slug: str | None = None
    session: str | None = None
    """A confined writer's session: the Conversation and Message nodes it writes must be its own
    session's conversation (docs/guards.md#write-guards). Reads ignore it (the read tools confine)."""
    system: bool = False
    """The host's own write for the account (:meth:`Principal.system`): bound to the account and
    nothing else; a new node is stored as written (no default scope or agent). Reads ignore it."""

    @property
    def narrowed(self) -> bool:
        """Whether anything narrows these guards (scopes or an agent): admin-only tools refuse then."""
        return self.allowed_scopes is not None or self.agent_slug is not None

    @property
    def confined(self) -> bool:
        """Whether writes see conversations through the confined view: a narrowed process, or a
        session writing its own conversation (``confined_view`` in :mod:`plughost.ports.graph`)."""
        return self.narrowed or self.session is not None

    def narrow(self, scopes: Sequence[str] | None = None, agent: str | None = None) -> Guards:
        """These guards narrowed by tool parameters, never widened.

        ``scopes`` outside ``allowed_scopes`` are dropped; ``agent`` may set an agent filter only
        when none is set; naming another agent while one is set is rejected.
        """
        allowed = self.allowed_scopes
        if scopes is not None:
            wanted = [s for s in scopes if s]
            allowed = tuple(s for s in wanted if allowed is None or s in allowed)
        slug = self.agent_slug
        if agent:
            if slug and agent != slug:
                raise UserError(f"agent: '{agent}' is not this process's agent; AGENT_SLUG is '{slug}'")
            slug = agent
        if allowed == self.allowed_scopes and slug == self.agent_slug:
            return self
        return replace(self, allowed_scopes=allowed, agent_slug=slug, system=False)


def _account_of(account: object, who: str) -> str:
    """``account`` when it names one; a principal built for no account, or for a name no account
    may have (``../x``), is a bug in its caller."""
    if not isinstance(account, str) or not account.strip():
        raise ValueError(f"Principal.{who}: account: expected the id of an account, got {account!r}")
    if not ACCOUNT_ID_RULE.match(account):
        raise ValueError(f"Principal.{who}: account: {account!r} is not a valid account id; expected {ACCOUNT_ID_EXPECTED}")
    return account


class AdminOnly(UserError):
    """An admin-only operation asked for by a principal that is not admin (nothing was done)."""

    reason = ISOLATION


@dataclass(frozen=True)
class Principal:
    """Who a call runs as, resolved once where the call enters and passed down.

    ``session`` confines conversation tools to that session's conversation (session and public
    roles, and a ``SESSION_ID`` set for an admin); ``session_key`` is the session a briefing or a
    task belongs to, whatever the role; ``session_node`` the node its provenance hangs from.
    """

    account: str | None
    role: Role
    scopes: tuple[str, ...] | None = None
    agent: str | None = None
    session: str | None = None
    session_key: str | None = None
    session_node: str | None = None

    @classmethod
    def owner(cls, account: str) -> Principal:
        """The account's owner: reads and changes everything in it; a new node naming no scope is
        stored in the owner's (``admin``). The principal of an account-wide read or an owner's write.
        An empty ``account`` is refused (``ValueError``): an owner is always some account's."""
        return cls(_account_of(account, "owner"), Role.OWNER)

    @classmethod
    def system(cls, account: str) -> Principal:
        """The host itself acting for ``account`` (an import, derived data, a channel's record, upkeep):
        what it writes is stored as written. A child process of it resolves as the owner.
        An empty ``account`` is refused (``ValueError``)."""
        return cls(_account_of(account, "system"), Role.SYSTEM)

    # -- what it may do -----------------------------------------------------------------------
    @property
    def rights(self) -> Rights:
        return ROLES[self.role]

    @property
    def account_id(self) -> str:
        """The account every read and write is bound to; a one-line refusal when there is none."""
        if not self.account:
            raise AccountUnset("ACCOUNT_ID: not set; expected the id of an account under PLUGHOST_HOME/accounts/")
        return self.account

    @property
    def guards(self) -> Guards:
        """Its guards; a narrowed principal's carry its session, whose conversation alone it writes."""
        narrowed = self.narrowed
        return Guards(self.account_id, self.scopes, self.agent, self.session if narrowed else None,
                      system=self.role is Role.SYSTEM and not narrowed)

    @property
    def own_guards(self) -> Guards:
        """What a confined session reads and writes its own conversation under: that one
        conversation, whatever its scope (a visitor's stays admin until identity opens it), its
        agent kept; anyone without a session: :attr:`guards`."""
        if self.session is None:
            return self.guards
        return Guards(self.account_id, None, self.agent, self.session)

    @property
    def narrowed(self) -> bool:
        return self.scopes is not None or self.agent is not None

    @property
    def is_admin(self) -> bool:
        """Admin-only tools and commands: an admin role that nothing narrows."""
        return self.rights.admin and not self.narrowed

    @property
    def is_public(self) -> bool:
        return self.rights.public_only

    def require_admin(self, what: str) -> None:
        """Refuse (:class:`AdminOnly`) an admin-only operation for anyone but an unnarrowed admin."""
        if not self.is_admin:
            raise AdminOnly(f"{what}: admin only; this process is narrowed ({self.describe()}) ({ISOLATION})")

    def require_account(self, needs: str) -> str:
        if not self.account:
            raise AccountUnset(f"ACCOUNT_ID: not set; expected {needs}")
        return self.account

    def describe(self) -> str:
        bits = [f"role {self.role.value}"]
        if self.scopes is not None:
            bits.append(f"scopes {','.join(self.scopes) or 'none'}")
        if self.agent:
            bits.append(f"agent {self.agent}")
        if self.session:
            bits.append("a confined session")
        return ", ".join(bits)

    # -- narrower principals ------------------------------------------------------------------
    def narrowed_to(self, *, scopes: Sequence[str] | None = None, agent: str | None = None) -> Principal:
        """This principal narrowed by tool parameters (never widened); the role is kept."""
        g = Guards(self.account or "-", self.scopes, self.agent).narrow(scopes, agent)
        role = self.role
        if role in (Role.OWNER, Role.SYSTEM, Role.ADMIN_SESSION, Role.OPERATOR) and (g.allowed_scopes is not None or g.agent_slug):
            role = Role.AGENT if g.agent_slug else Role.SCOPED
        return replace(self, role=role, scopes=g.allowed_scopes, agent=g.agent_slug)

    def within(self, bound: Principal, what: str) -> Principal:
        """This principal (one a plugin hands the host) never wider than ``bound`` (the process's).

        Another account is refused (:class:`UserError` naming ``what``); otherwise scopes are
        intersected, ``bound``'s agent is kept (naming another is refused), the narrower of the two
        roles holds, and a conversation other than ``bound``'s own is not kept."""
        if self.account != bound.account:
            mine = f"'{bound.account}'" if bound.account else "unset"
            raise UserError(f"{what}: parameter 'principal': account '{self.account}' is not this process's "
                            f"account (ACCOUNT_ID is {mine}); a plugin acts for its process's account only ({ISOLATION})")
        g = Guards(self.account or "-", bound.scopes, bound.agent).narrow(self.scopes, self.agent)
        order = list(ROLES)
        role = max(self.role, bound.role, key=order.index)
        if ROLES[role].admin and (g.allowed_scopes is not None or g.agent_slug):
            role = Role.AGENT if g.agent_slug else Role.SCOPED
        scopes = _public(g.allowed_scopes) if ROLES[role].public_only else g.allowed_scopes
        confined = bound.narrowed or bound.session is not None
        session = self.session if not confined or self.session == bound.session else None
        return replace(self, role=role, scopes=scopes, agent=g.agent_slug, session=session)

    def visitor(self, session: str | None = None) -> Principal:
        """A public visitor of this account (webchat, a channel sender): public memory only,
        confined to ``session`` when given, never wider than this principal."""
        scopes = _public(self.scopes)
        return replace(self, role=Role.PUBLIC, scopes=scopes, session=session or None,
                       session_key=session or None, session_node=None)

    def for_turn(self, role: str, session: str) -> Principal:
        """An agent turn of this account for ``session``: an admin's session when ``role`` is
        ``admin`` (as narrow as this principal), else a visitor confined to it, public at most."""
        if role == "admin":
            return replace(self, role=Role.ADMIN_SESSION, session=None, session_key=session, session_node=None)
        return replace(self, role=Role.PUBLIC if role == PUBLIC else Role.SESSION, scopes=_public(self.scopes),
                       session=session, session_key=session, session_node=None)

    def for_account(self, account: str) -> Principal:
        """The same role in ``account`` (a command's ``--account``, a served account)."""
        return replace(self, account=account)

    def as_env(self) -> dict[str, str]:
        """The variables a child process (a runner turn, a hook, a narrowed host) resolves this
        principal from: :func:`resolve` of :func:`child_env` gives it back."""
        out: dict[str, str] = {}
        if self.account:
            out[ACCOUNT] = self.account
        if self.scopes is not None:
            out[SCOPES] = ",".join(self.scopes)
        if self.agent:
            out[AGENT] = self.agent
        if self.role is Role.ADMIN_SESSION:
            out[RUNNER_ROLE] = "admin"
        elif self.role in (Role.PUBLIC, Role.SESSION):
            out[RUNNER_ROLE] = self.role.value
        if self.session_key:
            out[RUNNER_SESSION] = self.session_key
        if self.session and self.role is Role.ADMIN_SESSION:
            out[SESSION] = self.session
        if self.session_node:
            out[SESSION_NODE] = self.session_node
        return out


def _public(scopes: tuple[str, ...] | None) -> tuple[str, ...]:
    """``public`` at most: an empty tuple when the scopes already exclude it (unscoped only)."""
    return (PUBLIC,) if scopes is None or PUBLIC in scopes else ()


def _clean(env: Mapping[str, str], var: str) -> str | None:
    value = env.get(var)
    return value.strip() if isinstance(value, str) and value.strip() else None


def resolve(env: Mapping[str, str] | None = None, *, account: str | None = None) -> Principal:
    """The principal of a process environment (``os.environ`` when None): the one resolver.

    ``account`` (a command's ``--account``) replaces ``ACCOUNT_ID``. The role, narrowest first:
    a runner role other than ``admin`` (``public`` or any other word) → public / session; a
    ``SESSION_ID`` or a runner session naming no role → session; ``PLUGHOST_SESSION_ROLE=admin``
    → admin-session; ``AGENT_SLUG`` → agent; ``ALLOWED_SCOPES`` → scoped; an
    account → owner; none → operator.
    """
    env = os.environ if env is None else env
    acct = account.strip() if isinstance(account, str) and account.strip() else _clean(env, ACCOUNT)
    scopes_list = csv_list(env.get(SCOPES))
    # the visitors' own memory is never a process's scope: only the slice-pinned read reaches it
    scopes = tuple(s for s in scopes_list if s != USER_SCOPE) if scopes_list is not None else None
    agent = _clean(env, AGENT)
    runner_role = (settings.SESSION_ROLE.read(env) or "").lower() or None
    explicit = _clean(env, SESSION)
    runner = settings.SESSION_ID.read(env)
    node = _clean(env, SESSION_NODE)
    key = explicit or runner
    if runner_role is not None and runner_role != "admin":
        role = Role.PUBLIC if runner_role == PUBLIC else Role.SESSION
    elif runner_role is None and key:
        role = Role.SESSION
    elif runner_role == "admin":
        role = Role.ADMIN_SESSION
    elif agent:
        role = Role.AGENT
    elif scopes is not None:
        role = Role.SCOPED
    else:
        role = Role.OWNER if acct else Role.OPERATOR
    if ROLES[role].public_only:
        scopes = _public(scopes)
    confined = explicit if role is Role.ADMIN_SESSION else key
    return Principal(acct, role, scopes, agent, confined, key, node)


SET_WHEN_EMPTY = frozenset({SCOPES})
"""Variables whose empty value means something (``ALLOWED_SCOPES=``: unscoped nodes only)."""


def narrowest(config: Mapping[str, str], env: Mapping[str, str], merged: dict[str, str]) -> dict[str, str]:
    """A Claude Code config dir's ``settings.json`` env (``config``) under a process env: the
    config dir's narrowing holds even under an env that asks for more. Scopes set in both are
    their intersection, a non-admin role in either is the role, the config dir's agent is the
    agent (the hook's builtins-only first stage restates this; a test pins the two)."""
    if SCOPES in config and SCOPES in env:
        mine = {s.strip() for s in env[SCOPES].split(",") if s.strip()}
        merged[SCOPES] = ",".join(s.strip() for s in config[SCOPES].split(",") if s.strip() and s.strip() in mine)
    roles = [r.strip().lower() for r in (config.get(RUNNER_ROLE, ""), env.get(RUNNER_ROLE, ""))]
    narrowed = [r for r in roles if r and r != "admin"]
    if narrowed:
        merged[RUNNER_ROLE] = narrowed[0]
    if config.get(AGENT, "").strip():
        merged[AGENT] = config[AGENT]
    return merged


def child_env(base: Mapping[str, str], principal: Principal | None) -> dict[str, str]:
    """``base`` with the principal's variables replaced by ``principal``'s (none when None): the
    environment of a child process or a narrowed host that must act as exactly that principal."""
    out = {k: v for k, v in base.items() if k not in VARS}
    if principal is not None:
        out.update(principal.as_env())
    return out


def with_account(base: Mapping[str, str], account: str) -> dict[str, str]:
    """``base`` acting as ``account`` (a command's ``--account``, the account a payload is
    installed for): the rest of the principal's inputs kept."""
    return {**base, ACCOUNT: account}


def set_account(env: MutableMapping[str, str], account: str) -> None:
    """Make a command's own environment (its call context, never ``os.environ``) act as ``account``."""
    env[ACCOUNT] = account


def principal_vars(env: Mapping[str, str]) -> tuple[str | None, ...]:
    """The raw inputs, as a cache key (a host re-resolves only when they change)."""
    return tuple(env.get(v) for v in VARS)
