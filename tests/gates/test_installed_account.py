"""After a plain `plughost install`, the installed home boots and checks with nothing exported: a
user's shell (`env -i PATH=/usr/bin:/bin`, its own HOME, another working directory) runs `plughost
boot --check` and gets the install's account, as the generated servers do from settings.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLUGHOST = Path(sys.executable).parent / "plughost"


def user(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`plughost ARGS` as a user's minimal shell runs it: no PLUGHOST_*, no ACCOUNT_ID."""
    return subprocess.run([str(PLUGHOST), *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(home)})


def test_boot_check_after_a_plain_install_needs_no_exported_account(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    payload, cc = tmp_path / "payload", tmp_path / "claude-config"
    for step in (("bundle", "default", "--premium-dir", str(REPO / "examples" / "premium"), "--out", str(payload)),
                 ("account", "create", "acme", "--admin-phone", "+15550001"),
                 ("install", str(payload), "--config-dir", str(cc), "--account", "acme")):
        proc = user(home, elsewhere, *step)
        assert proc.returncode == 0, (step, proc.stderr[-2000:])
    dotenv = (home / ".plughost" / ".env").read_text(encoding="utf-8")
    assert "ACCOUNT_ID=acme" in dotenv.splitlines(), dotenv
    proc = user(home, elsewhere, "boot", "--check", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["exit"] == 0
    gates = {g["gate"]: g for g in report["gates"]}
    assert all(g["status"] != "fail" for g in report["gates"]), [g for g in report["gates"] if g["status"] == "fail"]
    assert "account-id-env" in gates and gates["account-id-env"]["status"] == "ok", gates.get("account-id-env")
    assert "ACCOUNT_ID" not in proc.stderr or "account=acme" in proc.stderr or "acme" in proc.stderr
    # An exported ACCOUNT_ID still wins over the recorded one (the environment over the file).
    other = subprocess.run([str(PLUGHOST), "boot", "--check", "--json"], cwd=elsewhere, capture_output=True,
                           text=True, timeout=300,
                           env={"PATH": "/usr/bin:/bin", "HOME": str(home), "ACCOUNT_ID": "nobody"})
    assert other.returncode != 0 or "nobody" in other.stdout + other.stderr
