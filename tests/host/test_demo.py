"""`plughost demo`: the main job's seeding and sample search, through the memory plugin's tools."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli, run_cli_process


def test_demo_seeds_searches_and_is_idempotent(plughost_home: Path) -> None:
    """Smoke test of the real command (scripts/run.sh's demo step), in processes of its own."""
    first = run_cli_process("demo", "--json", "--query", "opening hours")
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["account"] == "demo" and summary["documents"] == 2 and summary["entitiesWritten"] == 3
    assert "Opening hours" in summary["result"]
    assert (plughost_home / "accounts" / "demo" / "account.json").is_file()
    assert "[graph-search:hybrid] accountId=demo" in first.stderr
    again = json.loads(run_cli_process("demo", "--json").stdout)
    assert again["entitiesWritten"] == 0 and "Opening hours" in again["result"]


def test_demo_without_memory_is_one_clear_line() -> None:
    result = run_cli("demo", env={"PLUGHOST_DISABLE_PLUGINS": "memory"})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("plughost: demo: the memory plugin is not loaded")


def test_demo_knowledge_reads_as_the_shop_tells_customers() -> None:
    """What the demo seeds is public: no internal-looking codes or formats a customer would be shown."""
    import re

    from plughost.cli.commands.demo import DOCUMENTS, site_html

    for text in [site_html(), *(d["content"] for d in DOCUMENTS)]:
        assert "format:" not in text.lower()
        assert not re.search(r"\b[A-Z]{2,}-\d{4}-\d+\b", text), "an internal code in the demo's public text"


def test_run_script_brand_greets_as_the_demo_business() -> None:
    """scripts/run.sh bundles the demo's brand, whose productName (the webchat's header) is the seeded business."""
    import re

    from plughost.cli.commands.demo import ENTITIES
    from plughost.payload.bundler import load_brand, resolve_brand

    repo = Path(__file__).resolve().parents[2]
    default = re.search(r'^BRAND="\$\{BRAND:-([a-z-]+)\}"', (repo / "scripts" / "run.sh").read_text(), re.M)
    assert default, "run.sh names a default brand"
    assert load_brand(resolve_brand(default.group(1))).product == ENTITIES[0]["properties"]["name"]


def test_demo_never_writes_over_the_owners_edited_page(tmp_path: Path) -> None:
    """The demo (re)writes sites/index.html only when absent or exactly its own page; an edit is kept,
    even one that leaves the demo's comment in place, and the demo says it left the page alone."""
    from plughost.cli.commands.demo import SITE_MARK, publish_site

    target = tmp_path / "sites" / "index.html"
    assert publish_site(tmp_path) == target and SITE_MARK in target.read_text()
    assert publish_site(tmp_path) == target  # its own page, unedited: rewritten (the same)
    edited = target.read_text().replace("<main>", "<main><p>Closed on Mondays.</p>")
    target.write_text(edited)
    assert publish_site(tmp_path) is None and target.read_text() == edited
    target.write_text("<p>my own shop</p>")
    assert publish_site(tmp_path) is None and target.read_text() == "<p>my own shop</p>"
    target.unlink()
    assert publish_site(tmp_path) == target and "Closed on Mondays" not in target.read_text()


def test_demo_says_it_left_an_edited_page_alone(plughost_home: Path) -> None:
    site = plughost_home / "sites" / "index.html"
    site.parent.mkdir(parents=True, exist_ok=True)
    site.write_text("<p>my own shop</p>")
    done = run_cli("demo", env={"PLUGHOST_EMBEDDER": "none"})
    assert done.returncode == 0, done.stderr
    assert "left alone" in done.stdout and site.read_text() == "<p>my own shop</p>"
