"""Who is acting is decided in one place: no module but ``host/ports/principal.py`` names the
principal's variables (``ACCOUNT_ID``, ``ALLOWED_SCOPES``, ``AGENT_SLUG``, the session ones).

A read (``env.get("ACCOUNT_ID")``), a test (``"AGENT_SLUG" in env``) or a splice
(``{**env, "ALLOWED_SCOPES": ...}``) anywhere else re-decides the principal; each such site
was once a hole. Strings that merely mention a variable (messages, docstrings) are fine.
"""

from __future__ import annotations

import ast
from pathlib import Path

from plughost.ports.principal import VARS

REPO = Path(__file__).resolve().parents[2]
RESOLVER = REPO / "host" / "principal.py"
FORWARDER = REPO / "plugins" / "memory" / "surfacing" / "hook.py"
"""The hook's builtins-only first stage: it forwards the variables to ``plughost serve``, whose
resolver decides (it cannot import anything); ``test_hook_forwards_every_principal_var`` pins it."""


def _named(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in VARS else None


def _uses(tree: ast.AST) -> list[tuple[int, str]]:
    """Every environment access by a principal variable's name: ``m.get("V")``, ``m["V"]``
    (read or write), ``"V" in m``, ``os.getenv("V")`` and ``{"V": ...}`` / ``dict(V=...)`` splices."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            attr = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if attr in ("get", "getenv", "pop", "setdefault", "putenv", "unsetenv") and node.args:
                if (name := _named(node.args[0])) is not None:
                    out.append((node.lineno, name))
            out.extend((node.lineno, k.arg) for k in node.keywords if k.arg in VARS)
        elif isinstance(node, ast.Subscript) and (name := _named(node.slice)) is not None:
            out.append((node.lineno, name))
        elif isinstance(node, ast.Compare) and (name := _named(node.left)) is not None:
            out.append((node.lineno, name))
        elif isinstance(node, ast.Dict):
            out.extend((node.lineno, name) for k in node.keys if k is not None and (name := _named(k)) is not None)
    return out


def reads_outside_resolver() -> list[str]:
    found = []
    for path in sorted([*(REPO / "host").rglob("*.py"), *(REPO / "plugins").rglob("*.py")]):
        if path in (RESOLVER, FORWARDER):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found.extend(f"{path.relative_to(REPO)}:{line}: {name}" for line, name in sorted(_uses(tree)))
    return found


def test_the_check_sees_every_kind_of_access() -> None:
    source = """
env.get("ACCOUNT_ID"); os.environ["ALLOWED_SCOPES"]; "AGENT_SLUG" in env; os.getenv("SESSION_ID")
x = {**env, "PLUGHOST_SESSION_ROLE": "admin"}; env["PLUGHOST_SESSION_ID"] = "s"; dict(env, SESSION_NODE_ID="n")
raise UserError("ACCOUNT_ID: not set")
"""
    assert sorted(name for _, name in _uses(ast.parse(source))) == sorted(VARS)


def test_no_module_but_the_resolver_names_the_principals_variables() -> None:
    found = reads_outside_resolver()
    assert not found, "the principal is resolved in host/ports/principal.py only; these re-decide it:\n" + "\n".join(found)


def test_hook_forwards_every_principal_var() -> None:
    from plughost.plugins.memory.surfacing import hook

    assert set(VARS) <= set(hook.SENT_KEYS)
