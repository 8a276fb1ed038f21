"""Core `plughost` subcommands, one module each (see host.cli.CORE_COMMANDS)."""
