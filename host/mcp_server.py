"""The MCP server builder: one plugin's tools served with the `mcp` SDK's ``MCPServer``.

The tools come from two places: PLUGIN.md declares them (name, description, admin allowlist,
eager, input schema) and the ``plughost_tools`` hook supplies the handlers. Arguments are
validated against the JSON Schema before the handler runs; a bad argument or a raising handler
becomes an ``isError`` result with a one-line message, never a crashed server. Eager tools carry
``_meta["anthropic/alwaysLoad"] = true`` in ``tools/list``.

``mcp`` is imported here only, never on the boot path.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server import MCPServer
from mcp_types import CallToolResult, TextContent
from mcp_types import Tool as MCPTool

from host.errors import PlughostError, UserError
from host.log import log
from host.manifest import json_path
from host.types import Tool

if TYPE_CHECKING:  # pragma: no cover
    from host.manager import Host

EAGER_META_KEY = "anthropic/alwaysLoad"
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
    handlers = {c.item.name: c.item for c in host.collect("plughost_tools", Tool, unique="plugin") if c.plugin == plugin}
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
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False, default=str)


class PluginServer(MCPServer):
    """An MCPServer whose tool list and calls come from plughost's tool table."""

    def __init__(self, plugin: str, tools: list[ServedTool], version: str = "") -> None:
        super().__init__(name=plugin, version=version)
        self.plugin = plugin
        self.tools = {t.name: t for t in tools}

    async def list_tools(self) -> list[MCPTool]:  # type: ignore[override]
        return [
            MCPTool(
                name=t.name,
                description=t.description,
                input_schema=t.schema,
                _meta={EAGER_META_KEY: True} if t.eager else None,
            )
            for t in self.tools.values()
        ]

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self.tools.get(name)
        return tool.schema if tool else None

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:  # type: ignore[override]
        return await call_served_tool(self.plugin, self.tools, name, arguments)


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


async def call_served_tool(plugin: str, tools: Mapping[str, ServedTool], name: str,
                           arguments: Mapping[str, Any] | None) -> CallToolResult:
    tool = tools.get(name)
    if tool is None:
        return _error(f"unknown tool '{name}' (this server has: {', '.join(sorted(tools)) or 'none'})")
    arguments = dict(arguments or {})
    problem = argument_error(name, tool.validator, arguments)
    if problem:
        return _error(problem)
    started = time.perf_counter()
    try:
        if inspect.iscoroutinefunction(tool.handler):
            value = await tool.handler(**arguments)
        else:
            value = await anyio.to_thread.run_sync(lambda: tool.handler(**arguments))
    except PlughostError as exc:
        return _error(str(exc))
    except Exception as exc:
        log("mcp", "op=tool-error", plugin=plugin, tool=name, error=type(exc).__name__,
            ms=round((time.perf_counter() - started) * 1000))
        return _error(f"{name} failed: {type(exc).__name__}: {exc}")
    return CallToolResult(content=[TextContent(type="text", text=render(value))], is_error=False)


def build_server(host: Host, plugin: str) -> PluginServer:
    """Build the MCP server for one loaded plugin."""
    record = host.plugin(plugin)
    version = record.manifest.version if record.manifest else ""
    return PluginServer(plugin, served_tools(host, plugin), version=version)


def serve_stdio(host: Host, plugin: str) -> None:
    server = build_server(host, plugin)
    anyio.run(server.run_stdio_async)


def http_app(server: PluginServer, *, path: str = "/mcp", host: str = "127.0.0.1", port: int | None = None,
             stateless: bool = False) -> Any:
    """A Starlette app serving ``server`` over streamable HTTP with DNS-rebinding protection on."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = ["127.0.0.1", "localhost", "[::1]"]
    allowed_hosts = hosts + ([f"{h}:{port}" for h in hosts] if port else [f"{h}:*" for h in hosts])
    origins = [f"http://{h}" for h in allowed_hosts]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts,
                                         allowed_origins=origins)
    return server.streamable_http_app(streamable_http_path=path, transport_security=security, host=host,
                                      stateless_http=stateless)


def serve_http(host: Host, plugin: str, *, port: int, bind: str = "127.0.0.1") -> None:
    import uvicorn

    server = build_server(host, plugin)
    app = http_app(server, host=bind, port=port)
    log("mcp", "op=serve-http", plugin=plugin, url=f"http://{bind}:{port}/mcp")
    uvicorn.run(app, host=bind, port=port, log_level="warning")


def run_plugin_server(plugin: str) -> None:
    """Entry for a plugin's ``mcp/__main__.py``: load the host from the environment, serve stdio."""
    import sys

    from host.manager import Host

    try:
        host = Host().load()
        serve_stdio(host, plugin)
    except PlughostError as exc:
        print(f"plughost mcp: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
