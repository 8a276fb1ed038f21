"""The settings registry: every ``PLUGHOST_*`` variable, declared once with its type, default and doc.

A :class:`Setting` is the one home of a variable's name, type, default and one-line doc, and the
one way to read it: ``SEARCH_STEM.read(host.env)`` is the typed value, the default when the
variable is unset or empty, and a value that is not what the type expects is one
:class:`~plughost.util.errors.UserError` line naming the variable and what was expected
(``PLUGHOST_WEBCHAT_MAX_TURNS: expected an integer >= 1 (got 'x')``).

The host's own settings are declared here (:data:`HOST`); each plugin declares its own in
``plugins/<name>/settings.py`` and publishes them through the ``plughost_settings`` hook.
:mod:`plughost.runtime.settings` joins them: ``plughost settings``, ``docs/configuration.md`` and the
warning about a ``PLUGHOST_*`` variable nobody declares. ``tests/host/test_settings_reads.py``
fails on a ``PLUGHOST_*`` read anywhere else.

Only the standard library and :mod:`plughost.util.errors`: the hook process imports this through
:mod:`plughost.ports.principal`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, cast

from plughost.util.errors import UserError

T = TypeVar("T")
Kind = Literal["str", "int", "float", "bool", "csv", "path", "choice"]
KINDS: tuple[str, ...] = ("str", "int", "float", "bool", "csv", "path", "choice")
PREFIX = "PLUGHOST_"
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
_INT = re.compile(r"[+-]?[0-9]{1,18}")


def csv_list(value: str | None) -> list[str] | None:
    """Parse a comma list; None when unset, [] when set to the empty string."""
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _number(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One ``PLUGHOST_*`` variable (a few other names are read through one too: ``EMBED_*``). ``default`` is what :meth:`read` gives when it is unset or empty
    (None: unset means something the reader works out, said in ``doc``). ``minimum`` /
    ``maximum`` bound an int or float (inclusive; ``above`` is an exclusive lower bound);
    ``choices`` are a choice's values (matched without case)."""

    name: str
    type: Kind
    default: T
    doc: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    fallback: bool = False
    """A bad value is logged by its reader and the default applies (the surfacing hook's values, which
    the builtins-only hook stages read the same way), so the start check leaves it to the reader."""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*", self.name):
            raise ValueError(f"{self.name!r}: a setting's name is upper case (A-Z, 0-9, _), e.g. ACME_LIMIT")
        if self.type not in KINDS:
            raise ValueError(f"{self.name}: type: expected one of the strings {', '.join(repr(k) for k in KINDS)}, "
                             f"got {self.type!r}")
        if (self.type == "choice") != bool(self.choices):
            raise ValueError(f"{self.name}: choices go with type 'choice' (and only with it)")

    @property
    def key(self) -> str:
        """What the hook table de-duplicates on: one name, one declaration."""
        return self.name

    # ------------------------------------------------------------------ reading
    def raw(self, env: Mapping[str, str] | None = None) -> str | None:
        """The value as set, stripped; None when unset or empty."""
        value = (os.environ if env is None else env).get(self.name)
        value = value.strip() if isinstance(value, str) else None
        return value or None

    def is_set(self, env: Mapping[str, str] | None = None) -> bool:
        return self.raw(env) is not None

    def read(self, env: Mapping[str, str] | None = None) -> T:
        """The typed value (``os.environ`` when ``env`` is None); the default when unset or empty;
        a bad value is a one-line UserError. A csv set to the empty string is the empty list."""
        if self.type == "csv":
            value = (os.environ if env is None else env).get(self.name)
            return self.default if value is None else cast(T, csv_list(value))
        raw = self.raw(env)
        return self.default if raw is None else cast(T, self.parse(raw))

    def read_or_default(self, env: Mapping[str, str] | None = None) -> T:
        """:meth:`read` where a read must never fail (the log writer, error reporting): a bad value
        gives the default."""
        try:
            return self.read(env)
        except UserError:
            return self.default

    def problem(self, env: Mapping[str, str] | None = None) -> str | None:
        """The one-line complaint about the value as set, or None when it reads."""
        try:
            self.read(env)
        except UserError as exc:
            return str(exc)
        return None

    def parse(self, raw: str) -> Any:
        """``raw`` (stripped, not empty) as this setting's type; a UserError naming what was expected."""
        text = raw.strip()
        if self.type in ("str", "path"):
            return text if self.type == "str" else Path(text)
        if self.type == "csv":
            return csv_list(text)
        if self.type == "bool":
            low = text.lower()
            if low in TRUE or low in FALSE:
                return low in TRUE
            raise self.bad(raw)
        if self.type == "choice":
            low = text.lower()
            if low not in self.choices:
                raise self.bad(raw)
            return low
        if self.type == "int":
            if not _INT.fullmatch(text):
                raise self.bad(raw)
            value: float = int(text)
        else:
            try:
                value = float(text)
            except ValueError:
                raise self.bad(raw) from None
            if not math.isfinite(value):
                raise self.bad(raw)
        if ((self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum)
                or (self.above is not None and value <= self.above)):
            raise self.bad(raw)
        return value

    def bad(self, raw: str) -> UserError:
        return UserError(f"{self.name}: expected {self.expected()} (got {raw.strip()[:40]!r})")

    def expected(self) -> str:
        """What a value must be, for the error line and the table: ``an integer >= 1``."""
        if self.type == "bool":
            return "1 or 0 (also true/false, yes/no, on/off)"
        if self.type == "choice":
            return "one of " + ", ".join(self.choices)
        if self.type not in ("int", "float"):
            return {"str": "a text", "path": "a path", "csv": "a comma list"}[self.type]
        what = "an integer" if self.type == "int" else "a number"
        low = self.minimum if self.minimum is not None else None
        if low is not None and self.maximum is not None:
            return f"{what} from {_number(low)} to {_number(self.maximum)}"
        bounds = []
        if self.above is not None:
            bounds.append(f"> {_number(self.above)}")
        if low is not None:
            bounds.append(f">= {_number(low)}")
        if self.maximum is not None:
            bounds.append(f"<= {_number(self.maximum)}")
        return " ".join([what, " and ".join(bounds)]) if bounds else what

    def shown_default(self) -> str:
        """The default as one would set it (``1`` / ``0`` for a bool, a comma list); "" when unset."""
        value: Any = self.default
        if value is None:
            return ""
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, float):
            return _number(value)
        if isinstance(value, (list, tuple)):
            return ",".join(str(v) for v in value)
        return str(value)


