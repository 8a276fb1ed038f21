"""The hello plugin's hook implementations (PLUGIN.md names this module in `python:`)."""

from plughost import Tool, hookimpl


def greet(name: str, excited: bool = False) -> str:
    """Greet someone by name.

    :param name: who to greet
    :param excited: end with an exclamation mark
    """
    return f"Hello, {name}{'!' if excited else '.'}"


@hookimpl
def plughost_tools(host):
    return [Tool.from_function(greet)]
