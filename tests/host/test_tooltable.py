"""``plughost.runtime.tooltable`` and ``plughost.runtime.surface`` in process: the one join of declarations and handlers,
the argument check every call path shares, and the canonical names the surface derives."""

from __future__ import annotations

import asyncio

import pytest

from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.surface import canonical_name, safe_name
from plughost.runtime.tooltable import call_tool, checked_call, render
from plughost.runtime.types import Tool
from plughost.util.errors import UserError


class _Tools:
    def __init__(self, *tools: Tool) -> None:
        self._tools = list(tools)

    @hookimpl
    def plughost_tools(self, host):
        return self._tools


def say_it(text: str, times: int = 1) -> str:
    """Repeat a text."""
    return text * times


async def _later(text: str) -> str:
    await asyncio.sleep(0)
    return text.upper()


@pytest.fixture
def host(make_host):
    return make_host(PLUGHOST_DISABLE_PLUGINS="graph,memory,channels,admin")


def test_an_entry_point_style_plugin_declares_by_its_tool_objects(host) -> None:
    host.register(_Tools(Tool.from_function(say_it, admin_allowlist=True), Tool.from_function(_later, name="later")),
                  "unit")
    table = host.tools()
    assert [d.name for d in table.declared["unit"]] == ["say-it", "later"]
    served = table.of("unit")
    assert set(served) == {"say-it", "later"} and table.problems_of("unit") == []
    assert served["say-it"].schema["required"] == ["text"] and served["say-it"].admin
    assert host.tools() is table  # built once per host, until a plugin is registered


def test_call_tool_checks_arguments_and_awaits(host) -> None:
    host.register(_Tools(Tool.from_function(say_it, name="echo"), Tool.from_function(_later, name="later")), "unit")
    assert call_tool(host, "unit", "echo", {"text": "ab", "times": 2}) == "abab"
    assert call_tool(host, "unit", "later", {"text": "x"}) == "X"
    with pytest.raises(UserError, match="echo: parameter 'text' is required"):
        call_tool(host, "unit", "echo", {})
    with pytest.raises(UserError, match="echo: parameter 'times': expected integer"):
        call_tool(host, "unit", "echo", {"text": "a", "times": "2"})
    with pytest.raises(UserError, match=r"unknown tool 'nope' \(this server has: echo, later\)"):
        checked_call(host.tools().of("unit"), "nope", {})
    with pytest.raises(UserError, match="plugin: 'ghost' is not installed"):
        call_tool(host, "ghost", "echo", {})


def test_an_integral_float_reaches_an_int_parameter_as_an_int(host) -> None:
    """JSON Schema counts 2.0 as an integer; the handler, annotated ``int``, gets 2."""
    host.register(_Tools(Tool.from_function(say_it, name="echo")), "unit")
    _, args = checked_call(host.tools().of("unit"), "echo", {"text": "ab", "times": 2.0})
    assert args == {"text": "ab", "times": 2} and type(args["times"]) is int
    assert call_tool(host, "unit", "echo", {"text": "ab", "times": 2.0}) == "abab"
    with pytest.raises(UserError, match="times"):
        call_tool(host, "unit", "echo", {"text": "a", "times": 1.5})


def test_withheld_and_mismatched_tools_are_reported_not_served(host) -> None:
    def takes_a(a: str) -> str:
        return a

    withheld = Tool("off", None, description="withheld here")
    mismatched = Tool("bad", takes_a, description="schema and handler disagree",
                      input_schema={"type": "object", "properties": {"b": {"type": "string"}}})
    host.register(_Tools(withheld, mismatched), "unit")
    table = host.tools()
    assert table.withheld["unit"] == ["off"] and "off" not in table.of("unit")
    (problem,) = table.problems_of("unit")
    assert problem.reason == "signature" and "'b'" in problem.line()


def test_render_is_text_verbatim_and_json_otherwise() -> None:
    assert render("plain") == "plain"
    assert render({"a": [1, "é"]}) == '{\n  "a": [\n    1,\n    "é"\n  ]\n}'


def test_the_surface_names_and_lists_what_the_table_declares(host) -> None:
    host.register(_Tools(Tool.from_function(say_it, name="echo", admin_allowlist=True),
                         Tool.from_function(_later, name="later", eager=True)), "my.plugin")
    surface = host.surface
    echo = canonical_name("my.plugin", "my.plugin", "echo")
    assert echo == "mcp__plugin_my_plugin_my_plugin__echo"
    assert surface.admin == [echo] and surface.eager == [echo, canonical_name("my.plugin", "my.plugin", "later")]
    assert surface.namespaces["my_plugin_my_plugin"] == "my.plugin"
    assert "my.plugin" in surface.mcp_servers  # host-served: no PLUGIN.md, handlers from the hook
    assert safe_name("a/b c") == "a_b_c"
