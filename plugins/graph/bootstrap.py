"""An account's seed in the graph: its owner and admins as ``AdminUser`` + ``UserProfile`` nodes.

Why: the standing rules (docs/memory.md#preferences) hang off the owner's ``UserProfile`` (``AdminUser {role:
owner}`` → ``UserProfile`` with the same ``userId`` → ``HAS_PREFERENCE``), and reports fall back
to the owner as their parent. A fresh account without them can store no rule and injects none.

Every node has a fixed id (``account-bootstrap``, ``admin-<userId>``, ``profile-<userId>``), so
running it again merges instead of duplicating; an ``account-bootstrap`` Task is their
provenance (an inbound ``PRODUCED`` edge), as the write path requires for people.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plughost import Principal, log

TASK_ID = "account-bootstrap"


def node_ids(user_id: str) -> tuple[str, str]:
    return f"admin-{user_id}", f"profile-{user_id}"


def seed_account(store: Any, account_id: str, users: Sequence[dict[str, Any]]) -> list[str]:
    """Upsert the Task, then each admin's AdminUser + UserProfile; returns the ids written."""
    admins = [u for u in users if isinstance(u, dict) and isinstance(u.get("userId"), str)
              and u.get("role", "owner" if u is users[0] else "admin") in ("owner", "admin")]
    rows: list[dict[str, Any]] = [{
        "id": TASK_ID, "labels": ["Task"],
        "properties": {"name": "account bootstrap", "status": "done", "scope": "admin",
                       "description": "plughost account create: the owner and admins of the account"},
        "edges": [],
    }]
    for i, user in enumerate(admins):
        role = "owner" if i == 0 and user.get("role", "owner") == "owner" else "admin"
        admin_id, profile_id = node_ids(user["userId"])
        name = str(user.get("name") or user["userId"])
        rows.append({"id": admin_id, "labels": ["AdminUser"],
                     "properties": {"userId": user["userId"], "name": name, "role": role, "scope": "admin"},
                     "edges": [{"type": "HAS_PROFILE", "to": profile_id}]})
        rows.append({"id": profile_id, "labels": ["UserProfile"],
                     "properties": {"userId": user["userId"], "name": name, "scope": "admin"}, "edges": []})
        rows[0]["edges"] += [{"type": "PRODUCED", "to": admin_id}, {"type": "PRODUCED", "to": profile_id}]
    # one transaction; the edges stay within the batch
    store.upsert_many(rows, guards=Principal.system(account_id).guards)
    log("graph", "op=account-bootstrap", account=account_id, admins=len(admins),
        owner=admins[0]["userId"] if admins else None)
    return [r["id"] for r in rows]
