"""The plugins' entry points read without importlib.metadata (plughost.runtime.entry_points): the same
entry points importlib.metadata gives while plughost alone declares the group, and importlib.metadata's
own answer as soon as another distribution does or anything is out of the ordinary."""

from __future__ import annotations

import importlib.metadata
import zipfile
from pathlib import Path

import pytest

from plughost.runtime import entry_points
from plughost.runtime.discovery import ENTRY_POINT_GROUP


def _fields(eps) -> list[tuple]:
    return sorted((e.name, e.value, e.group, e.module, e.attr, e.dist.name, e.dist.version) for e in eps)


def _dist(site: Path, folder: str, name: str, entries: str) -> None:
    info = site / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\nBody: not a header\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(entries, encoding="utf-8")


def test_plughost_alone_gives_importlib_metadatas_entry_points() -> None:
    ours = entry_points.entry_points(ENTRY_POINT_GROUP)
    theirs = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    assert ours and all(isinstance(e, entry_points.OwnEntryPoint) for e in ours)
    assert _fields(ours) == _fields(theirs)
    assert {e.name: e.load() for e in ours} == {e.name: e.load() for e in theirs}


def test_other_groups_and_a_distribution_without_the_group_change_nothing(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(tmp_path, "acme_other-1.0.dist-info", "acme-other", "[console_scripts]\nacme = acme.cli:main\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _fields(entry_points.entry_points(ENTRY_POINT_GROUP)) == _fields(
        importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    assert all(isinstance(e, entry_points.OwnEntryPoint) for e in entry_points.entry_points(ENTRY_POINT_GROUP))


def test_the_first_plughost_on_sys_path_is_the_one_read_as_importlib_metadata_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(tmp_path, "plughost-9.9.dist-info", "plughost", f"[{ENTRY_POINT_GROUP}]\nother = other_hooks:plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ours = entry_points.entry_points(ENTRY_POINT_GROUP)
    assert _fields(ours) == _fields(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    assert [(e.name, e.module, e.attr, e.dist.version) for e in ours] == [("other", "other_hooks", "plugin", "1.0")]


@pytest.mark.parametrize("case", ["foreign", "zip", "upper-suffix", "odd-line"])
def test_anything_else_is_importlib_metadatas_answer(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    if case == "foreign":
        _dist(site, "acme_tools-1.0.dist-info", "acme-tools", f"[{ENTRY_POINT_GROUP}]\nacme = acme_hooks\n")
    elif case == "zip":
        with zipfile.ZipFile(tmp_path / "eggs.zip", "w") as z:
            z.writestr("acme_zip-1.0.dist-info/METADATA", "Name: acme-zip\nVersion: 1.0\n")
        site = tmp_path / "eggs.zip"
    elif case == "upper-suffix":
        _dist(site, "Acme_Tools-1.0.DIST-INFO", "acme-tools", f"[{ENTRY_POINT_GROUP}]\nacme = acme_hooks\n")
    else:  # a line importlib.metadata cannot read in the plughost it reads: its error, not a guess
        _dist(site, "plughost-9.9.dist-info", "plughost", f"[{ENTRY_POINT_GROUP}]\nno equals sign\n")
    monkeypatch.syspath_prepend(str(site))
    assert entry_points._own_only(ENTRY_POINT_GROUP) is None
    if case != "odd-line":
        ours = entry_points.entry_points(ENTRY_POINT_GROUP)
        assert not any(isinstance(e, entry_points.OwnEntryPoint) for e in ours)
        assert _fields(ours) == _fields(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
