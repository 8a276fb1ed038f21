"""The greeter plugin's MCP server: its declared tools, served over stdio by the host."""

from plughost.mcp.server import run_plugin_server
from plughost.util.log import log

if __name__ == "__main__":
    log("mcp", "op=serve-stdio", plugin="greeter")
    run_plugin_server("greeter")
