"""The admin plugin's MCP server over stdio: ``python -m plughost.plugins.admin.mcp`` (the hostname tools)."""

from plughost import run_plugin_server

if __name__ == "__main__":
    run_plugin_server("admin")
