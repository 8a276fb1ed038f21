"""Where boot finds its brand (strip-list, marketplace names) and the install's `.env`."""

from __future__ import annotations

import json

import pytest
from gates_support import write

from plughost.runtime.specialists import find_brand
from plughost.util.config import home_env
from plughost.util.errors import UserError


def test_brand_by_file_stem_by_name_by_path_and_from_the_payload(tmp_path):
    brands = tmp_path / "manifests" / "brands"
    write(brands / "default.json", json.dumps({"name": "plughost", "plugins": {"excluded": []}}))
    write(brands / "studio.json", json.dumps({"name": "studio-co", "plugins": {"excluded": ["channels"]}}))
    env = {"PLUGHOST_MANIFESTS_DIR": str(tmp_path / "manifests")}
    assert find_brand("default", env) == ("plughost", [])
    assert find_brand("studio-co", env) == ("studio-co", ["channels"])  # a brand `name`, not a file name
    assert find_brand(str(brands / "studio.json"), env) == ("studio-co", ["channels"])
    payload = tmp_path / "payload"
    write(payload / "brand.json", json.dumps({"name": "acme", "plugins": {"excluded": ["admin"]}}))
    assert find_brand(None, env, payload) == ("acme", ["admin"])
    assert find_brand("acme", env, payload) == ("acme", ["admin"])
    assert find_brand(None, env, tmp_path / "nowhere") == (None, [])
    with pytest.raises(UserError, match="--brand: brand 'nope' not found"):
        find_brand("nope", env, payload)


def test_brand_with_a_bad_excluded_list_is_one_line(tmp_path):
    path = write(tmp_path / "b.json", json.dumps({"name": "b", "plugins": {"excluded": "channels"}}))
    with pytest.raises(UserError, match=r"b\.json: plugins\.excluded: expected a list of plugin names"):
        find_brand(str(path))


def test_home_env_reads_the_install_dotenv(tmp_path):
    write(tmp_path / ".env", "# written by plughost install\nPLUGHOST_BRAND=studio\nexport A='x y'\nB=\"q\"\nnoise\n")
    assert home_env({"PLUGHOST_HOME": str(tmp_path)}) == {"PLUGHOST_BRAND": "studio", "A": "x y", "B": "q"}
    assert home_env({"PLUGHOST_HOME": str(tmp_path / "none")}) == {}


def test_load_env_puts_the_environment_over_the_dotenv_and_normalises_payload_paths(tmp_path):
    from plughost.util.config import load_env

    write(tmp_path / ".env", "PLUGHOST_BRAND=studio\nPLUGHOST_PLUGINS_DIR=/from/dotenv\nEMBED_MODEL=m\n")
    env = {"PLUGHOST_HOME": str(tmp_path), "PLUGHOST_BRAND": "mine",
           "PLUGHOST_PREMIUM_DIR": "/x/payload/premium-plugins/greeter/.."}
    loaded = load_env(env)
    assert loaded["PLUGHOST_BRAND"] == "mine" and loaded["EMBED_MODEL"] == "m"
    assert loaded["PLUGHOST_PLUGINS_DIR"] == "/from/dotenv"
    assert loaded["PLUGHOST_PREMIUM_DIR"] == "/x/payload/premium-plugins"
