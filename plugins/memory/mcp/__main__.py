"""The memory plugin's MCP server over stdio: ``python -m plugins.memory.mcp``."""

from host.mcp.server import run_plugin_server

if __name__ == "__main__":
    run_plugin_server("memory")
