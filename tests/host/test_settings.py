"""The settings registry (host/util/settings.py, plugins/*/settings.py): typed reads with one-line
errors, every ``PLUGHOST_*`` read through it, every name declared, unknown names warned about,
and the configuration table generated from it."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from plughost.runtime import settings as registry
from plughost.util import settings
from plughost.util.errors import UserError
from plughost.util.settings import Setting

REPO = Path(__file__).resolve().parents[2]
NAME = re.compile(r"PLUGHOST_[A-Z0-9_]*[A-Z0-9]")
"""A whole variable name (a mention ending in ``_``, ``PLUGHOST_RATE_<NAME>``, is a family, not a name)."""

REGISTRY = {REPO / "host" / "util" / "settings.py", *(REPO / "plugins").glob("*/settings.py")}
"""Where settings are declared: the only modules that spell a name to read it."""
EXEMPT = {
    REPO / "plugins/memory/surfacing/hook.py":
        "the hook's first stage: started with python -S -I and builtins only, before anything could import the host",
    REPO / "plugins/memory/surfacing/client.py":
        "the hook process run as a script (python -S): it reads its switches and timeouts before the host is on "
        "the path, and stays standard library on its warm path",
    REPO / "plugins/memory/surfacing/gate.py":
        "the consult gate, the PreToolUse hook's process: started with python -S -I and builtins only, like hook.py",
    REPO / "plugins/memory/surfacing/ask_gate.py":
        "the investigate-before-asking gate, a PreToolUse hook's process like gate.py: builtins only",
    REPO / "plugins/memory/surfacing/context.py":
        "imported by client.py as a script: forwards PLUGHOST_HOME and the hook's budget and limit raw to serve, "
        "which reads them through the registry",
}
"""Stdlib-only hook stages that read their variables raw. Their names are still declared (the
test below), and :func:`test_the_hook_stages_defaults_are_the_declared_ones` pins their defaults."""


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def reads(tree: ast.AST) -> list[tuple[int, str]]:
    """Every use of a ``PLUGHOST_*`` name but a write into an environment: ``m.get("V")``,
    ``m["V"]``, ``"V" in m``, ``os.getenv("V")``, ``flag("V")``, a tuple or constant of names,
    and a name built at run time (``f"PLUGHOST_RATE_{x}"``). Writes are fine: ``m["V"] = ...``,
    ``del m["V"]``, ``{"V": ...}`` and ``m.pop("V", None)`` set up a child's environment."""
    up = _parents(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and len(node.values) > 1 and isinstance(node.values[0], ast.Constant) \
                and isinstance(node.values[0].value, str) and re.fullmatch(r"PLUGHOST_[A-Z0-9_]*_", node.values[0].value) \
                and isinstance(node.values[1], ast.FormattedValue):
            out.append((node.lineno, node.values[0].value + "{...}"))
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value)):
            continue
        parent = up.get(node)
        if isinstance(parent, ast.Subscript) and parent.slice is node and isinstance(parent.ctx, (ast.Store, ast.Del)):
            continue
        if isinstance(parent, ast.Dict) and any(key is node for key in parent.keys):
            continue
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "pop" \
                and parent.args and parent.args[0] is node:
            continue
        out.append((node.lineno, node.value))
    return out


def _code() -> list[Path]:
    return sorted([*(REPO / "host").rglob("*.py"), *(REPO / "plugins").rglob("*.py")])


def test_the_check_sees_every_kind_of_read() -> None:
    source = """
env.get("PLUGHOST_A"); os.environ["PLUGHOST_B"]; "PLUGHOST_C" in env; os.getenv("PLUGHOST_D")
config.flag("PLUGHOST_E", env); env_int(env, "PLUGHOST_F", 1); KEYS = ("PLUGHOST_G",); var = f"PLUGHOST_RATE_{name}"
child["PLUGHOST_W"] = "1"; child.pop("PLUGHOST_X", None); {**env, "PLUGHOST_Y": "1"}; del child["PLUGHOST_Z"]
raise UserError("PLUGHOST_A: expected a number"); log("x", reason="PLUGHOST_SURFACE=0")
"""
    assert sorted(name for _, name in reads(ast.parse(source))) == [
        "PLUGHOST_A", "PLUGHOST_B", "PLUGHOST_C", "PLUGHOST_D", "PLUGHOST_E", "PLUGHOST_F", "PLUGHOST_G",
        "PLUGHOST_RATE_{...}"]


def test_every_plughost_read_goes_through_the_registry() -> None:
    found = []
    for path in _code():
        if path in REGISTRY or path in EXEMPT:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(REPO)}:{line}: {name}" for line, name in reads(tree)]
    assert not found, ("read PLUGHOST_* variables through their Setting (host/util/settings.py, "
                       "plugins/<name>/settings.py):\n" + "\n".join(found))


def _declared() -> set[str]:
    import importlib

    names = {s.name for s in settings.HOST}
    for path in sorted((REPO / "plugins").glob("*/settings.py")):
        names |= {s.name for s in importlib.import_module(f"plugins.{path.parent.name}.settings").ALL}
    return names


