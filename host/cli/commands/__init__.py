"""Core `plughost` subcommands, one module each (see plughost.cli.CORE_COMMANDS)."""
