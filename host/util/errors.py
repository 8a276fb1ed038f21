"""Error types that the CLI turns into one-line messages and exit codes (docs/cli.md#bad-input, docs/cli.md#exit-codes)."""

from __future__ import annotations


class PlughostError(Exception):
    """Base class for every error the host reports to a user without a traceback."""

    exit_code = 2


class UserError(PlughostError):
    """Bad input: a file, field or parameter that is not what was expected (exit 2)."""

    exit_code = 2


class FatalError(PlughostError):
    """A gate or build refused to go on (exit 1). The message is printed verbatim."""

    exit_code = 1


class StoreUnavailable(PlughostError):
    """The graph store does not answer (its database is down or unreachable): HTTP 503, an
    ``isError`` tool result, exit 1, one line naming the store and what it said."""

    exit_code = 1


class DuplicateNameError(UserError):
    """Two sources claim one name; the message names both."""


class AccountMismatch(UserError):
    """A write named an account other than the process's ``ACCOUNT_ID`` (stores raise it; callers
    report it as ``account-isolation``)."""


class AccountUnset(UserError):
    """The process has no ``ACCOUNT_ID`` and the call needs one (an MCP server adds the install's fix)."""
