"""``record_store``: the install's graph store rewritten in ``<PLUGHOST_HOME>/.env`` in place (what
``graph migrate`` does once the data is in Neo4j), read back by every process's ``load_env``."""

from __future__ import annotations

import stat
from pathlib import Path

from plughost.runtime.install_record import record_store
from plughost.util.config import load_env


def test_record_store_updates_the_store_lines_and_keeps_the_rest(plughost_home: Path) -> None:
    env_file = plughost_home / ".env"
    env_file.write_text("# install\nACCOUNT_ID=shop\nPLUGHOST_STORE=sqlite\nPLUGHOST_CONFIG_DIR=/x/claude\n")
    env_file.chmod(0o600)
    path = record_store({"PLUGHOST_HOME": str(plughost_home)},
                        {"PLUGHOST_STORE": "neo4j", "NEO4J_URI": "bolt://127.0.0.1:7687", "NEO4J_PASSWORD": "pw"})
    assert path == env_file
    assert env_file.read_text().splitlines() == [
        "# install", "ACCOUNT_ID=shop", "PLUGHOST_STORE=neo4j", "PLUGHOST_CONFIG_DIR=/x/claude",
        "NEO4J_PASSWORD=pw", "NEO4J_URI=bolt://127.0.0.1:7687"]
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600  # it holds the password
    later = load_env({"PLUGHOST_HOME": str(plughost_home)})
    assert later["PLUGHOST_STORE"] == "neo4j" and later["NEO4J_URI"] == "bolt://127.0.0.1:7687"
    from plughost.plugins.graph.backend import backend_name

    assert backend_name(later) == "neo4j"
    record_store({"PLUGHOST_HOME": str(plughost_home)}, {"PLUGHOST_STORE": "sqlite"})  # the way back
    assert backend_name(load_env({"PLUGHOST_HOME": str(plughost_home)})) == "sqlite"


def test_record_store_makes_a_private_file_when_there_is_none(plughost_home: Path) -> None:
    path = record_store({"PLUGHOST_HOME": str(plughost_home)}, {"PLUGHOST_STORE": "neo4j"})
    assert path.read_text() == "PLUGHOST_STORE=neo4j\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
