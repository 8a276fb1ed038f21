"""Shared helpers for `plughost memory` subcommands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plughost import UserError
from plughost.api.store import BadLine, parse_line


def account(host: Any, needs: str = "the id of the account to write to") -> str:
    """``ACCOUNT_ID``, or a one-line UserError saying what the command needs it for."""
    return str(host.principal.require_account(needs))


def json_arg(text: str | None, option: str, kind: type = dict) -> Any:
    if text is None:
        return None
    try:
        value = parse_line(text.encode("utf-8", "surrogatepass"))
    except BadLine as exc:
        raise UserError(f"{option}: {exc}") from None
    if not isinstance(value, kind):
        raise UserError(f"{option}: expected a JSON {'object' if kind is dict else 'array'}")
    return value


def read_text(path: Path, option: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{option} {path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2))
