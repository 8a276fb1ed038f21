"""The owner's agent sessions over HTTP (docs/console.md#sessions): list, start with a first
message, stop, resume, purge.

``POST /api/admin/sessions`` body ``{initialMessage, permissionMode?, model?}`` (``text`` is
accepted for ``initialMessage``) → 202 with the new session: a new admin conversation whose first
turn is that message, its agent started in that permission mode (:data:`PERMISSION_MODES`) and model
(``PLUGHOST_SESSION_MODELS``); either left out is the user's last choice, else the runner's own.
An unknown mode or model is 400 ``{error, detail}`` naming the field and what it may be, and
nothing is started. ``GET /api/admin/sessions`` → ``{sessions: [...]}`` newest first;
``POST /api/admin/sessions/{n}/stop|resume|purge`` → the session after the change (404 for a
number the user has no session under; 409 for a purge of an open session).

Only an admin session token of the serving account opens these (the user is the token's): no
credential, the account's HTTP token, another account's session or a narrowed server (an agent's
or a visitor's process) is refused with 401/403. The sessions themselves are the channels
plugin's, reached through the ``plughost_owner_sessions`` hook. Lines: ``[owner-sessions]
op=refused reason=..`` here, ``op=start|stop|..`` from the provider.
"""

from __future__ import annotations

from typing import Any

from plughost import UserError, log
from plughost.api import hooks
from plughost.api.hooks import PERMISSION_MODES
from plughost.api.http import cookie_post_refusal, json_error, read_json_object
from plughost.plugins.admin import sessions
from plughost.plugins.admin.session_routes import token_of
from plughost.plugins.admin.settings import SESSION_MODELS

MAX_BODY = 64 * 1024
MAX_TEXT = 16000
ACTIONS = ("stop", "resume", "purge")


def check_levers(env: Any, permission_mode: object, model: object) -> tuple[str | None, str | None]:
    """The request's permission mode and model, each None when left out; a UserError naming the field."""
    if permission_mode in (None, ""):
        mode = None
    elif not isinstance(permission_mode, str) or permission_mode not in PERMISSION_MODES:
        extra = " (bypassPermissions skips every check and is not offered)" if permission_mode == "bypassPermissions" else ""
        raise UserError(f"permissionMode: expected one of {', '.join(PERMISSION_MODES)}{extra}")
    else:
        mode = permission_mode
    allowed = [m.strip() for m in SESSION_MODELS.read(env).split(",") if m.strip()]
    if model in (None, ""):
        chosen = None
    elif not isinstance(model, str) or model not in allowed:
        raise UserError(f"model: expected one of {', '.join(allowed) or '(none: PLUGHOST_SESSION_MODELS is empty)'}")
    else:
        chosen = model
    return mode, chosen


def caller(host: Any, request: Any) -> Any:
    """``(principal, user)`` of an admin session of the serving account, or the 401/403 refusing it."""
    from plughost.api.http import request_principal

    principal = request_principal(request) or host.principal
    if principal is None or not principal.is_admin or not principal.account:
        log("owner-sessions", "op=refused", reason="narrowed")
        return json_error(403, "account-isolation", "sessions: this server is narrowed (ALLOWED_SCOPES / AGENT_SLUG); "
                                                    "an owner's sessions are wider than it")
    session, _reason = sessions.check_session(host.home, token_of(request))
    if session is None or session.account_id != principal.account:
        log("owner-sessions", "op=refused", reason="no-admin-session")
        return json_error(401, "unauthorized", "sessions: expected an admin session token of this account")
    crossed = cookie_post_refusal(request, json_body=not request.path_params.get("action"))  # start has a JSON body
    if crossed is not None:
        log("owner-sessions", "op=refused", reason="cross-origin")
        return crossed
    return principal, session.user_id


def provider(host: Any) -> Any:
    found = host.first(hooks.OWNER_SESSIONS)
    if found is None:
        return json_error(503, "not-configured", "sessions: no plugin keeps agent sessions (the channels plugin is off)")
    return found


def make_endpoints(host: Any) -> tuple[Any, Any, Any]:
    """The list, start and change endpoints."""
    import anyio
    from starlette.responses import JSONResponse

    async def list_sessions(request: Any) -> Any:
        who = caller(host, request)
        if not isinstance(who, tuple):
            return who
        found = provider(host)
        if not hasattr(found, "list"):
            return found
        rows = await anyio.to_thread.run_sync(found.list, *who)
        return JSONResponse({"sessions": rows})

    async def start(request: Any) -> Any:
        who = caller(host, request)
        if not isinstance(who, tuple):
            return who
        body, refused = await read_json_object(request, MAX_BODY, "{initialMessage, permissionMode?, model?}")
        if body is None:
            return refused
        unknown = sorted(set(body) - {"initialMessage", "text", "permissionMode", "model"})
        if unknown:
            return json_error(400, "invalid-body", f"body.{unknown[0]}: unknown field; expected initialMessage, "
                                                   "permissionMode, model")
        text = body.get("initialMessage", body.get("text"))
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
            return json_error(400, "invalid-initialMessage",
                              f"initialMessage: expected a non-empty string of at most {MAX_TEXT} characters")
        try:
            mode, model = check_levers(host.env, body.get("permissionMode"), body.get("model"))
        except UserError as exc:
            field = str(exc).split(":", 1)[0]
            log("owner-sessions", "op=refused", reason=f"invalid-{field}")
            return json_error(400, f"invalid-{field}", str(exc))
        found = provider(host)
        if not hasattr(found, "start"):
            return found
        try:
            view = await found.start(*who, text, permission_mode=mode, model=model)
        except UserError as exc:
            return json_error(503, "not-configured", str(exc))
        return JSONResponse(view, status_code=202)

    async def change(request: Any) -> Any:
        who = caller(host, request)
        if not isinstance(who, tuple):
            return who
        action = request.path_params.get("action", "")
        raw_number = request.path_params.get("conversation", "")
        if action not in ACTIONS:
            return json_error(404, "not-found", f"action: expected one of {', '.join(ACTIONS)}")
        if not raw_number.isdigit() or not 0 < int(raw_number) < 1_000_000:
            return json_error(400, "invalid-conversation", "conversation: expected the session's number (1, 2, ...)")
        found = provider(host)
        if not hasattr(found, action):
            return found
        try:
            view = await anyio.to_thread.run_sync(getattr(found, action), *who, int(raw_number))
        except UserError as exc:
            return json_error(409, "conflict", str(exc))
        if view is None:
            return json_error(404, "not-found", "conversation: no such session of this user")
        return JSONResponse(view)

    return list_sessions, start, change
