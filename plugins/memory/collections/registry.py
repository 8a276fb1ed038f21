"""The collections of an account: ``<PLUGHOST_HOME>/collections/<account>/registry.json``.

``{name: {path, pattern, source, scope, agents, addedAt, registeredOnly}}``, written atomically
under a lock file. A collection's sync state sits beside it (``<name>.state.sqlite``), and so
does its sync lock (``<name>.lock``). A collection without a scope is private: ``admin``
(an unscoped node would be visible to every scope). ``registeredOnly`` (``add --no-sync``)
keeps the watcher off it until its first explicit ``collection sync``.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from plughost import UserError

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
SCOPE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DEFAULT_SCOPE = "admin"
"""The scope of a collection added without ``--scope``: private (``--scope public`` publishes)."""

SYSTEM_TREES = ("/dev", "/proc", "/sys", "/run", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                "/etc", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec",
                "/usr/include", "/var/lib", "/var/log", "/var/cache", "/var/run", "/System", "/private/var",
                "/private/etc")
"""System folders refused with everything inside them (devices, kernel views, binaries, config)."""
SYSTEM_FOLDERS = ("/", "/usr", "/usr/local", "/usr/share", "/var", "/opt", "/srv", "/tmp", "/var/tmp", "/home",
                  "/root", "/mnt", "/media", "/snap", "/nix", "/Users", "/Library", "/Applications", "/Volumes",
                  "/private", "/private/tmp")
"""Top folders refused themselves (a notes folder inside them, e.g. ``/home/me/notes``, is fine)."""


@dataclass
class Collection:
    name: str
    path: str
    pattern: str | None = None  # None: the source's own patterns
    source: str = "markdown"
    scope: str = DEFAULT_SCOPE
    agents: list[str] = field(default_factory=list)
    added_at: float = 0.0
    registered_only: bool = False
    unscoped_before: bool = field(default=False, compare=False)
    """Registered before collections had a default scope: its nodes may be unscoped (re-scoped on sync)."""

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("unscoped_before")
        data["addedAt"] = data.pop("added_at")
        data["registeredOnly"] = data.pop("registered_only")
        return data

    @classmethod
    def from_json(cls, name: str, data: dict[str, Any]) -> Collection:
        scope = data.get("scope")
        return cls(name=name, path=str(data["path"]), pattern=data.get("pattern"), source=data.get("source", "markdown"),
                   scope=str(scope) if scope else DEFAULT_SCOPE, agents=list(data.get("agents") or []),
                   added_at=float(data.get("addedAt", 0)), registered_only=bool(data.get("registeredOnly")),
                   unscoped_before=not scope)


def folder(home: Path, account_id: str) -> Path:
    return home / "collections" / account_id


def registry_path(home: Path, account_id: str) -> Path:
    return folder(home, account_id) / "registry.json"


def state_path(home: Path, account_id: str, name: str) -> Path:
    return folder(home, account_id) / f"{name}.state.sqlite"


def lock_path(home: Path, account_id: str, name: str) -> Path:
    return folder(home, account_id) / f"{name}.lock"


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


@contextmanager
def locked(home: Path, account_id: str) -> Iterator[None]:
    """The registry's read-modify-write, one process at a time."""
    path = folder(home, account_id) / "registry.lock"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def refused_path(folder_path: Path, home: Path) -> str | None:
    """Why a (resolved) folder cannot be a collection, or None: the filesystem root, the home
    folder itself, a system folder, or one holding or inside PLUGHOST_HOME (the sync's own
    writes would wake the watcher forever)."""
    user_home = Path(os.path.expanduser("~")).resolve()
    plughost_home = home.expanduser().resolve()
    inside = "; expected a folder of notes inside it"
    if folder_path == Path(folder_path.anchor):
        return "is the filesystem root" + inside
    if folder_path == user_home:
        return "is your home folder itself" + inside
    for tree in SYSTEM_TREES:
        if _inside(folder_path, Path(tree)):
            return f"is a system folder ({tree}); expected a folder of notes"
    if str(folder_path) in SYSTEM_FOLDERS:
        return "is a system folder" + inside
    if folder_path == plughost_home:
        return "is PLUGHOST_HOME (the sync's own writes would wake its watcher forever); expected a folder of notes"
    if _inside(folder_path, plughost_home):
        return f"is inside PLUGHOST_HOME ({plughost_home}); expected a folder of notes"
    if _inside(plughost_home, folder_path):
        return f"holds PLUGHOST_HOME ({plughost_home}); expected a folder of notes beside it"
    return None


