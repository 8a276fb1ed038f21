"""``PLUGHOST_STORE`` / ``PLUGHOST_EMBEDDER``: a provider plugin's name picks it, a built-in option
(``sqlite``, ``none`` ...) picks the built-in even when a third-party provider is installed, and
anything else is a one-line usage error naming what is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from plughost.runtime import hooktable
from tests.conftest import run_cli

PROVIDER = """from plughost.runtime.hookspecs import hookimpl


@hookimpl
def plughost_store(host):
    return None


@hookimpl
def plughost_embedder(host):
    return None
"""


@pytest.fixture
def third_party(tmp_path: Path) -> Path:
    (tmp_path / "p" / "tinystore").mkdir(parents=True)
    (tmp_path / "p" / "tinystore" / "PLUGIN.md").write_text("---\nname: tinystore\npython: tiny_hooks\n---\n")
    (tmp_path / "p" / "tinystore" / "tiny_hooks.py").write_text(PROVIDER)
    return tmp_path / "p"


def test_a_builtin_option_means_the_builtin_even_beside_a_third_party(make_host, third_party: Path) -> None:
    assert make_host(plugins_dir=third_party).provider_order(hooktable.STORE) == ["tinystore", "graph"]
    assert make_host(plugins_dir=third_party, PLUGHOST_STORE="sqlite").provider_order(hooktable.STORE) == ["graph"]
    assert make_host(plugins_dir=third_party, PLUGHOST_STORE="tinystore").provider_order(
        hooktable.STORE) == ["tinystore"]
    assert make_host(plugins_dir=third_party, PLUGHOST_EMBEDDER="none").provider_order(
        hooktable.EMBEDDER) == ["memory"]


@pytest.mark.parametrize(("var", "value", "accepted", "hint"), [
    ("PLUGHOST_STORE", "nope", "sqlite, neo4j", ""),
    ("PLUGHOST_EMBEDDER", "nonee", "local, ollama, none", "did you mean 'none'"),
])
def test_an_unknown_choice_is_one_line_exit_2(third_party: Path, var: str, value: str, accepted: str,
                                              hint: str) -> None:
    result = run_cli("--plugins-dir", str(third_party), "plugins", "list", env={var: value})
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith(f"plughost: {var}: ") and f"'{value}'" in lines[0], lines[0]
    assert accepted in lines[0] and "tinystore" in lines[0] and hint in lines[0], lines[0]
