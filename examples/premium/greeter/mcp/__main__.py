"""The greeter plugin's MCP server: its declared tools, served over stdio by the host."""

from plughost import log, run_plugin_server

if __name__ == "__main__":
    log("mcp", "op=serve-stdio", plugin="greeter")
    run_plugin_server("greeter")
