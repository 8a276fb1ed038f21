"""Core `plughost` subcommands, one module each (see plughost.cli.main.CORE_COMMANDS)."""
