"""``PLUGHOST_LOAD_PLUGINS`` / ``PLUGHOST_DISABLE_PLUGINS`` naming a plugin nobody provides is a
usage error (exit 2, one line with a did-you-mean), never a host that silently loads nothing."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli


@pytest.mark.parametrize("var", ["PLUGHOST_LOAD_PLUGINS", "PLUGHOST_DISABLE_PLUGINS"])
def test_an_unknown_name_in_a_plugin_list_is_exit_2(var: str) -> None:
    for args in (("plugins", "list"), ("boot", "--check")):
        result = run_cli(*args, env={var: "graph,memry", "PLUGHOST_EMBEDDER": "none"})
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1, result.stderr
        assert var in lines[0] and "'memry'" in lines[0] and "did you mean 'memory'" in lines[0], lines[0]


def test_known_names_and_none_still_work() -> None:
    result = run_cli("plugins", "list", env={"PLUGHOST_LOAD_PLUGINS": "graph", "PLUGHOST_EMBEDDER": "none"})
    assert result.returncode == 0 and "graph" in result.stdout, result.stderr
    nothing = run_cli("plugins", "list", env={"PLUGHOST_LOAD_PLUGINS": "none", "PLUGHOST_EMBEDDER": "none"})
    assert nothing.returncode == 0 and "not in PLUGHOST_LOAD_PLUGINS" in nothing.stdout, nothing.stderr


def test_a_brand_that_cannot_be_read_is_named_by_plugins_list(tmp_path) -> None:
    """After the installed payload moved, the recorded brand is gone: what it excluded loads (as
    before), and ``plugins list`` says so in one warn line naming the install to rerun."""
    import json

    brand = tmp_path / "payload" / "brand.json"
    brand.parent.mkdir()
    brand.write_text(json.dumps({"name": "studio-x", "productName": "X", "plugins": {"excluded": ["channels"]}}))
    env = {"PLUGHOST_BRAND_FILE": str(brand), "PLUGHOST_EMBEDDER": "none", "ACCOUNT_ID": "acme",
           "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}
    read = run_cli("plugins", "list", env=env)
    row = next(line for line in read.stdout.splitlines() if line.startswith("channels "))
    assert read.returncode == 0 and "excluded by brand 'studio-x'" in row and "warn" not in read.stderr, read.stderr
    brand.parent.rename(tmp_path / "moved")
    for args in (("plugins", "list"), ("plugins", "list", "--json")):
        moved = run_cli(*args, env=env)
        assert moved.returncode == 0 and "Traceback" not in moved.stderr, moved.stderr
        [warning] = [line for line in moved.stderr.splitlines() if line.startswith("[plugins] warn")]
        assert warning.startswith(f"[plugins] warn op=brand-unread excluded=none reason=brand-file-missing "
                                  f"source=install path={brand} fix="), warning
        assert f"rerun plughost install PAYLOAD --config-dir {tmp_path / 'cc'} --account acme" in warning, warning
    assert "excluded by brand" not in moved.stdout and '"name": "channels"' in moved.stdout