def test_every_plughost_name_in_the_code_is_a_declared_setting() -> None:
    """Each ``PLUGHOST_*`` name in ``host/`` and ``plugins/`` (code, docstrings, shell hooks) is a
    setting someone declares, or a listed non-setting (:data:`plughost.util.settings.NOT_SETTINGS`)."""
    known = _declared() | set(settings.NOT_SETTINGS)
    files = [*_code(), *(REPO / "plugins").rglob("*.sh"), *(REPO / "plugins").glob("*/bin/*")]
    found = []
    for path in files:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for name in re.findall(r"PLUGHOST_[A-Z0-9_]+", line):
                if not name.endswith("_") and name not in known:
                    found.append(f"{path.relative_to(REPO)}:{lineno}: {name}")
    assert not found, "undeclared PLUGHOST_* names (declare them, or list them in NOT_SETTINGS):\n" + "\n".join(found)


def test_the_plugins_publish_what_they_declare(make_host) -> None:
    rows = registry.table(make_host())
    assert {d.setting.name for d in rows} == _declared()
    assert all(settings.HOME is d.setting for d in rows if d.setting.name == "PLUGHOST_HOME")
    assert len({d.setting.name for d in rows}) == len(rows)


def test_the_hook_stages_defaults_are_the_declared_ones() -> None:
    from plughost.plugins.memory import settings as memory
    from plughost.plugins.memory.surfacing import client, hook

    # the builtins-only hook stages keep copies of these defaults (they run before any plughost import)
    assert hook.WARM_TIMEOUT_MS == client.WARM_TIMEOUT_MS == memory.SURFACE_TIMEOUT_MS.default
    assert client.COLD_TIMEOUT_MS == memory.SURFACE_COLD_TIMEOUT_MS.default
    assert memory.SURFACE.default is True and memory.SURFACE_COLD.default is True and settings.LOG_FILE.default
    assert {k for k in hook.SENT_KEYS if k.startswith("PLUGHOST_")} <= _declared()
    from plughost.plugins.memory.surfacing import gate

    assert gate.DEFAULT_TOOLS == memory.CONSULT_GATE_TOOLS.default and memory.CONSULT_GATE.default is True
    from plughost.plugins.memory.surfacing import ask_gate

    assert ask_gate.DEFAULT_TOOLS == memory.ASK_GATE_TOOLS.default and memory.ASK_GATE.default is True


# ---------------------------------------------------------------------- reading
def test_a_setting_reads_its_type_and_defaults_when_unset_or_empty() -> None:
    turns = Setting("PLUGHOST_WEBCHAT_MAX_TURNS", "int", 8, "doc", minimum=1)
    assert turns.read({}) == 8 and turns.read({"PLUGHOST_WEBCHAT_MAX_TURNS": " "}) == 8
    assert turns.read({"PLUGHOST_WEBCHAT_MAX_TURNS": " 12 "}) == 12
    flag = Setting("PLUGHOST_X_FLAG", "bool", False, "doc")
    assert [flag.read({"PLUGHOST_X_FLAG": v}) for v in ("1", "true", "Yes", "ON", "0", "false", "no", "off")] == \
        [True] * 4 + [False] * 4
    assert Setting("PLUGHOST_X_RATIO", "float", 0.5, "doc", minimum=0, maximum=1).read({"PLUGHOST_X_RATIO": "0.25"}) == 0.25
    pick = Setting("PLUGHOST_X_PICK", "choice", "a", "doc", choices=("a", "b"))
    assert pick.read({"PLUGHOST_X_PICK": "B"}) == "b"
    names = Setting("PLUGHOST_X_NAMES", "csv", None, "doc")
    assert names.read({}) is None and names.read({"PLUGHOST_X_NAMES": ""}) == []
    assert names.read({"PLUGHOST_X_NAMES": "a, b,,"}) == ["a", "b"]
    assert Setting("PLUGHOST_X_DIR", "path", None, "doc").read({"PLUGHOST_X_DIR": "/tmp/x"}) == Path("/tmp/x")


@pytest.mark.parametrize(("setting", "value", "message"), [
    (Setting("PLUGHOST_WEBCHAT_MAX_TURNS", "int", 8, "d", minimum=1), "x",
     "PLUGHOST_WEBCHAT_MAX_TURNS: expected an integer >= 1 (got 'x')"),
    (Setting("PLUGHOST_WEBCHAT_MAX_TURNS", "int", 8, "d", minimum=1), "0",
     "PLUGHOST_WEBCHAT_MAX_TURNS: expected an integer >= 1 (got '0')"),
    (Setting("PLUGHOST_RESUME_BATCH", "int", 100, "d", minimum=1, maximum=10_000), "20000",
     "PLUGHOST_RESUME_BATCH: expected an integer from 1 to 10000 (got '20000')"),
    (Setting("PLUGHOST_X_INT", "int", 1, "d"), "²", "PLUGHOST_X_INT: expected an integer (got '²')"),
    (Setting("PLUGHOST_X_SECONDS", "float", 1.0, "d", above=0), "nan", "PLUGHOST_X_SECONDS: expected a number > 0 (got 'nan')"),
    (Setting("PLUGHOST_X_FLAG", "bool", False, "d"), "maybe",
     "PLUGHOST_X_FLAG: expected 1 or 0 (also true/false, yes/no, on/off) (got 'maybe')"),
    (Setting("PLUGHOST_X_PICK", "choice", "a", "d", choices=("a", "b")), "c", "PLUGHOST_X_PICK: expected one of a, b (got 'c')"),
])
def test_a_bad_value_is_one_line_naming_the_variable_and_what_was_expected(setting, value, message) -> None:
    with pytest.raises(UserError) as err:
        setting.read({setting.name: value})
    assert str(err.value) == message
    assert setting.problem({setting.name: value}) == message and setting.read_or_default({setting.name: value}) == \
        setting.default


