"""The tool-call trail (docs/memory.md#the-tool-call-audit): :mod:`.trail` turns each tool call of an admin
session into one redacted ``ToolCall`` node; :mod:`.writer` stores the served MCP calls off the
reply path, in batches.
"""
