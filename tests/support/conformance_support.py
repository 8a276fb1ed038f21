"""Run the MCP conformance suite raw against a served endpoint: each scenario that applies to
what the server advertises runs on its own, the others are skipped (never baselined).

A scenario applies when the server advertises the capability it exercises and serves the fixture
item (tool, prompt, resource) it calls; the suite itself runs every scenario it has, so a server
that does not offer prompts would "fail" ``prompts-get-simple`` for offering nothing, and one that
advertised prompts with nothing behind them would "pass" ``prompts-list`` on an empty list.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REQUIRES: dict[str, tuple[str, str | None]] = {
    "server-initialize": ("tools", None),
    "ping": ("tools", None),
    "tools-list": ("tools", None),
    "server-sse-multiple-streams": ("tools", None),
    "dns-rebinding-protection": ("tools", None),
    "tools-call-simple-text": ("tools", "tool:test_simple_text"),
    "tools-call-image": ("tools", "tool:test_image_content"),
    "tools-call-audio": ("tools", "tool:test_audio_content"),
    "tools-call-embedded-resource": ("tools", "tool:test_embedded_resource"),
    "tools-call-mixed-content": ("tools", "tool:test_multiple_content_types"),
    "tools-call-error": ("tools", "tool:test_error_handling"),
    "tools-call-with-logging": ("tools", "tool:test_tool_with_logging"),
    "tools-call-with-progress": ("tools", "tool:test_tool_with_progress"),
    "tools-call-sampling": ("tools", "tool:test_sampling"),
    "tools-call-elicitation": ("tools", "tool:test_elicitation"),
    "elicitation-sep1034-defaults": ("tools", "tool:test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": ("tools", "tool:test_elicitation_sep1330_enums"),
    "json-schema-2020-12": ("tools", "tool:json_schema_2020_12_tool"),
    "server-sse-polling": ("tools", "tool:test_reconnection"),
    "logging-set-level": ("logging", None),
    "completion-complete": ("completions", "prompt:test_prompt_with_arguments"),
    "resources-list": ("resources", None),
    "resources-read-text": ("resources", "resource:test://static-text"),
    "resources-read-binary": ("resources", "resource:test://static-binary"),
    "resources-templates-read": ("resources", "template:test://template/{id}/data"),
    "resources-subscribe": ("resources", "resource:test://watched-resource"),
    "resources-unsubscribe": ("resources", "resource:test://watched-resource"),
    "prompts-list": ("prompts", None),
    "prompts-get-simple": ("prompts", "prompt:test_simple_prompt"),
    "prompts-get-with-args": ("prompts", "prompt:test_prompt_with_arguments"),
    "prompts-get-embedded-resource": ("prompts", "prompt:test_prompt_with_embedded_resource"),
    "prompts-get-with-image": ("prompts", "prompt:test_prompt_with_image"),
}
"""Every server scenario of the pinned suite: the capability it exercises and the fixture item it calls."""


@dataclass
class Advertised:
    capabilities: set[str]
    items: set[str]


@dataclass
class Outcome:
    server: str
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    checks: dict[str, int] = field(default_factory=lambda: {"SUCCESS": 0, "FAILURE": 0, "WARNING": 0})

    def line(self) -> str:
        return (f"[conformance] server={self.server} scenarios={len(REQUIRES)} passed={len(self.passed)} "
                f"failed={len(self.failed)} skipped={len(self.skipped)} checks-passed={self.checks['SUCCESS']} "
                f"checks-failed={self.checks['FAILURE']} warnings={self.checks['WARNING']}")


def suite_scenarios(command: list[str]) -> list[str]:
    """The server scenarios the pinned suite lists (``conformance list --server``)."""
    out = subprocess.run([*command, "list", "--server"], capture_output=True, text=True, timeout=60)
    return re.findall(r"^\s+- ([a-z0-9-]+)", out.stdout + out.stderr, re.M)


async def advertised(url: str) -> Advertised:
    """What the server offers: its ``initialize`` capabilities and the items listed under each."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url)) as client:
        caps = client.server_capabilities.model_dump(exclude_none=True)
        names = {k for k, v in caps.items() if v is not None and k not in ("experimental", "extensions")}
        items = {f"tool:{t.name}" for t in (await client.list_tools()).tools}
        if "prompts" in names:
            items |= {f"prompt:{p.name}" for p in (await client.list_prompts()).prompts}
        if "resources" in names:
            items |= {f"resource:{r.uri}" for r in (await client.list_resources()).resources}
            items |= {f"template:{t.uri_template}" for t in (await client.list_resource_templates()).resource_templates}
        return Advertised(names, items)


def run_suite(command: list[str], server: str, url: str, offer: Advertised, out_dir: Path) -> Outcome:
    """Each applicable scenario alone (``--scenario``, no baseline); the rest skipped with the reason."""
    outcome = Outcome(server)
    env = {**os.environ, "PATH": f"{Path(command[0]).parent}:{os.environ['PATH']}"}
    for scenario, (capability, item) in REQUIRES.items():
        if capability not in offer.capabilities:
            outcome.skipped[scenario] = f"capability '{capability}' not advertised"
            continue
        if item is not None and item not in offer.items:
            outcome.skipped[scenario] = f"{item} not served"
            continue
        results = out_dir / server / scenario
        run = subprocess.run([*command, "server", "--url", url, "--scenario", scenario, "-o", str(results)],
                             capture_output=True, text=True, timeout=120, cwd=out_dir, env=env)
        checks: list[dict[str, Any]] = []
        for path in results.glob("*/checks.json"):
            checks += json.loads(path.read_text())
        statuses = [c.get("status") for c in checks]
        for status in ("SUCCESS", "FAILURE", "WARNING"):
            outcome.checks[status] += statuses.count(status)
        bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
        if run.returncode != 0 or bad or not checks:
            outcome.failed[scenario] = "; ".join(f"{c.get('id')}: {c.get('errorMessage')}" for c in bad) \
                or (run.stdout + run.stderr)[-600:]
        else:
            outcome.passed.append(scenario)
    return outcome
