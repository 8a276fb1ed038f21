"""plughost: a pluggy-based plugin host for AI-agent platforms.

Importing this package is cheap on purpose: nothing here loads plugins, MCP or Neo4j.
Build a :class:`host.runtime.host.Host` to discover and load plugins.
"""

__version__ = "0.1.0"
