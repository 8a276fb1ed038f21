"""For plugins that read an account's files (``$PLUGHOST_HOME/accounts/<id>/``): the id pattern,
the folder, ``account.json`` and ``users.json`` readers, the admins of an account, the accounts a
gate checks, the command that gives an install without an account its account (docs/configuration.md#accounts)."""

from plughost.runtime.accounts import (
    ACCOUNT_ID,
    account_dir,
    account_id_env_gate,
    admin_ids,
    check_id,
    load_account,
    load_users,
    normalize_phone,
    read_account_json,
    require_existing,
    selected_accounts,
)
from plughost.runtime.install_record import account_fix_command

__all__ = ["ACCOUNT_ID", "account_dir", "account_fix_command", "account_id_env_gate", "admin_ids", "check_id", "load_account",
           "load_users", "normalize_phone", "read_account_json", "require_existing", "selected_accounts"]