def declared(namespace: Mapping[str, Any]) -> tuple[Setting[Any], ...]:
    """The settings a module declares (``declared(vars())`` at its end), in declaration order."""
    return tuple(v for v in namespace.values() if isinstance(v, Setting))


# ---------------------------------------------------------------------- the host's own settings
HOME: Setting[Path] = Setting(
    "PLUGHOST_HOME", "path", Path("~/.plughost"),
    "the data root: accounts/<id>/, logs/, credentials/, sites/, graph.sqlite, .env (the environment only, never .env)")
PLUGINS_DIR: Setting[Path | None] = Setting(
    "PLUGHOST_PLUGINS_DIR", "path", None,
    "a folder of more platform plugins, loaded (and bundled) beside the built-ins (--plugins-dir); "
    "plughost install sets it to the payload's plugins/")
PREMIUM_DIR: Setting[Path | None] = Setting(
    "PLUGHOST_PREMIUM_DIR", "path", None,
    "premium bundles: <name>/PLUGIN.md or <bundle>/plugins/<sub>/PLUGIN.md (--premium-dir)")
MANIFESTS_DIR: Setting[Path | None] = Setting(
    "PLUGHOST_MANIFESTS_DIR", "path", None, "where the JSON Schemas and shipped brands live (unset: the install's manifests/)")
TEMPLATES_DIR: Setting[Path | None] = Setting(
    "PLUGHOST_TEMPLATES_DIR", "path", None, "one more folder of specialist agent templates")
DISABLE_PLUGINS: Setting[list[str] | None] = Setting(
    "PLUGHOST_DISABLE_PLUGINS", "csv", None,
    "plugins not to load, applied before any import; a name no discovered plugin has is exit 2 with a did-you-mean")
LOAD_PLUGINS: Setting[list[str] | None] = Setting(
    "PLUGHOST_LOAD_PLUGINS", "csv", None,
    "load only these plugins (set but empty, or none: no plugin); unknown names as for the block list")
NO_EXTERNAL_PLUGINS: Setting[bool] = Setting(
    "PLUGHOST_NO_EXTERNAL_PLUGINS", "bool", False, "load the built-in plugins only")
BRAND: Setting[str | None] = Setting(
    "PLUGHOST_BRAND", "str", None,
    "the brand to run as (a name in host/manifests/brands/, the payload brand's name or a brand JSON path): what its "
    "plugins.excluded names does not load; its productName greets webchat visitors. Unset: the payload's brand.json, "
    "else PLUGHOST_BRAND_FILE")
BRAND_FILE: Setting[Path | None] = Setting(
    "PLUGHOST_BRAND_FILE", "path", None,
    "the install's brand: the payload's brand.json, recorded by plughost install (read when no payload is beside the "
    "plugins folder; a recorded file that is missing is the install-brand gate's finding)")
STORE: Setting[str | None] = Setting(
    "PLUGHOST_STORE", "str", None,
    "the graph store: sqlite, neo4j (or graph: the built-in's choice) or a store plugin's name; an installed store "
    "plugin replaces the built-in unless this names it; two need one named (gate single-provider)")
EMBEDDER: Setting[str | None] = Setting(
    "PLUGHOST_EMBEDDER", "str", None,
    "the embedder: local (unset), ollama, none (no embedder) or an embedder plugin's name, chosen as for the store")
GRAPH_READ_ONLY: Setting[bool] = Setting(
    "PLUGHOST_GRAPH_READ_ONLY", "bool", False,
    "a reader: no write-cypher, no tool-call audit nodes, and the Neo4j store never runs schema DDL")
