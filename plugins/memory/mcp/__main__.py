"""The memory plugin's MCP server over stdio: ``python -m plughost.plugins.memory.mcp``."""

from plughost import run_plugin_server

if __name__ == "__main__":
    run_plugin_server("memory")
