"""`plughost plugin new NAME [--package] [--dir DIR]`: scaffold a plugin that passes `manifests check`,
`boot --check` and `claude plugin validate --strict` as generated (README "Writing a plugin").

A folder plugin (``PLUGIN.md``, a module with one tool, ``mcp/__main__.py``) for ``--plugins-dir``,
or with ``--package`` a distribution of its own (``pyproject.toml`` with a ``plughost.plugins``
entry point, a src layout, a README and a test) for ``pip install``. The code imports only
``plughost``; the server runs ``python -m plughost.cli mcp serve NAME`` with the same Python.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from plughost import __version__
from plughost.util.errors import UserError

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")  # plugin.schema.json's name
BUILTIN = {"graph", "memory", "channels", "admin", "selftest"}

HOOKS = '''"""The {name} plugin's hooks. It imports only `plughost`, the public API."""

from plughost import Tool, hookimpl


def greet(name: str) -> str:
    """Greet someone by name.

    :param name: who to greet
    """
    return f"Hello, {{name}}, from {name}."


@hookimpl
def plughost_tools(host):
    return [Tool.from_function(greet, name="{tool}")]
'''

SERVER = '''"""The {name} plugin's MCP server over stdio (what the generated plugin.json starts)."""

from plughost import run_plugin_server

if __name__ == "__main__":
    run_plugin_server("{name}")
'''

PLUGIN_MD = '''---
name: {name}
description: "The {name} plugin: one tool, served over MCP."
version: 0.1.0
requires-plughost: ">={major_minor},<{next_major}"
surface: feature
python: {module}
tools:
  - name: {tool}
    description: "Greet someone by name."
---
# {name}

Made by `plughost plugin new`. `{hooks_file}` implements the `plughost_tools` hook; the tool is
declared once, in `tools:` above. {served}
'''

PYPROJECT = '''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1.0"
description = "The {name} plugin for plughost: one tool, served over MCP."
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["plughost>={major_minor},<{next_major}"]

[project.optional-dependencies]
test = ["pytest>=8"]

[project.entry-points."plughost.plugins"]
{name} = "{package}.plugin"

[tool.setuptools.package-data]
{package} = ["PLUGIN.md"]
'''

README = '''# {dist}

The `{name}` plugin for [plughost](https://pypi.org/project/plughost/), as its own distribution:
`pip install .` beside plughost and the host finds it through the `plughost.plugins` entry point.

```sh
pip install -e '.[test]'
plughost plugins list                 # {name}  loaded  entry-point  0.1.0  feature  tools={tool}
plughost mcp serve {name}             # its tools over MCP (stdio)
plughost bundle default --out payload # shipped to Claude Code like a folder plugin
pytest
```

`src/{package}/plugin.py` holds the hooks (it imports only `plughost`); `src/{package}/PLUGIN.md`
declares the tools.
'''

TEST = '''"""The {name} plugin's hooks, called as the host calls them."""

from {package}.plugin import greet, plughost_tools


def test_the_tool_is_offered_and_answers():
    [tool] = plughost_tools(None)
    assert tool.name == "{tool}"
    assert tool.handler("Ada") == greet("Ada") == "Hello, Ada, from {name}."
'''


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    new = sub.add_parser("new", help="scaffold a plugin in DIR/NAME (a folder plugin, or --package a distribution)")
    new.add_argument("name", metavar="NAME", help="the plugin's name: lower-case words joined by '-'")
    new.add_argument("--package", action="store_true",
                     help="a distribution of its own (pyproject.toml, entry point, src layout, README, a test)")
    new.add_argument("--dir", type=Path, default=Path("."), metavar="DIR",
                     help="where to create the NAME folder (default: the current folder)")


def _check_name(name: str) -> None:
    if len(name) > 64 or not NAME.match(name):
        raise UserError(f"NAME: '{name}' is not a plugin name (lower-case letters and digits, words joined by '-', "
                        "at most 64 characters)")
    if name in BUILTIN:
        raise UserError(f"NAME: '{name}' is the name of a built-in plugin; choose another")


def files_for(name: str, package: bool) -> dict[str, str]:
    """Relative path → text of the scaffold."""
    snake = name.replace("-", "_")
    major = int(__version__.split(".")[0])
    versions = {"major_minor": ".".join(__version__.split(".")[:2]), "next_major": str(major + 1)}
    tool = f"{name}-greet"
    if not package:
        module = f"{'plugin_' if snake[0].isdigit() else ''}{snake}_tools"
        served = "`plughost mcp serve " + name + "` serves it; once bundled, Claude Code starts `mcp/__main__.py`."
        return {
            "PLUGIN.md": PLUGIN_MD.format(name=name, module=module, tool=tool, hooks_file=f"{module}.py", served=served,
                                          **versions),
            f"{module}.py": HOOKS.format(name=name, tool=tool),
            "mcp/__main__.py": SERVER.format(name=name),
        }
    pkg = f"plughost_{snake}"
    dist = f"plughost-{name}"
    served = "`plughost mcp serve " + name + "` serves it; `plughost bundle` ships it to Claude Code."
    return {
        "pyproject.toml": PYPROJECT.format(dist=dist, name=name, package=pkg, **versions),
        "README.md": README.format(dist=dist, name=name, package=pkg, tool=tool),
        f"src/{pkg}/__init__.py": f'"""The {name} plugin for plughost (the hooks are in {pkg}.plugin)."""\n',
        f"src/{pkg}/plugin.py": HOOKS.format(name=name, tool=tool),
        f"src/{pkg}/PLUGIN.md": PLUGIN_MD.format(name=name, module=f"{pkg}.plugin", tool=tool,
                                                 hooks_file="plugin.py", served=served, **versions),
        "tests/test_plugin.py": TEST.format(name=name, package=pkg, tool=tool),
    }


def run(args: argparse.Namespace, ctx: Any) -> int:
    _check_name(args.name)
    if args.dir.exists() and not args.dir.is_dir():
        raise UserError(f"--dir: '{args.dir}' is not a folder")
    target = args.dir / args.name
    if target.exists():
        raise UserError(f"NAME: '{target}' already exists; choose another name or --dir")
    files = files_for(args.name, args.package)
    for rel, text in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    kind = "distribution" if args.package else "folder plugin"
    print(f"created: {target} ({kind}: {', '.join(files)})")
    if args.package:
        print(f"next: pip install -e {target} && plughost plugins list")
    else:
        print(f"next: plughost --plugins-dir {args.dir} plugins list")
    return 0
