"""A plugin's served tools, without MCP: declarations joined with handlers, argument checks, calls.

The MCP server builder (:mod:`host.mcp_server`) serves these over the wire; in-process callers
(``plughost demo``, the CLI, tests) call :func:`call_tool` and pay no MCP import.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from host import hooktable
from host.errors import UserError
from host.log import log
from host.manifest import json_path

if TYPE_CHECKING:  # pragma: no cover
    from host.manager import Host

DEFAULT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ServedTool:
    name: str
    description: str
    schema: dict[str, Any]
    eager: bool
    handler: Any
    validator: Any


def served_tools(host: Host, plugin: str) -> list[ServedTool]:
    """The tools one plugin serves: its declarations joined with its handlers.

    A declared tool without a handler is an error naming the plugin and tool; a handler that
    PLUGIN.md does not declare is not served (the surface is the declarations) and is logged.
    """
    import jsonschema

    record = host.plugin(plugin)
    if not record.loaded:
        raise UserError(f"plugin '{plugin}': not loaded ({record.reason})")
    handlers = {c.item.name: c.item for c in host.collect(hooktable.TOOLS) if c.plugin == plugin}
    from host.surface import declared_tools

    out = []
    for decl in declared_tools(host, plugin):
        impl = handlers.pop(decl.name, None)
        if impl is None:
            raise UserError(
                f"plugin '{plugin}': tool '{decl.name}' is declared in PLUGIN.md but no plughost_tools "
                "implementation provides it"
            )
        if impl.handler is None:  # withheld in this configuration (e.g. write-cypher when read-only)
            log("mcp", "op=tool-withheld", plugin=plugin, tool=decl.name)
            continue
        schema = dict(decl.input_schema or impl.input_schema or DEFAULT_SCHEMA)
        schema.setdefault("type", "object")
        jsonschema.Draft202012Validator.check_schema(schema)
        out.append(ServedTool(decl.name, decl.description or impl.description, schema, decl.eager,
                              impl.handler, jsonschema.Draft202012Validator(schema)))
    for extra in sorted(handlers):
        log("mcp", "op=undeclared-tool", plugin=plugin, tool=extra)
    return out


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
    return tool, args


def call_tool(host: Host, plugin: str, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
    """Call one plugin tool in-process with the same argument checks as over MCP.

    A bad argument raises :class:`UserError` naming the parameter.
    """
    tool, args = checked_call({t.name: t for t in served_tools(host, plugin)}, name, arguments)
    value = tool.handler(**args)
    if inspect.isawaitable(value):
        import asyncio

        value = asyncio.run(value)
    return value
