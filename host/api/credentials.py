"""For a plugin that signs operators in (the admin plugin): the session tokens the HTTP front door
checks, their secret and revocation, and an account's HTTP token (docs/http.md#credentials)."""

from plughost.util.config import home as home_of
from plughost.util.credentials import (
    CLOCK_SKEW_MS,
    SECRET_FILE,
    TTL_MS,
    Session,
    b64url,
    check_session,
    conversation_secret,
    http_token,
    load_secret,
    mint,
    revoke,
    revoke_all,
    secret_path,
    unb64url,
    validate,
)
from plughost.util.credentials import _private_dir as private_dir

__all__ = ["CLOCK_SKEW_MS", "SECRET_FILE", "TTL_MS", "Session", "b64url", "unb64url", "check_session", "conversation_secret",
           "http_token", "load_secret", "mint", "revoke", "revoke_all", "secret_path", "validate", "private_dir", "home_of"]
