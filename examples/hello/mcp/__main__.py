"""The hello plugin's MCP server over stdio (what the generated plugin.json starts)."""

from plughost import run_plugin_server

if __name__ == "__main__":
    run_plugin_server("hello")
