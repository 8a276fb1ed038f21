"""The ``plughost`` command: argument parsing, the principal of the call, one subcommand module each."""
