"""The ``admin-identity-binding`` boot gate: every admin phone resolves to an admin userId.

The channels plugin owns it because the resolution it replays (phone → users.json → admin
ids) is the one its inbound pipeline applies; the host only supplies the account files.
"""

from __future__ import annotations

from collections.abc import Sequence

from plughost import Gate, GateContext, GateResult, UserError
from plughost.api.accounts import admin_ids, load_account, load_users, normalize_phone, selected_accounts
from plughost.api.util import format_line
from plughost.plugins.channels.wire import JSONMapping, JSONObject


def binding_drift(account: JSONMapping, users: Sequence[JSONMapping]) -> list[dict[str, str]]:
    """Replay the admin resolution chain for each `adminPhones` entry; return the ones that would fall
    to the owner userId: no users.json entry with that phone, or one whose userId is not an admin."""
    by_phone: dict[str, str] = {}
    for user in users:
        phone = normalize_phone(str(user.get("phone") or ""))
        if phone and phone not in by_phone:
            by_phone[phone] = str(user.get("userId"))
    admins = admin_ids(account)
    out = []
    for phone in account.get("adminPhones") or []:
        user_id = by_phone.get(normalize_phone(phone))
        if user_id is None:
            out.append({"phone": phone, "reason": "no-users-binding"})
        elif user_id not in admins:
            out.append({"phone": phone, "reason": "userid-not-admin", "userId": user_id})
    return out


def check_admin_identity_binding(ctx: GateContext) -> GateResult:
    """`admin-identity-binding`: informational; silent (bar the ok line) when every binding resolves."""
    result = GateResult(status="ok")
    home = ctx.host.home
    for account_id in selected_accounts(ctx):
        try:
            account = load_account(account_id, home)
            users = load_users(account_id, home)
        except UserError as exc:
            result.lines.append(format_line("admin-identity", "op=skip", accountId=account_id, reason=str(exc)))
            result.defects.append({"accountId": account_id, "reason": "unreadable", "detail": str(exc)})
            continue
        result.inspected += len(account.get("adminPhones") or [])
        for drift in binding_drift(account, users):
            fields: JSONObject = {"accountId": account_id, "phone": drift["phone"], "reason": drift["reason"]}
            if "userId" in drift:
                fields["userId"] = drift["userId"]
            result.lines.append(format_line("admin-identity", "binding-drift", **fields))
            result.defects.append(fields)
    if result.defects:
        result.status = "fail"
    else:
        result.lines.append(format_line(None, "startup-self-test", **{"admin-identity-binding": "ok"},
                                        inspected=result.inspected))
    return result


def admin_identity_binding_gate() -> Gate:
    """The `admin-identity-binding` gate, informational."""
    return Gate("admin-identity-binding", check=check_admin_identity_binding, fatal=False, order=80)
