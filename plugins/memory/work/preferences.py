"""Preferences and active rules (docs/memory.md#preferences): ``profile-update``, ``profile-read``, ``plughost_active_rules``.

``profile-update`` reconciles by meaning so a rephrased rule never forks: an exact
``(category, key)`` match first, else the nearest admin-scope Preference of the account by
embedding with cosine ≥ ``SAME_SUBJECT_COSINE``; only when both miss is a new node minted. The
matched node moves along the confidence curve:

- ``reinforce`` (same value, or the caller says so): confidence + 0.1, capped at 1.0;
- ``update`` (a new value for the same subject): the value is replaced, confidence kept;
- ``contradict`` (the caller says the new statement contradicts the stored one): the prior
  rule is demoted — its value moves to ``previousValue`` and the confidence drops by 0.2
  (never below the 0.4 active floor, so the correction itself stays active).

Active rules are the one definition the channels plugin injects every admin turn: the account
owner's (``AdminUser {role: owner}`` → ``UserProfile`` with the same ``userId`` →
``HAS_PREFERENCE``) admin-scope preferences with confidence ≥ 0.4, by confidence, verbatim,
no cap. A non-owner's preferences never appear; no owner means no rules (``source=no-owner``).
The owner and its profile are admin-written records only (admin or no scope, no agent tag): a
narrowed process that writes its own ``AdminUser {role: owner}`` shadows nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plughost import Embedder, GraphStore, Guards, Node, Principal, StateKey, Tool, log
from plughost.api.principals import resolve
from plughost.api.store import can_change, guarded_upsert_many
from plughost.plugins.memory.writes.outcome import Call, WriteRejected, run_with_outcome

if TYPE_CHECKING:  # pragma: no cover
    from plughost import Host

SAME_SUBJECT_COSINE = 0.85
ACTIVE_FLOOR = 0.4
BASE_CONFIDENCE = 0.5
REINFORCE_STEP = 0.1
CONTRADICT_STEP = 0.2
EXPAND_ALL = 1_000_000
OWNER_PAGE = 50


def preference_text(category: str, key: str, value: str) -> str:
    """What a preference embeds: its subject and its rule, as one short line."""
    return f"{category}: {key.replace('_', ' ').replace('-', ' ')}: {value}"


def _admin_written(node: Any) -> bool:
    """Whether only an unnarrowed process could have written ``node``: admin or no scope, no agent tag.

    A public or agent process may write an ``AdminUser {role: owner}`` or a ``UserProfile`` it can
    read; the owner's identity must not be one of those, or it would shadow the real owner's rules.
    """
    return node.properties.get("scope") in (None, "admin") and not node.properties.get("agents")


def _first_admin_written(store: GraphStore, guards: Guards, label: str, where: dict[str, Any]) -> Any:
    """The newest admin-written node matching, paging past any number of narrowed writers' decoys."""
    offset = 0
    while True:
        page = store.find(guards=guards, labels=[label], where=where, limit=OWNER_PAGE, offset=offset)
        found = next((n for n in page if _admin_written(n)), None)
        if found is not None or len(page) < OWNER_PAGE:
            return found
        offset += OWNER_PAGE


def owner_user(store: GraphStore, guards: Guards) -> Any:
    """The account owner's AdminUser, or None."""
    return _first_admin_written(store, guards, "AdminUser", {"role": "owner"})


def owner_profile(store: GraphStore, guards: Guards) -> tuple[Any, Any]:
    """(owner AdminUser or None, owner's UserProfile or None)."""
    owner = owner_user(store, guards)
    if owner is None:
        return None, None
    user_id = owner.properties.get("userId")
    profile = _first_admin_written(store, guards, "UserProfile", {"userId": user_id}) if user_id else None
    return owner, profile


def profile_preferences(store: GraphStore, guards: Guards, profile_id: str) -> list[Any]:
    """The profile's admin-scope Preferences that the guards can read as rows of their own (the
    expansion's untagged-neighbour allowance does not make a row readable)."""
    around = store.expand([profile_id], guards=guards, limit=EXPAND_ALL).get(profile_id, [])
    return [n.node for n in around if n.type == "HAS_PREFERENCE" and n.direction == "out"
            and "Preference" in n.node.labels and n.node.properties.get("scope") == "admin"
            and can_change(guards, n.node.properties)]


