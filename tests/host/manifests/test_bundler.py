"""`plughost bundle BRAND --out DIR`: exclusions, the premium-bundle gate, idempotent rebuilds and
bad brand files that leave the output folder untouched (docs/payload.md#brands)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plughost.runtime.manifest import validate
from tests.conftest import REPO as REPO_ROOT
from tests.host.manifests.conftest import BUILTIN, bundle, snapshot

BRANDS = REPO_ROOT / "host" / "manifests" / "brands"


def _builtin_names() -> set[str]:
    return {p.name for p in BUILTIN.iterdir() if (p / "PLUGIN.md").is_file()}


def _listed(payload: Path, rel: str) -> list[str]:
    doc = json.loads((payload / rel / ".claude-plugin" / "marketplace.json").read_text())
    return [p["name"] for p in doc["plugins"]]


@pytest.mark.parametrize("path", sorted(BRANDS.glob("*.json")), ids=lambda p: p.stem)
def test_shipped_brands_are_valid(path: Path) -> None:
    validate(json.loads(path.read_text()), "brand", str(path))


def test_default_brand_ships_every_builtin_and_no_premium(tmp_path: Path) -> None:
    out = tmp_path / "payload"
    result = bundle("default", out)
    assert result.returncode == 0, result.stderr
    assert "[bundler] premium-bundle-gate brand=plughost mode=none shipped=[] skipped=[greeter,studio]" in result.stderr
    assert set(_listed(out, "plugins")) == _builtin_names()
    assert not (out / "premium-plugins").exists()
    assert json.loads((out / "brand.json").read_text())["name"] == "plughost"
    assert not list(out.rglob("__pycache__"))


def test_brand_excludes_a_plugin_and_allowlists_premium(tmp_path: Path) -> None:
    out = tmp_path / "payload"
    result = bundle("studio", out)
    assert result.returncode == 0, result.stderr
    assert "[bundler] premium-bundle-gate brand=studio mode=allowlist shipped=[greeter,studio] skipped=[]" in result.stderr
    assert set(_listed(out, "plugins")) == _builtin_names() - {"channels"}
    assert not (out / "plugins" / "channels").exists()
    assert _listed(out, "premium-plugins") == ["greeter"]
    assert _listed(out, "premium-plugins/studio/plugins") == ["notes", "planner"]
    assert (out / "premium-plugins" / "studio" / "agents" / "studio-lead.md").is_file()
    # the bundle ran generation over the payload: generating again writes nothing
    before = snapshot(out)
    from tests.conftest import run_cli

    assert "0 file(s) written" in run_cli("manifests", "generate", str(out)).stdout
    assert snapshot(out) == before


def test_rebundle_is_idempotent_and_a_change_is_swapped_in_whole(tmp_path: Path) -> None:
    out = tmp_path / "payload"
    assert bundle("studio", out).returncode == 0
    before = snapshot(out)
    again = bundle("studio", out)
    assert again.returncode == 0 and again.stdout.startswith("unchanged:")
    assert snapshot(out) == before
    # a stale file in the payload is removed by the next build (built beside, renamed in)
    (out / "plugins" / "stray.txt").write_text("x")
    rebuilt = bundle("studio", out)
    assert rebuilt.stdout.startswith("built:")
    assert not (out / "plugins" / "stray.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".payload")]


def test_premium_gate_with_a_brand_path_and_skipped_bundles(tmp_path: Path) -> None:
    brand = tmp_path / "solo.json"
    brand.write_text(json.dumps({"name": "solo", "productName": "Solo", "shipsPremiumBundles": ["greeter"]}))
    out = tmp_path / "payload"
    result = bundle(str(brand), out)
    assert result.returncode == 0, result.stderr
    assert "mode=allowlist shipped=[greeter] skipped=[studio]" in result.stderr
    assert sorted(p.name for p in (out / "premium-plugins").iterdir()) == [".claude-plugin", "greeter"]


BAD_BRANDS = {
    "boolean-premium": ({"name": "b", "productName": "B", "shipsPremiumBundles": True}, 1,
                        "FATAL: brand.shipsPremiumBundles must be a string[] (boolean 'true' no longer accepted; "
                        "enumerate bundles in {file})"),
    "unknown-bundle": ({"name": "b", "productName": "B", "shipsPremiumBundles": ["greeter", "nope"]}, 1,
                       "shipsPremiumBundles: bundle 'nope' is not in the premium bundles folder"),
    "excluded-missing": ({"name": "b", "productName": "B", "plugins": {"excluded": ["telegram"]}}, 2,
                         "{file}: plugins.excluded[0]: no platform plugin named 'telegram'"),
    "unknown-key": ({"name": "b", "productName": "B", "shipsBundles": ["greeter"]}, 2,
                    "{file}: shipsBundles: unknown key"),
    "wrong-type": ({"name": "b", "productName": "B", "embed": {"model": "m", "dimensions": "384"}}, 2,
                   "{file}: embed.dimensions: expected integer"),
    "invalid-json": ('{"name": "b", ', 2, "{file}: invalid JSON ("),
}


@pytest.mark.parametrize("case", sorted(BAD_BRANDS))
def test_bad_brand_fails_in_one_line_and_leaves_the_output_untouched(case: str, tmp_path: Path) -> None:
    data, code, expected = BAD_BRANDS[case]
    out = tmp_path / "payload"
    assert bundle("default", out).returncode == 0
    before = snapshot(out)
    brand = tmp_path / f"{case}.json"
    brand.write_text(data if isinstance(data, str) else json.dumps(data))
    result = bundle(str(brand), out)
    assert result.returncode == code
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert expected.format(file=brand) in lines[-1]
    assert len([ln for ln in lines if not ln.startswith("[bundler]")]) == 1
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_unknown_brand_name_and_foreign_out_folder(tmp_path: Path) -> None:
    result = bundle("nonesuch", tmp_path / "p")
    assert result.returncode == 2 and "no brand named 'nonesuch'" in result.stderr and "default" in result.stderr
    foreign = tmp_path / "docs"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    result = bundle("default", foreign)
    assert result.returncode == 2 and "is not a plughost payload" in result.stderr
    assert (foreign / "notes.txt").read_text() == "mine"


def test_rebundle_sees_a_changed_source_and_a_touched_one_writes_no_payload_file(tmp_path: Path) -> None:
    import shutil

    from tests.host.manifests.conftest import EXAMPLES

    premium = tmp_path / "premium"
    shutil.copytree(EXAMPLES, premium, ignore=shutil.ignore_patterns("__pycache__", ".claude-plugin"))
    out = tmp_path / "payload"
    assert bundle("studio", out, premium=premium).returncode == 0
    md = premium / "greeter" / "PLUGIN.md"
    md.write_text(md.read_text().replace("version: 1.0.0", "version: 1.0.1"))
    result = bundle("studio", out, premium=premium)
    assert result.stdout.startswith("built:"), result.stdout
    manifest = json.loads((out / "premium-plugins" / "greeter" / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["version"] == "1.0.1"
    # same bytes, new mtime: the quick check misses, the full comparison finds nothing to rebuild
    before = snapshot(out)
    md.touch()
    assert bundle("studio", out, premium=premium).stdout.startswith("unchanged:")
    after = snapshot(out)
    assert {k for k in after if after[k] != before.get(k)} == {".plughost-bundle.json"}
    stamp = snapshot(out)
    assert bundle("studio", out, premium=premium).stdout.startswith("unchanged:")
    assert snapshot(out) == stamp


def test_generation_fatal_during_bundle_leaves_the_previous_payload(tmp_path: Path) -> None:
    import shutil

    from tests.host.manifests.conftest import EXAMPLES, write_plugin

    premium = tmp_path / "premium"
    shutil.copytree(EXAMPLES, premium, ignore=shutil.ignore_patterns("__pycache__", ".claude-plugin"))
    out = tmp_path / "payload"
    assert bundle("studio", out, premium=premium).returncode == 0
    before = snapshot(out)
    write_plugin(premium / "studio" / "plugins" / "broken", "name: broken\nmcp: {command: node, args: [x.js]}")
    result = bundle("studio", out, premium=premium)
    assert result.returncode == 1
    assert "FATAL: plugin 'broken'" in result.stderr and "Traceback" not in result.stderr
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["payload", "premium"]


def test_plugins_dir_adds_to_the_builtins_in_the_payload(tmp_path: Path) -> None:
    import shutil

    from tests.conftest import run_cli

    extra = tmp_path / "my-plugins"
    extra.mkdir()
    shutil.copytree(REPO_ROOT / "examples" / "hello", extra / "hello")
    out = tmp_path / "payload"
    result = run_cli("--plugins-dir", str(extra), "bundle", "default", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert f"platform={len(_builtin_names()) + 1} " in result.stdout, result.stdout
    assert set(_listed(out, "plugins")) == _builtin_names() | {"hello"}
    (extra / "graph").mkdir()
    (extra / "graph" / "PLUGIN.md").write_text("---\nname: graph\n---\n", encoding="utf-8")
    clash = run_cli("--plugins-dir", str(extra), "bundle", "default", "--out", str(tmp_path / "p2"))
    assert clash.returncode == 2 and "graph" in clash.stderr and "Traceback" not in clash.stderr, clash.stderr


HELLO_TOOLS = (REPO_ROOT / "examples" / "hello" / "hello_tools.py").read_text(encoding="utf-8")
BROKEN_HELLO = {  # what breaks the copy of examples/hello → the defect line's field and detail
    "syntax-error": (lambda md, py: (md, py + "\ndef oops(:\n"), "python: import failed: SyntaxError"),
    "missing-module": (lambda md, py: (md.replace("python: hello_tools", "python: no_such_module"), py),
                       "python: import failed: ModuleNotFoundError"),
    "tool-without-handler": (lambda md, py: (md.replace("tools:\n", "tools:\n  - name: ghost\n    description: \"x\"\n"), py),
                             "tools: 'ghost' is declared in PLUGIN.md but no plughost_tools implementation provides it"),
    "schema-contradicts-handler": (lambda md, py: (md.replace(
        '    description: "Greet someone by name."\n',
        '    description: "Greet someone by name."\n    inputSchema:\n      type: object\n'
        '      properties: {name: {type: integer}}\n'), py), "tools: 'greet' has an inputSchema property 'name'"),
    "tools-hook-raises": (lambda md, py: (md, py.replace("    return [Tool", "    raise RuntimeError('kaboom')\n    return [Tool")),
                          "tools: 'greet' cannot be served: plughost_tools failed: RuntimeError: kaboom"),
    "tools-hook-returns-empty": (lambda md, py: (md, py.replace("    return [Tool.from_function(greet)]", "    return []")),
                                 "tools: 'greet' is declared in PLUGIN.md but its plughost_tools returns no Tool"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_HELLO))
def test_bundle_refuses_a_plugin_manifests_check_rejects_and_writes_nothing(case: str, tmp_path: Path) -> None:
    from tests.conftest import run_cli

    breaks, expected = BROKEN_HELLO[case]
    folder = tmp_path / "my-plugins" / "hello"
    folder.mkdir(parents=True)
    md, py = breaks((REPO_ROOT / "examples" / "hello" / "PLUGIN.md").read_text(encoding="utf-8"), HELLO_TOOLS)
    (folder / "PLUGIN.md").write_text(md, encoding="utf-8")
    (folder / "hello_tools.py").write_text(py, encoding="utf-8")
    check = run_cli("manifests", "check", str(folder))
    assert check.returncode == 2 and expected in check.stderr, check.stderr
    out = tmp_path / "payload"
    result = run_cli("--plugins-dir", str(folder.parent), "bundle", "default", "--out", str(out))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = [ln for ln in result.stderr.splitlines() if not ln.startswith("[")]
    assert lines[0].startswith("plughost: bundle: ") and "plugin defect(s); nothing written" in lines[0]
    assert lines[1].startswith(f"  plugin 'hello': {folder / 'PLUGIN.md'}: ") and expected in lines[1], lines
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-plugins"]  # no temp folder left beside --out


def test_a_folder_given_as_the_brand_is_named_a_folder(tmp_path: Path) -> None:
    result = bundle(str(BRANDS), tmp_path / "p")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"plughost: BRAND: '{BRANDS}' is a folder; expected a brand JSON file (or a shipped brand's name)"]
    assert not (tmp_path / "p").exists()
