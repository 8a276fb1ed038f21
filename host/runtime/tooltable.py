"""The tool table: declarations joined with handlers once per host, argument checks, in-process calls.

The MCP server builder (:mod:`plughost.mcp.server`) serves these over the wire; in-process callers
(``plughost demo``, the CLI, tests) call :func:`call_tool` and pay no MCP import.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from plughost.runtime import hooktable
from plughost.runtime.manifest import ToolDecl, json_path
from plughost.runtime.plugin_model import local_server
from plughost.runtime.types import Tool, schema_from_signature
from plughost.util.errors import UserError
from plughost.util.log import log

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.host import Host

DEFAULT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
NO_HANDLER = "is declared in PLUGIN.md but no plughost_tools implementation provides it"
NO_TOOLS = "is declared in PLUGIN.md but its plughost_tools returns no Tool (None or an empty list)"
PLACEHOLDER = "has a placeholder description in PLUGIN.md (empty, or just its name): say what the tool does"


class ArgumentValidator:
    """A tool's ``inputSchema`` validator (jsonschema Draft 2020-12), built on the first call's
    arguments: a boot, ``plugins list`` or a server's ``tools/list`` builds the table and checks no
    argument, and pays no jsonschema import."""

    __slots__ = ("schema", "_built")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self._built: Any = None

    def iter_errors(self, instance: Any) -> Any:
        if self._built is None:
            import jsonschema

            self._built = jsonschema.Draft202012Validator(self.schema)
        return self._built.iter_errors(instance)


@dataclass(frozen=True)
class ServedTool:
    name: str
    description: str
    schema: dict[str, Any]
    eager: bool
    handler: Any
    validator: Any
    plugin: str = ""
    admin: bool = False


@dataclass(frozen=True)
class ToolProblem:
    """A tool whose declaration is defective or does not meet its handler: reported, never
    silently dropped or resolved.

    ``reason``: ``undeclared`` (a handler PLUGIN.md does not declare: not served),
    ``no-handler`` (declared, but the plugin's ``plughost_tools`` does not provide it),
    ``signature`` (the declared ``inputSchema`` and the handler's parameters disagree: their
    names, or a property's type and its parameter's annotation),
    ``schema`` (the ``inputSchema`` is not a valid JSON Schema: not served),
    ``disagrees`` (the code's ``Tool`` gives a description, ``inputSchema``, admin or eager flag
    other than PLUGIN.md's: served as PLUGIN.md declares it) or
    ``placeholder`` (PLUGIN.md's description is empty or the tool's name).
    """

    plugin: str
    tool: str
    reason: str
    detail: str

    def line(self) -> str:
        return f"plugin '{self.plugin}': tool '{self.tool}' {self.detail}"


@dataclass
class ToolTable:
    """Every plugin's declarations joined with its handlers, built once per host (``host.tools()``).

    The one join used by the tool surface, the MCP servers (stdio and ``/mcp/<plugin>``),
    ``plugins list``, ``manifests check`` and in-process calls. A plugin's tools are declared once:
    in its PLUGIN.md ``tools:`` when it has a PLUGIN.md, else by the ``Tool`` objects its
    ``plughost_tools`` returns. The handler always comes from ``plughost_tools``; for a tool PLUGIN.md
    declares, the code gives nothing else (a value it does give is checked, never used), and
    the ``inputSchema`` comes from the handler's signature only when PLUGIN.md has none and the
    tool was made by ``Tool.from_function``.
    """

    declared: dict[str, list[ToolDecl]] = field(default_factory=dict)
    served: dict[str, dict[str, ServedTool]] = field(default_factory=dict)
    withheld: dict[str, list[str]] = field(default_factory=dict)
    broken: dict[str, list[str]] = field(default_factory=dict)  # declared, no handler: not served, not on the allowlist
    problems: list[ToolProblem] = field(default_factory=list)
    hook_errors: list[Any] = field(default_factory=list)

    def has_handlers(self, plugin: str) -> bool:
        """Whether the host serves this plugin's tools (else its own MCP server does, if any)."""
        return plugin in self.served

    def of(self, plugin: str) -> dict[str, ServedTool]:
        """The tools one plugin serves; a UserError when none of its declared tools has a handler. A declared
        tool without one is withheld (the boot gate ``plugin-load`` says so): the rest of the server starts,
        as a Claude Code session loses every tool of a server that fails to start."""
        if plugin not in self.served and self.declared.get(plugin):  # no handler at all: not ours to serve
            raise UserError(ToolProblem(plugin, self.declared[plugin][0].name, "no-handler", NO_HANDLER).line())
        return self.served.get(plugin, {})

    def problems_of(self, plugin: str) -> list[ToolProblem]:
        return [p for p in self.problems if p.plugin == plugin]


def build_tool_table(host: Host) -> ToolTable:
    """Call ``plughost_tools`` once and join each loaded plugin's handlers with its declarations."""
    table = ToolTable()
    collected = host.collect(hooktable.TOOLS)
    table.hook_errors = list(collected.errors)
    implementers = {i.plugin_name for i in host.calls.providers(hooktable.TOOLS)}
    for record in sorted(host.loaded(), key=lambda r: r.name):
        _join_plugin(table, record, collected, record.name in implementers)
    return table


def _join_plugin(table: ToolTable, record: Any, collected: Any, implements: bool = False) -> None:
    """One plugin's declarations, problems and served tools, into ``table``."""
    plugin = record.name
    impls = collected.items(plugin)
    manifest = record.manifest
    in_manifest = manifest is not None and manifest.path is not None
    if in_manifest:
        decls = list(manifest.tools)
        table.problems.extend(ToolProblem(plugin, d.name, "placeholder", PLACEHOLDER)
                              for d in decls if _placeholder(d))
    else:
        decls = [_decl_of(t) for t in impls]
    table.declared[plugin] = decls
    if not impls:
        # No handlers: a declarative plugin, or one whose own MCP server serves it. A plugin
        # whose own ``python:`` module should provide them (none, raised, wrong type) is a defect.
        # A failure of the plugin's own plughost_tools, or one that returns no Tool (None, []),
        # is a defect whoever serves the tools.
        failed = [e.reason for e in collected.errors if e.plugin == plugin]
        if decls and manifest is not None and manifest.python and (failed or implements or not _own_server(record)):
            detail = (f"cannot be served: plughost_tools failed: {failed[0]}" if failed
                      else NO_TOOLS if implements else NO_HANDLER)
            table.problems.extend(ToolProblem(plugin, d.name, "no-handler", detail) for d in decls)
        return
    handlers = {t.name: t for t in impls}
    served: dict[str, ServedTool] = {}
    for decl in decls:
        impl = handlers.pop(decl.name, None)
        if impl is None:
            table.problems.append(ToolProblem(plugin, decl.name, "no-handler", NO_HANDLER))
            table.broken.setdefault(plugin, []).append(decl.name)
            continue
        tool = _serve(table, plugin, decl, impl, in_manifest)
        if tool is not None:
            served[decl.name] = tool
    for extra in sorted(handlers):
        table.problems.append(ToolProblem(plugin, extra, "undeclared",
                                          "is provided by plughost_tools but not declared in PLUGIN.md "
                                          "tools: (declare it there to serve it)"))
    table.served[plugin] = served


def _serve(table: ToolTable, plugin: str, decl: ToolDecl, impl: Tool, in_manifest: bool) -> ServedTool | None:
    """The served form of one declared tool with its handler, or None (withheld, broken, bad schema);
    what is wrong with it goes into ``table``."""
    differs = _disagreement(decl, impl) if in_manifest else []
    if differs:
        table.problems.append(ToolProblem(plugin, decl.name, "disagrees", _disagrees(differs)))
    if impl.handler is None:  # withheld in this configuration (e.g. write-cypher when read-only)
        table.withheld.setdefault(plugin, []).append(decl.name)
        return None
    if not callable(impl.handler):  # e.g. the old Tool(name, description) form: text where the handler goes
        table.problems.append(ToolProblem(plugin, decl.name, "no-handler",
                                          f"has a handler that is not callable ({type(impl.handler).__name__}); "
                                          "expected Tool(name, handler)"))
        table.broken.setdefault(plugin, []).append(decl.name)
        return None
    # PLUGIN.md gives no inputSchema: the handler's signature is the schema (llm-style tools from signatures)
    derived = (impl.input_schema if impl.from_signature else None) or (
        None if decl.input_schema else _signature_schema(impl.handler))
    schema = dict(decl.input_schema or derived or DEFAULT_SCHEMA)
    schema.setdefault("type", "object")
    invalid = _schema_error(schema)
    if invalid:
        table.problems.append(ToolProblem(plugin, decl.name, "schema", invalid))
        return None
    mismatch = _signature_mismatch(schema, impl.handler)
    if mismatch:
        table.problems.append(ToolProblem(plugin, decl.name, "signature", mismatch))
    return ServedTool(decl.name, decl.description, schema, decl.eager, impl.handler,
                      ArgumentValidator(schema), plugin, decl.admin_allowlist)


def _signature_schema(handler: Any) -> Mapping[str, Any] | None:
    """The schema a handler's signature gives, or None when the signature cannot say (``**kwargs``)."""
    try:
        return schema_from_signature(handler)
    except Exception:  # an annotation that does not resolve: the declaration's own default applies
        return None


def _own_server(record: Any) -> bool:
    """Whether the plugin names its own MCP server (its tools are served there, not by the host)."""
    manifest = record.manifest
    return manifest is not None and (bool(manifest.mcp) or local_server(manifest.folder) is not None)


_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_ANY = frozenset({"default", "const", "examples", "$comment"})
_TEXT = frozenset({"description", "title", "format"})
_NUMBER = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COUNT = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
_SUBSCHEMA = frozenset({"items", "additionalProperties", "not"})
_SUBSCHEMAS = frozenset({"anyOf", "oneOf", "allOf"})


def _plain_type(value: Any, depth: int) -> bool:
    kinds = [value] if isinstance(value, str) else value
    return isinstance(kinds, list) and bool(kinds) and len(set(map(repr, kinds))) == len(kinds) and \
        all(isinstance(k, str) and k in _TYPES for k in kinds)


def _plain_required(value: Any, depth: int) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value) and len(set(value)) == len(value)


def _plain_count(value: Any, depth: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 0


def _plain_number(value: Any, depth: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


# keyword -> whether its value is plainly valid (``depth`` bounds the nesting of subschemas)
_PLAIN: dict[str, Callable[[Any, int], bool]] = {
    **dict.fromkeys(_ANY, lambda v, d: True),
    "examples": lambda v, d: isinstance(v, list),
    **dict.fromkeys(_TEXT, lambda v, d: isinstance(v, str)),
    "type": _plain_type,
    "properties": lambda v, d: isinstance(v, dict) and all(_plain(s, d + 1) for s in v.values()),
    **dict.fromkeys(_SUBSCHEMA, lambda v, d: _plain(v, d + 1)),
    **dict.fromkeys(_SUBSCHEMAS, lambda v, d: isinstance(v, list) and bool(v) and all(_plain(s, d + 1) for s in v)),
    "required": _plain_required,
    "enum": lambda v, d: isinstance(v, list),
    "uniqueItems": lambda v, d: isinstance(v, bool),
    **dict.fromkeys(_NUMBER, _plain_number),
    **dict.fromkeys(_COUNT, _plain_count),
}


def _plain(schema: Any, depth: int = 0) -> bool:
    """Whether ``schema`` uses only keywords whose valid values are plain to see (type, properties,
    items, required, enum, bounds, text) and all of them validly: then it is a valid Draft 2020-12
    schema and the metaschema need not run. False means "not shown here", never "invalid"."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or depth > 32:
        return False
    for key, value in schema.items():
        check = _PLAIN.get(key)
        if check is None or not check(value, depth):
            return False
    return True


def _schema_error(schema: Mapping[str, Any]) -> str | None:
    """One line naming the field of an ``inputSchema`` that is not a valid JSON Schema, or None.
    A schema of plain keywords (:func:`_plain`) is seen valid without running the metaschema."""
    if _plain(schema):
        return None
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = json_path(exc.path) or "(root)"
        return f"has an invalid inputSchema at '{where}': {exc.message:.120}"
    return None


def _decl_of(tool: Tool) -> ToolDecl:
    """The declaration of a tool no PLUGIN.md declares: its ``Tool`` object's fields."""
    admin = bool(tool.admin_allowlist)
    eager = admin if tool.eager is None else tool.eager
    return ToolDecl(tool.name, tool.description or "", admin, eager,
                    dict(tool.input_schema) if tool.input_schema else None)


def _placeholder(decl: ToolDecl) -> bool:
    text = decl.description.strip()
    return not text or text == decl.name


def _disagreement(decl: ToolDecl, impl: Tool) -> list[str]:
    """The PLUGIN.md fields a declared tool's ``Tool`` in code gives another value for.

    What ``Tool.from_function`` derived from the handler (docstring, signature) is no value given
    here: the signature is checked by :func:`_signature_mismatch`.
    """
    fields = []
    if not impl.from_signature:
        if impl.description is not None and impl.description != decl.description:
            fields.append("description")
        if impl.input_schema is not None and dict(impl.input_schema) != decl.input_schema:
            fields.append("inputSchema")
    if impl.admin_allowlist is not None and impl.admin_allowlist != decl.admin_allowlist:
        fields.append("adminAllowlist")
    if impl.eager is not None and impl.eager != decl.eager:
        fields.append("eager")
    return fields


def _disagrees(fields: list[str]) -> str:
    return (f"differs between PLUGIN.md and its Tool in code ({', '.join(fields)}): PLUGIN.md's is served; "
            "declare it in PLUGIN.md only and give the code the name and handler")


def _signature_mismatch(schema: Mapping[str, Any], handler: Any) -> str | None:
    """Why the schema's properties and the handler's parameters cannot meet, or None."""
    try:
        params = inspect.signature(handler).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    accepted = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    declared = set(schema.get("properties") or {})
    unknown = sorted(declared - accepted)
    if unknown:
        return f"has an inputSchema property '{unknown[0]}' that is not a parameter of its handler"
    needed = sorted(n for n in accepted if params[n].default is inspect.Parameter.empty and n not in declared)
    if needed:
        return f"has a handler parameter '{needed[0]}' without default that is not in inputSchema"
    return _type_mismatch(schema, handler)


def _type_mismatch(schema: Mapping[str, Any], handler: Any) -> str | None:
    """A property whose declared ``type`` the handler's annotation for it contradicts, or None.

    The signature is a check of the declared schema, never a second declaration: only simple
    ``type`` words are compared (an integer may go to a parameter annotated ``float``).
    """
    try:
        derived = schema_from_signature(handler)["properties"]
    except Exception:  # noqa: BLE001 — an annotation that does not resolve checks nothing
        return None
    for name, prop in sorted((schema.get("properties") or {}).items()):
        want = prop.get("type") if isinstance(prop, Mapping) else None
        have = derived.get(name, {}).get("type")
        if isinstance(want, str) and isinstance(have, str) and want != have \
                and not (want == "integer" and have == "number"):
            return f"has an inputSchema property '{name}' of type {want}, but its handler's parameter takes {have}"
    return None


def served_tools(host: Host, plugin: str) -> list[ServedTool]:
    """The tools one plugin serves (from the host's tool table); a UserError naming a declared tool
    without handler."""
    record = host.plugin(plugin)
    if not record.loaded:
        raise UserError(f"plugin '{plugin}': not loaded ({record.reason})")
    table = host.tools()
    for name in table.withheld.get(plugin, []):
        log("mcp", "op=tool-withheld", plugin=plugin, tool=name)
    for problem in table.problems_of(plugin):
        if problem.reason == "undeclared":
            log("mcp", "op=undeclared-tool", plugin=plugin, tool=problem.tool)
        else:
            log("mcp", "op=tool-problem", plugin=plugin, tool=problem.tool, reason=problem.reason,
                detail=problem.detail)
    return list(table.of(plugin).values())


def argument_error(tool: str, validator: Any, arguments: Mapping[str, Any]) -> str | None:
    """One line naming the first bad parameter, or None when the arguments are valid."""
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return None
    err = errors[0]
    path = json_path(err.absolute_path)
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else "?"
        return f"{tool}: parameter '{missing}' is required"
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        return f"{tool}: parameter '{(path + '.' if path else '') + (extra[0] if extra else '?')}' is not accepted"
    expected = err.schema.get("type") or err.validator
    if err.validator == "enum":
        expected = "one of " + ", ".join(map(str, err.validator_value))
    elif err.validator == "type":
        expected = str(err.validator_value)
    elif err.validator in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern"):
        expected = f"{err.validator} {err.validator_value}"
    return f"{tool}: parameter '{path or '(arguments)'}': expected {expected} (got {err.instance!r:.60})"


def render(value: Any) -> str:
    """Tool results as text: strings verbatim, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False, default=str)



def checked_call(tools: Mapping[str, ServedTool], name: str,
                 arguments: Mapping[str, Any] | None) -> tuple[ServedTool, dict[str, Any]]:
    """The tool and its arguments once both are valid; a UserError naming the tool or parameter otherwise.

    The one check shared by MCP calls and in-process calls.
    """
    tool = tools.get(name)
    if tool is None:
        raise UserError(f"unknown tool '{name}' (this server has: {', '.join(sorted(tools)) or 'none'})")
    args = dict(arguments or {})
    problem = argument_error(name, tool.validator, args)
    if problem:
        raise UserError(problem)
    return tool, _integers(tool.schema, args)


def _integers(schema: Mapping[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """A top-level ``integer`` parameter given as an integral float (``2.0``, ``1e20``: JSON Schema
    counts them as integers) reaches the handler as an ``int``, as its signature says."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return args
    for key, value in args.items():
        spec = props.get(key)
        if isinstance(value, float) and value.is_integer() and isinstance(spec, Mapping) \
                and spec.get("type") == "integer":
            args[key] = int(value)
    return args


def check_tool_call(host: Host, plugin: str, name: str,
                    arguments: Mapping[str, Any] | None = None) -> tuple[ServedTool, dict[str, Any]]:
    """What :func:`call_tool` checks before it calls (the plugin, the tool, every argument against
    its input schema), without calling: a UserError naming the first problem."""
    record = host.plugin(plugin)
    if not record.loaded:
        raise UserError(f"plugin '{plugin}': not loaded ({record.reason})")
    return checked_call(host.tools().of(plugin), name, arguments)


def call_tool(host: Host, plugin: str, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
    """Call one plugin tool in-process with the same argument checks as over MCP.

    A bad argument raises :class:`UserError` naming the parameter.
    """
    tool, args = check_tool_call(host, plugin, name, arguments)
    value = tool.handler(**args)
    if inspect.isawaitable(value):
        import asyncio

        value = asyncio.run(_awaited(value))
    return value


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value