def active_rules(store: GraphStore, guards: Guards) -> dict[str, Any]:
    """The account owner's active standing rules (the single definition; see the module doc).

    ``guards`` are the reader's (``profile-read`` passes the process's); the channels plugin's
    admin turn reads them as the account's owner (``Principal.owner(account).guards``).
    """
    owner, profile = owner_profile(store, guards)
    if owner is None:
        return {"rules": [], "source": "no-owner", "owner": None}
    prefs = profile_preferences(store, guards, profile.id) if profile is not None else []
    active = [p for p in prefs if float(p.properties.get("confidence", 0)) >= ACTIVE_FLOOR]
    active.sort(key=lambda p: (-float(p.properties.get("confidence", 0)), p.id))
    rules = [{"id": p.id, "category": p.properties.get("category"), "key": p.properties.get("key"),
              "value": p.properties.get("value"), "confidence": p.properties.get("confidence")} for p in active]
    return {"rules": rules, "source": "owner", "owner": owner.id}


def _changes(action: str, old: Mapping[str, Any], value: str, confidence: float) -> dict[str, Any]:
    """What reinforcing, updating or contradicting a stored preference changes on it."""
    changes: dict[str, Any] = {"updatedBy": "profile-update"}
    if action == "reinforce":
        changes["confidence"] = round(min(1.0, confidence + REINFORCE_STEP), 3)
        changes["reinforcements"] = int(old.get("reinforcements", 0)) + 1
    elif action == "update":
        changes.update(value=value, confidence=round(max(confidence, BASE_CONFIDENCE), 3))
    else:
        changes.update(value=value, previousValue=old.get("value"),
                       confidence=round(max(ACTIVE_FLOOR, confidence - CONTRADICT_STEP), 3),
                       contradictions=int(old.get("contradictions", 0)) + 1)
    return changes