def check_pattern(pattern: str | None) -> None:
    """A glob relative to the folder: not empty, not absolute, brackets closed."""
    if pattern is None:
        return
    if not pattern.strip():
        raise UserError("--pattern: empty; expected a glob relative to PATH, e.g. '**/*.md'")
    if pattern.startswith("/") or pattern.split("/")[0] == "..":
        raise UserError(f"--pattern: '{pattern}' leaves PATH; expected a glob relative to it, e.g. '**/*.md'")
    i = 0
    while i < len(pattern):
        if pattern[i] != "[":
            i += 1
            continue
        j = i + 1 + (pattern[i + 1:i + 2] == "!")
        j += pattern[j:j + 1] == "]"  # a ']' first in the set is a member
        close = pattern.find("]", j)
        if close < 0:
            raise UserError(f"--pattern: '{pattern}' has a '[' without its ']'; expected a glob, e.g. '**/*.md'")
        i = close + 1


def check(name: str, path: str, scope: str | None, agents: list[str], home: Path | None = None,
          pattern: str | None = None) -> Path:
    if not name:
        raise UserError("NAME: empty; expected a collection name (lowercase letters, digits, '-' or '_')")
    if not NAME.match(name):
        raise UserError(f"NAME: '{name}' is not a collection name; expected lowercase letters, digits, '-' or '_' "
                        "(1-64 characters, starting with a letter or digit)")
    if not path:
        raise UserError("PATH: empty; expected a folder of notes")
    folder_path = Path(path).expanduser()
    if not folder_path.is_dir():
        raise UserError(f"PATH: '{path}' is not a folder")
    resolved = folder_path.resolve()
    if home is not None:
        why = refused_path(resolved, home)
        if why:
            raise UserError(f"PATH: '{path}' {why}")
    if scope is not None and not SCOPE.match(scope):
        raise UserError(f"--scope: '{scope}' is not a scope name (letters, digits, '-', '_')")
    for agent in agents:
        if not SCOPE.match(agent):
            raise UserError(f"--agent: '{agent}' is not an agent slug (letters, digits, '-', '_')")
    check_pattern(pattern)
    return resolved


def add(home: Path, account_id: str, name: str, path: str, *, pattern: str | None = None, source: str = "markdown",
        scope: str | None = None, agents: list[str] | None = None, replace: bool = False,
        registered_only: bool = False) -> Collection:
    """Register a collection; an existing name is refused unless ``replace`` (which re-points it;
    its state is kept when the folder stays the same). A folder that is, holds or is inside
    another collection's is refused: every note would be stored twice."""
    resolved = check(name, path, scope, list(agents or []), home, pattern)
    with locked(home, account_id):
        collections = load(home, account_id)
        old = collections.get(name)
        if old is not None and not replace:
            raise UserError(f"NAME: collection '{name}' exists ({old.path}); pass --replace to re-point it, "
                            "or remove it first")
        for other in collections.values():
            if other.name == name:
                continue
            there = Path(other.path)
            if _inside(resolved, there) or _inside(there, resolved):
                relation = "is" if resolved == there else "is inside" if _inside(resolved, there) else "holds"
                raise UserError(f"PATH: '{path}' {relation} the folder of collection '{other.name}' ({other.path}); "
                                "its notes would be stored twice")
        coll = Collection(name, str(resolved), pattern, source, scope or DEFAULT_SCOPE, list(agents or []),
                          old.added_at if old else time.time(), registered_only)
        collections[name] = coll
        save(home, account_id, collections)
    return coll


def remove(home: Path, account_id: str, name: str) -> Collection:
    """Unregister ``name`` (a running sync of it sees that and stops)."""
    with locked(home, account_id):
        collections = load(home, account_id)
        if name not in collections:
            raise UserError(f"NAME: no collection '{name}' for account '{account_id}'"
                            f" (registered: {', '.join(collections) or 'none'})")
        coll = collections.pop(name)
        save(home, account_id, collections)
    return coll


def mark_synced(home: Path, account_id: str, name: str) -> None:
    """Clear ``registeredOnly`` after an explicit sync: the watcher keeps it fresh from now on."""
    with locked(home, account_id):
        collections = load(home, account_id)
        coll = collections.get(name)
        if coll is not None and coll.registered_only:
            coll.registered_only = False
            save(home, account_id, collections)
