"""The serving app (``plughost serve``): routes, MCP mounts, the front door and the bounded stop."""