class Preferences:
    def __init__(self, store: GraphStore, embedder: Embedder | None, env: Mapping[str, str],
                 principal: Principal | None = None) -> None:
        self.store, self.embedder, self.env = store, embedder, env
        self.principal = principal or resolve(env)  # the call's principal, resolved once

    def _guards(self) -> Guards:
        self.principal.require_account("the id of the account preferences belong to (an account under "
                                       "PLUGHOST_HOME/accounts/)")
        return self.principal.guards

    def _profile(self, guards: Guards, user_id: str | None) -> Any:
        if user_id:
            found = self.store.find(guards=guards, labels=["UserProfile"], where={"userId": user_id}, limit=1)
            if not found:
                raise WriteRejected("invalid-target-node-id", f"userId: no UserProfile for '{user_id}' in this account")
            return found[0]
        _, profile = owner_profile(self.store, guards)
        if profile is None:
            raise WriteRejected("invalid-target-node-id",
                                "no owner UserProfile in this account (give userId, or seed the owner's AdminUser "
                                "and UserProfile)")
        return profile

    def update(self, call: Call, *, category: str, key: str, value: str, relation: str | None = None,
               userId: str | None = None) -> dict[str, Any]:  # noqa: N803
        guards = self._guards()
        call.labels, call.name = ["Preference"], key
        if not self.principal.is_admin:  # standing rules steer every admin turn: only an admin writes them
            raise WriteRejected("account-isolation", f"profile-update: admin only; this process is narrowed "
                                f"({self.principal.describe()}), and preferences are the owner's standing rules")
        for name, text in (("category", category), ("key", key), ("value", value)):
            if not isinstance(text, str) or not text.strip():
                raise WriteRejected("invalid-input", f"{name}: expected non-empty text")
        if relation not in (None, "reinforce", "update", "contradict"):
            raise WriteRejected("invalid-input", "relation: expected reinforce, update or contradict")
        profile = self._profile(guards, userId)
        existing = profile_preferences(self.store, guards, profile.id)
        vector = self._embed(preference_text(category, key, value))
        match, mode, similarity, neighbours = self._reconcile(guards, existing, category, key, vector)
        log("preference-write", "op=reconcile", mode=mode,
            similarity=f"{similarity:.3f}" if similarity is not None else None)
        if match is None:
            node_id = self._create(guards, profile, category, key, value, vector)
            call.element_id = node_id
            return {"id": node_id, "mode": "new", "action": "created", "confidence": BASE_CONFIDENCE,
                    "neighbours": neighbours}
        old = match.properties
        confidence = float(old.get("confidence", BASE_CONFIDENCE))
        same_value = str(old.get("value", "")).strip().lower() == value.strip().lower()
        action = relation or ("reinforce" if same_value else "update")
        changes = _changes(action, old, value, confidence)
        new_vector = vector if action != "reinforce" else None
        guarded_upsert_many(self.store, [{"id": match.id, "labels": list(match.labels), "properties": changes,
                                          **({"embedding": new_vector} if new_vector is not None else {})}],
                            guards=guards)
        call.element_id = match.id
        return {"id": match.id, "mode": mode, "action": action, "confidence": changes["confidence"],
                "similarity": round(similarity, 3) if similarity is not None else None, "neighbours": neighbours,
                "previous": {"key": old.get("key"), "value": old.get("value"), "confidence": confidence}}

    def _embed(self, text: str) -> list[float] | None:
        if self.embedder is None:
            return None
        try:
            return self.embedder.embed([text])[0]
        except Exception as exc:
            log("graph-write", "warn", reason="embed-failed", labels="Preference",
                error=f"{type(exc).__name__}: {exc}"[:160])
            return None

    def _reconcile(self, guards: Guards, existing: list[Node], category: str, key: str,
                   vector: list[float] | None) -> tuple[Node | None, str, float | None, list[dict[str, Any]]]:
        """The preference this one restates: the same category and key, else (with a vector) the
        nearest admin Preference above :data:`SAME_SUBJECT_COSINE`; with the mode, the similarity
        and the neighbours looked at."""
        for node in existing:
            if node.properties.get("category") == category and node.properties.get("key") == key:
                return node, "exact", None, []
        if vector is None:
            return None, "new", None, []
        hits = self.store.vector_search(vector, 5, guards=Principal.owner(guards.account_id).narrowed_to(scopes=("admin",)).guards,
                                        labels=["Preference"])
        hits = [h for h in hits if h.node.properties.get("scope") == "admin"]
        neighbours = [{"id": h.node.id, "key": h.node.properties.get("key"),
                       "value": h.node.properties.get("value"), "similarity": round(h.score, 3)} for h in hits]
        if hits and hits[0].score >= SAME_SUBJECT_COSINE:
            return hits[0].node, "semantic", hits[0].score, neighbours
        return None, "new", None, neighbours

    def _create(self, guards: Guards, profile: Any, category: str, key: str, value: str,
                vector: list[float] | None) -> str:
        """A new Preference on the profile; its id."""
        import uuid  # with its platform import, off the boot path: the first Preference pays

        node_id = uuid.uuid4().hex
        props = {"category": category, "key": key, "value": value, "confidence": BASE_CONFIDENCE,
                 "scope": "admin", "reinforcements": 0}
        row: dict[str, Any] = {"id": node_id, "labels": ["Preference"], "properties": props}
        if vector is not None:
            row["embedding"] = vector
        guarded_upsert_many(self.store, [row, {"id": profile.id, "labels": list(profile.labels), "properties": {},
                                               "edges": [{"type": "HAS_PREFERENCE", "to": node_id}]}],
                            guards=guards)
        return node_id

    def read(self, *, userId: str | None = None) -> dict[str, Any]:  # noqa: N803
        started = time.perf_counter()
        guards = self._guards()
        rules = active_rules(self.store, guards)
        out: dict[str, Any] = {"activeRules": rules["rules"], "source": rules["source"]}
        if userId:
            profile = self._profile(guards, userId)
            out["preferences"] = [{"id": p.id, **{k: p.properties.get(k) for k in ("category", "key", "value",
                                                                                  "confidence")}}
                                  for p in profile_preferences(self.store, guards, profile.id)]
        log("preference-read", "op=read", source=rules["source"], rules=len(rules["rules"]),
            ms=round((time.perf_counter() - started) * 1000))
        return out


PREFERENCES: StateKey[Preferences] = StateKey("memory.preferences")


def service(host: Host) -> Preferences:
    return host.state.setdefault(PREFERENCES, lambda: Preferences(host.store(), host.embedder(), host.env))


def preference_tools(host: Host) -> list[Tool]:
    def profile_update(**args: Any) -> Any:
        return run_with_outcome(Call("profile-update", host.env), lambda c: service(host).update(c, **args))

    def profile_read(**args: Any) -> Any:
        try:
            return service(host).read(**args)
        except WriteRejected as exc:
            from plughost import UserError

            raise UserError(f"profile-read: {exc.detail}") from None

    return [Tool("profile-update", profile_update),
            Tool("profile-read", profile_read)]
