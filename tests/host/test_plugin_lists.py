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