def test_bad_values_the_shipped_reads_used_to_swallow_are_named() -> None:
    from plughost.plugins.channels.delivery import batch_size
    from plughost.plugins.channels.settings import WEBCHAT_MAX_TURNS

    with pytest.raises(UserError, match=r"^PLUGHOST_RESUME_BATCH: expected an integer from 1 to 10000 \(got 'lots'\)$"):
        batch_size({"PLUGHOST_RESUME_BATCH": "lots"})
    with pytest.raises(UserError, match=r"^PLUGHOST_WEBCHAT_MAX_TURNS: expected an integer >= 1 \(got 'x'\)$"):
        WEBCHAT_MAX_TURNS.read({"PLUGHOST_WEBCHAT_MAX_TURNS": "x"})


# ---------------------------------------------------------------------- the command and the docs
def test_an_unknown_variable_is_warned_with_a_did_you_mean_never_fatal(cli) -> None:
    done = cli("plugins", "list", env={"PLUGHOST_GS_STEMM": "1", "PLUGHOST_ZZZ_QQQ": "1", "PLUGHOST_GS_STEM": "1"})
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("[settings]")]
    assert lines == ["[settings] op=unknown name=PLUGHOST_GS_STEMM suggestion=PLUGHOST_GS_STEM",
                     "[settings] op=unknown name=PLUGHOST_ZZZ_QQQ"]
    quiet = cli("plugins", "list", env={"PLUGHOST_SPECIALIST": "x", "PLUGHOST_GS_STEM": "0"})
    assert quiet.returncode == 0 and "[settings]" not in quiet.stderr


@pytest.mark.parametrize("command", [("boot", "--check"), ("serve", "--port", "0")])
def test_serve_and_boot_refuse_a_bad_value_of_any_setting_before_they_start(cli, command) -> None:
    """A value read only later (the resume batch, a route's limit) stops the start, not a feature."""
    done = cli(*command, env={"PLUGHOST_RESUME_BATCH": "x"})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == \
        "plughost: PLUGHOST_RESUME_BATCH: expected an integer from 1 to 10000 (got 'x')", done.stderr
    assert "Traceback" not in done.stderr


def test_the_settings_command_lists_name_type_default_plugin_and_doc(cli) -> None:
    done = cli("settings", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["settings"]}
    assert rows["PLUGHOST_GS_STEM"] == {"name": "PLUGHOST_GS_STEM", "type": "bool", "default": "1", "plugin": "memory",
                                        "doc": "BM25 over the stemmed shadow of the text (0: the baseline)"}
    assert rows["PLUGHOST_AGENT"]["choices"] == ["memory", "claude", "command"] and rows["PLUGHOST_HOME"]["plugin"] == "host"
    assert rows["PLUGHOST_RESUME_BATCH"]["minimum"] == 1 and rows["PLUGHOST_RESUME_BATCH"]["maximum"] == 10_000
    text = cli("settings")
    assert text.returncode == 0 and any(ln.startswith("PLUGHOST_GS_STEM ") and " memory " in ln
                                        for ln in text.stdout.splitlines())
    md = cli("settings", "--markdown")
    assert md.returncode == 0 and md.stdout.startswith("| variable | type | default | plugin | meaning |")
    assert "| `PLUGHOST_WEBCHAT_MAX_TURNS` | int >= 1 | `8` | channels |" in md.stdout


def test_the_configuration_doc_is_current() -> None:
    text = (REPO / registry.DOC).read_text(encoding="utf-8")
    assert text.count(registry.START) == 1 and text.count(registry.END) == 1
    table = text.split(registry.START, 1)[1].split(registry.END, 1)[0].lstrip("\n")
    assert table == registry.markdown(registry.doc_rows()), (
        "docs/configuration.md is stale: run python -m plughost.runtime.settings")


def test_the_doc_generator_keeps_everything_outside_the_markers() -> None:
    rows = registry.doc_rows()[:2]
    fresh = registry.update_doc("", rows)
    assert fresh.startswith("# Configuration") and registry.START in fresh
    edited = fresh.replace("# Configuration", "# Configuration (edited)") + "\nafter\n"
    again = registry.update_doc(edited, registry.doc_rows()[:3])
    assert again.startswith("# Configuration (edited)") and again.endswith(f"{registry.END}\n\nafter\n")
    assert again.count("| `PLUGHOST_") == 3