CONFIG_DIR: Setting[Path | None] = Setting(
    "PLUGHOST_CONFIG_DIR", "path", None,
    "the Claude Code config dir plughost install made live (written to <PLUGHOST_HOME>/.env by the install)")
CLAUDE_CONFIG_DIR: Setting[Path | None] = Setting(
    "PLUGHOST_CLAUDE_CONFIG_DIR", "path", None,
    "a config dir that overrides the recorded install for the claude runner and the gates alike")
PYTHON: Setting[Path | None] = Setting(
    "PLUGHOST_PYTHON", "path", None,
    "the interpreter generated MCP entries and hook scripts run (plughost install writes it into settings.json env)")
SESSION_ROLE: Setting[str | None] = Setting(
    "PLUGHOST_SESSION_ROLE", "str", None,
    "a runner turn's role: admin, public or any other word (a session); set by the channels runner for its child")
SESSION_ID: Setting[str | None] = Setting(
    "PLUGHOST_SESSION_ID", "str", None, "a runner turn's session; set by the channels runner for its child")
TRACE_HOOKS: Setting[bool] = Setting(
    "PLUGHOST_TRACE_HOOKS", "bool", False, "log every hook call ([hooks] op=call ... / op=return ...)")
VERBOSE: Setting[bool] = Setting(
    "PLUGHOST_VERBOSE", "bool", False, "log what loaded and which provider answered ([plugins] op=loaded / op=provider)")
DEBUG: Setting[bool] = Setting(
    "PLUGHOST_DEBUG", "bool", False, "print a failing hook's traceback, and keep the MCP library's info lines")
LOG_FILE: Setting[bool] = Setting(
    "PLUGHOST_LOG_FILE", "bool", True, "append log lines to <PLUGHOST_HOME>/logs/server.log (0: stderr only)")
OPEN_LOCAL: Setting[bool] = Setting(
    "PLUGHOST_OPEN_LOCAL", "bool", False,
    "open /mcp/* and the admin API to loopback requests without a credential (development; loopback binds only)")
HTTP_MAX_BODY: Setting[int] = Setting(
    "PLUGHOST_HTTP_MAX_BODY", "int", 1024 * 1024, "the default request body cap in bytes (a route may set its own)",
    minimum=0)
HTTP_HEADER_TIMEOUT: Setting[float] = Setting(
    "PLUGHOST_HTTP_HEADER_TIMEOUT", "float", 5.0, "seconds a client has to send a whole request head",
    above=0, maximum=3600)
HTTP_BODY_TIMEOUT: Setting[float] = Setting(
    "PLUGHOST_HTTP_BODY_TIMEOUT", "float", 30.0, "seconds a client has to send a whole request body (then 408)",
    above=0, maximum=3600)
HTTP_MAX_CONNECTIONS: Setting[int] = Setting(
    "PLUGHOST_HTTP_MAX_CONNECTIONS", "int", 1000, "connections served at once (then 503)", minimum=1)
SHUTDOWN_GRACE: Setting[float] = Setting(
    "PLUGHOST_SHUTDOWN_GRACE", "float", 10.0,
    "seconds a SIGTERM gives requests and running agent turns; the rest is resumed by the next start",
    minimum=0, maximum=3600)
LEASE_TTL: Setting[float] = Setting(
    "PLUGHOST_LEASE_TTL", "float", 30.0,
    "seconds a lease on a shared store (Neo4j) lasts unrenewed: a dead serve's turns are taken over after it "
    "(renewed every third of it while the work runs)", minimum=2, maximum=3600)
SERVE_NO_FAST_EXIT: Setting[bool] = Setting(
    "PLUGHOST_SERVE_NO_FAST_EXIT", "bool", False,
    "let plughost serve end through the interpreter's teardown instead of exiting at once after its stop")

HOST: tuple[Setting[Any], ...] = declared(vars())
"""The host's own settings; the plugins' come through the ``plughost_settings`` hook."""

NOT_SETTINGS: dict[str, str] = {
    "PLUGHOST_SPECIALIST": "set for an agent runner's child process (the turn's specialist); plughost never reads it",
    "PLUGHOST_HELLO_GREETING": "the example of the plughost_settings hook's docs (a plugin of one's own)",
    "PLUGHOST_TOOLS_DIR": "the test suite's external tools folder (tests/conftest.py, scripts/install-tools.sh)",
    "PLUGHOST_REQUIRE_EXTERNAL": "the test suite: fail instead of skipping without an external tool (CI)",
    "PLUGHOST_TEST_EMBEDDER": "the test suite: the embedder its tests run with",
    "PLUGHOST_TEST_NO_ACCOUNT": "the test suite: run a command without creating its account first",
    "PLUGHOST_TEST_WORKERS": "scripts/test.sh: pytest workers",
    "PLUGHOST_TESTS_NEO4J_ENV": "the test suite: the Neo4j connection it stashes for the tests that ask",
    "PLUGHOST_NEO4J_CACHE": "scripts/neo4j/neo4j.sh: where the development Neo4j server is cached",
}
"""``PLUGHOST_*`` names that are not settings of the host or a plugin, with why: never warned
about as unknown, and allowed as literals in ``host/`` and ``plugins/``."""
