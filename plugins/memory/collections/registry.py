"""The collections of an account: ``<PLUGHOST_HOME>/collections/<account>/registry.json``.

``{name: {path, pattern, source, scope, agents, addedAt}}``, written atomically. A collection's
sync state sits beside it (``<name>.state.sqlite``).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from host.errors import UserError

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
SCOPE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass
class Collection:
    name: str
    path: str
    pattern: str | None = None  # None: the source's own patterns
    source: str = "markdown"
    scope: str | None = None
    agents: list[str] = field(default_factory=list)
    added_at: float = 0.0

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["addedAt"] = data.pop("added_at")
        return data

    @classmethod
    def from_json(cls, name: str, data: dict[str, Any]) -> Collection:
        return cls(name=name, path=str(data["path"]), pattern=data.get("pattern"), source=data.get("source", "markdown"),
                   scope=data.get("scope"), agents=list(data.get("agents") or []), added_at=float(data.get("addedAt", 0)))


def folder(home: Path, account_id: str) -> Path:
    return home / "collections" / account_id


def registry_path(home: Path, account_id: str) -> Path:
    return folder(home, account_id) / "registry.json"


def state_path(home: Path, account_id: str, name: str) -> Path:
    return folder(home, account_id) / f"{name}.state.sqlite"


def load(home: Path, account_id: str) -> dict[str, Collection]:
    path = registry_path(home, account_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: cannot read the collection registry: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected an object of collections")
    return {name: Collection.from_json(name, entry) for name, entry in sorted(data.items()) if isinstance(entry, dict)}


def save(home: Path, account_id: str, collections: dict[str, Collection]) -> None:
    path = registry_path(home, account_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({n: c.as_json() for n, c in sorted(collections.items())}, indent=2) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)


def check(name: str, path: str, scope: str | None, agents: list[str]) -> Path:
    if not NAME.match(name or ""):
        raise UserError(f"NAME: '{name}' is not a collection name; expected lowercase letters, digits, '-' or '_' "
                        "(1-64 characters, starting with a letter or digit)")
    folder_path = Path(path).expanduser()
    if not folder_path.is_dir():
        raise UserError(f"PATH: '{path}' is not a folder")
    if scope is not None and not SCOPE.match(scope):
        raise UserError(f"--scope: '{scope}' is not a scope name (letters, digits, '-', '_')")
    for agent in agents:
        if not SCOPE.match(agent):
            raise UserError(f"--agent: '{agent}' is not an agent slug (letters, digits, '-', '_')")
    return folder_path.resolve()


def add(home: Path, account_id: str, name: str, path: str, *, pattern: str | None = None, source: str = "markdown",
        scope: str | None = None, agents: list[str] | None = None) -> Collection:
    """Register (or re-point) a collection; its state is kept when the folder stays the same."""
    resolved = check(name, path, scope, list(agents or []))
    collections = load(home, account_id)
    old = collections.get(name)
    coll = Collection(name, str(resolved), pattern, source, scope, list(agents or []),
                      old.added_at if old else time.time())
    collections[name] = coll
    save(home, account_id, collections)
    return coll
