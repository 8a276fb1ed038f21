"""`plughost manifests check`: malformed PLUGIN.md files give exit 2 and one line naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli, run_cli_process

CASES = {
    "bad-yaml": ("name: [unclosed\n", "frontmatter: invalid YAML"),
    "missing-name": ("version: 1.0.0\n", "name: required field is missing"),
    "unknown-key": ("name: ok\ncolour: red\n", "colour: unknown key"),
    "wrong-type": ("name: ok\ntools: {name: x}\n", "tools: expected array"),
    "name-with-spaces": ("name: my plugin\n", "name: expected a value matching"),
    "tool-wrong-type": ("name: ok\ntools:\n  - name: t\n    adminAllowlist: maybe\n", "tools[0].adminAllowlist: expected boolean"),
    "no-frontmatter": (None, "frontmatter: expected a YAML block"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_plugin_md(tmp_path: Path, case: str) -> None:
    frontmatter, expected = CASES[case]
    folder = tmp_path / case
    folder.mkdir()
    text = "# just markdown\n" if frontmatter is None else f"---\n{frontmatter}---\n# doc\n"
    (folder / "PLUGIN.md").write_text(text, encoding="utf-8")
    result = run_cli("manifests", "check", str(folder))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(str(folder / "PLUGIN.md") + ": ") and expected in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def test_tree_reports_every_defect_and_valid_tree_passes(tmp_path: Path) -> None:
    for name, fm in (("a", "name: a\nx: 1\n"), ("b", "name: b\ny: 2\n"), ("c", "name: c\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "PLUGIN.md").write_text(f"---\n{fm}---\n", encoding="utf-8")
    result = run_cli("manifests", "check", str(tmp_path))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 2
    ok = run_cli("manifests", "check", str(Path(__file__).resolve().parents[2] / "plugins"))
    assert ok.returncode == 0, ok.stderr


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli("manifests", "check", str(tmp_path / "nope"))
    assert result.returncode == 2 and result.stderr.startswith("plughost: PATH:")


def test_version_and_usage() -> None:
    """Smoke test of the real command: two interpreter starts, the console path's exit codes."""
    assert run_cli_process("--version").stdout.strip().startswith("plughost ")
    assert run_cli_process("no-such-command").returncode == 2


def test_an_import_past_the_public_api_is_a_warning_naming_file_and_line(tmp_path: Path) -> None:
    """Another plugin or a host internal imported by a folder plugin: one `[manifests] warn` line each,
    exit 0; `plughost`, `plughost.api.*` and imports a type checker alone sees are fine."""
    folder = tmp_path / "peek"
    (folder / "sub").mkdir(parents=True)
    (folder / "PLUGIN.md").write_text("---\nname: peek\ndescription: \"Peeks.\"\npython: peek_hooks\n---\n")
    (folder / "peek_hooks.py").write_text(
        "from typing import TYPE_CHECKING\n\nimport plughost\nfrom plughost import hookimpl\n"
        "from plughost.api import accounts\n"
        "import plughost.plugins.graph.hookimpls\n"
        "if TYPE_CHECKING:\n    from plughost.runtime.host import Host\n", encoding="utf-8")
    (folder / "sub" / "deep.py").write_text("X = 1\nfrom plughost.plugins import memory\n"
                                            "from plughost.util.log import log\n", encoding="utf-8")
    result = run_cli("manifests", "check", str(folder))
    assert result.returncode == 0, result.stderr
    warns = [line for line in result.stderr.splitlines() if line.startswith("[manifests] warn ")]
    shown = [(w.split(" file=")[1].split(" ")[0], w.split(" line=")[1].split(" ")[0]) for w in warns]
    assert shown == [(str(folder / "peek_hooks.py"), "6"), (str(folder / "sub" / "deep.py"), "2"),
                     (str(folder / "sub" / "deep.py"), "3")], result.stderr
    assert "plugin 'graph'" in warns[0] and "plugin 'memory'" in warns[1] and "host internal" in warns[2]
    assert "Traceback" not in result.stderr
