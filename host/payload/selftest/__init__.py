"""The host's built-in gate plugin (entry point `selftest`): the registration gates, the plugin-needs and single-provider checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from plughost.payload.selftest import checks
from plughost.runtime.agent_files import agent_files_gate
from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.install_brand import install_brand_gate

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.host import Host
    from plughost.runtime.types import Gate


@hookimpl
def plughost_boot_gates(host: Host) -> list[Gate]:
    from plughost.runtime.types import Gate

    return [
        Gate("plugin-load", check=checks.plugin_load, fatal=False, order=1),
        Gate("plugin-needs", check=checks.plugin_needs, fatal=True, order=3),
        Gate("single-provider", check=checks.single_provider, fatal=True, order=5),
        install_brand_gate(),
        Gate("mcp-allowlist-coverage", check=checks.mcp_allowlist_coverage, fatal=True, order=20),
        Gate("specialist-tool-drift", check=checks.specialist_tool_drift, fatal=True, order=30),
        Gate("skill-registration", check=checks.skill_registration, fatal=False, order=40),
        Gate("tool-registration", check=checks.tool_registration, fatal=False, order=50),
        Gate("plugin-files", check=checks.plugin_files_gate, fatal=False, order=55),
        agent_files_gate(),
    ]
