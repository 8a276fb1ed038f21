"""Plugins' tools over MCP: the stdio and HTTP servers, the stdio tee, frame checks."""
