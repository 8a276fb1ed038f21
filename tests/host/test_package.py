"""What the installed package promises plugin authors beyond its names: type information (a
``py.typed`` marker, so their type checker reads the typed API), ``python -m plughost``, and one
line for a data root the commands cannot use."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import plughost
from plughost.util.settings import Setting


def test_the_package_carries_its_type_information() -> None:
    assert resources.files("plughost").joinpath("py.typed").is_file()


def test_python_dash_m_plughost_is_the_command(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "plughost", "--version"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and plughost.__version__ in done.stdout


def test_a_data_root_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "not-a-folder"
    home.write_text("x")
    for args in (["account", "create", "acme"], ["demo"]):
        done = subprocess.run([sys.executable, "-m", "plughost", *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, env={"PATH": "/usr/bin:/bin", "PLUGHOST_HOME": str(home),
                                                "PLUGHOST_EMBEDDER": "none", "ACCOUNT_ID": "acme"})
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("plughost: ") and "must be a folder this user can write" in last, last


def test_a_setting_of_an_unknown_type_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match="type: expected one of the strings 'str', 'int'"):
        Setting("ACME_LIMIT", int, 3, "the limit")  # type: ignore[arg-type]
