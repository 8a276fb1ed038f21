"""PIN attempts are bounded for the whole server (docs/http.md#credentials, docs/channels.md#flood-limits): a flood of made-up accounts is
answered 401 or 429 (never 5xx), /healthz keeps answering, and the owner signs in once it passes.
Figures (RSS, /healthz p95) come from bench/pin_flood.py, not from this test."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from serve_helpers import FIXTURES, make_account, raw_request, start_serve

pytestmark = pytest.mark.e2e  # end to end: -m "not e2e" leaves it out locally; CI runs it

PIN = "4821-blue"


def _mint(port: int, account: str, pin: str) -> tuple[int, dict]:
    r = raw_request(port, "/api/admin/session", method="POST", headers={"Content-Type": "application/json"},
                    body=json.dumps({"accountId": account, "pin": pin}).encode(), timeout=60)
    return r.status, r.headers


def test_flood_of_made_up_accounts_is_throttled_and_the_owner_still_gets_in(plughost_home: Path) -> None:
    import time

    from plughost.plugins.admin import sessions

    make_account(plughost_home, "acct-a")
    sessions.set_pin(plughost_home, "acct-a", PIN, "owner")
    # the per-address bucket is off here: one loopback client is this test's whole flood, and the
    # bound under test is the server-wide one (the per-address bucket has tests of its own)
    served = start_serve(env={"ACCOUNT_ID": "acct-a", "PLUGHOST_HOME": str(plughost_home),
                              "PLUGHOST_RATE_PIN_ADDRESS": "0"}, plugins_dir=FIXTURES / "ok")
    try:
        with ThreadPoolExecutor(40) as pool:
            flood = list(pool.map(lambda i: _mint(served.port, f"acct-made-up-{i}", "0000-nope"), range(120)))
            health = raw_request(served.port, "/healthz", timeout=30)
        statuses = [s for s, _ in flood]
        assert set(statuses) <= {401, 429} and statuses.count(429) > 0, statuses
        assert all(h.get("retry-after") for s, h in flood if s == 429)
        assert health.status == 200
        time.sleep(2.5)  # the bucket refills
        status, _ = _mint(served.port, "acct-a", PIN)
        assert status == 200
        for _ in range(5):
            assert _mint(served.port, "acct-a", "9999-nope")[0] == 401
        assert _mint(served.port, "acct-a", PIN)[0] == 429  # the per-account lockout still holds
    finally:
        code, _, err = served.terminate()
    assert code == 0 and "Traceback" not in err
    assert "[admin-session] op=throttled reason=global-pin-limit" in err
