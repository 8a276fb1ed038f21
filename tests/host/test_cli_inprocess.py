"""The in-process ``plughost`` the suite runs most CLI tests with (tests/support/cli_support.py):
it says what a ``python -m plughost.cli`` process says, isolates what a process boundary would, puts
the test's process back as it was, and fails a run that leaves threads behind."""

from __future__ import annotations

import ast
import gc
import importlib
import json
import logging
import os
import re
import signal
import sys
import textwrap
from pathlib import Path

import cli_support
import pytest
from cli_support import MODULE_STATE, PROCESS_STATE_KEPT, LeftBehind, run_in_process

from tests.conftest import REPO, module_name, run_cli, run_cli_process

PROBE = '''
import gc, json, logging, os, signal, sys, threading, time, warnings

from plughost.runtime.hookspecs import hookimpl
from plughost.runtime.types import CliCommand


def configure(parser):
    parser.add_argument("--mess", action="store_true")
    parser.add_argument("--leave-thread", metavar="STOPFILE")
    parser.add_argument("--exit", dest="code")
    parser.add_argument("--crash", action="store_true")
    parser.add_argument("--os-exit", type=int)


def run(args, host):
    if args.mess:
        logging.getLogger("probe.lib").setLevel(logging.INFO)
        logging.getLogger("probe.lib").warning("library says")
        warnings.warn("probe warns", UserWarning)
        signal.signal(signal.SIGUSR1, lambda *a: None)
        gc.disable()
        sys.path.insert(0, "/nowhere")
        os.environ["PROBE_LEAK"] = "1"
    if args.leave_thread:
        def wait():
            while not os.path.exists(args.leave_thread):
                time.sleep(0.02)
        threading.Thread(target=wait, name="probe-leftover", daemon=True).start()
    if args.code is not None:
        raise SystemExit(int(args.code) if args.code.isdigit() else args.code)
    if args.crash:
        raise RuntimeError("probe crashed")
    if args.os_exit is not None:
        print("flushed before the exit", flush=True)
        os._exit(args.os_exit)
    print(json.dumps({"value": os.environ.get("PROBE_VALUE"), "home": os.environ.get("HOME"), "cwd": os.getcwd(),
                      "argv": sys.argv[1:], "stdin": sys.stdin.read(), "tty": sys.stdin.isatty()}))
    print("probe to stderr\\r\\nsecond line", file=sys.stderr)
    return 0


@hookimpl
def plughost_cli_commands(host):
    return [CliCommand("probe", "probe the process", configure, run)]
'''


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins" / "probe"
    folder.mkdir(parents=True)
    (folder / "PLUGIN.md").write_text("---\nname: probe\nversion: 0.1.0\npython: impl\n---\n# probe\n",
                                      encoding="utf-8")
    (folder / "impl.py").write_text(textwrap.dedent(PROBE), encoding="utf-8")
    return folder.parent


def test_a_run_has_its_own_env_cwd_argv_and_stdin_and_gives_them_back(probe: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    before = (dict(os.environ), os.getcwd(), list(sys.argv), sys.stdin, sys.stdout, sys.stderr)
    done = run_cli("--plugins-dir", str(probe), "probe", env={"PROBE_VALUE": "v1", "HOME": str(work)},
                   input="piped in\n", cwd=work)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {"value": "v1", "home": str(work), "cwd": str(work), "argv": ["--plugins-dir", str(probe), "probe"],
                    "stdin": "piped in\n", "tty": False}
    assert done.stderr.endswith("probe to stderr\nsecond line\n")  # read as text=True reads a pipe
    assert (dict(os.environ), os.getcwd(), list(sys.argv), sys.stdin, sys.stdout, sys.stderr) == before
    quiet = run_cli("--plugins-dir", str(probe), "probe")
    assert json.loads(quiet.stdout)["value"] is None and json.loads(quiet.stdout)["stdin"] == ""


def test_what_a_command_changes_in_the_process_is_put_back(probe: Path) -> None:
    handler, path, root_handlers = signal.getsignal(signal.SIGUSR1), list(sys.path), list(logging.getLogger().handlers)
    modules = set(sys.modules)
    done = run_cli("--plugins-dir", str(probe), "probe", "--mess")
    assert done.returncode == 0, done.stderr
    assert "library says\n" in done.stderr  # no handler: logging's last resort, the run's stderr, as in a process
    assert "UserWarning: probe warns" in done.stderr  # the interpreter's warning printer, not pytest's recorder
    assert signal.getsignal(signal.SIGUSR1) is handler and gc.isenabled() and sys.path == path
    assert "PROBE_LEAK" not in os.environ
    assert logging.getLogger("probe.lib").level == logging.NOTSET and logging.getLogger().handlers == root_handlers
    assert not [name for name in set(sys.modules) - modules if name.startswith("plughost_ext_")]  # the run's
    # plugin-folder imports are dropped (a next run imports the folder afresh, as a new process would)


def test_exit_codes_are_what_the_interpreter_makes_of_them(probe: Path) -> None:
    assert run_cli("--plugins-dir", str(probe), "probe", "--exit", "3").returncode == 3
    said = run_cli("--plugins-dir", str(probe), "probe", "--exit", "bye now")
    assert said.returncode == 1 and said.stderr.endswith("bye now\n")
    crashed = run_cli("--plugins-dir", str(probe), "probe", "--crash")
    assert crashed.returncode == 1 and "Traceback" in crashed.stderr and "RuntimeError: probe crashed" in crashed.stderr
    assert run_cli("--version").returncode == 0 and run_cli("no-such-command").returncode == 2
    ended = run_cli("--plugins-dir", str(probe), "probe", "--os-exit", "4")  # as `serve` ends after a stop
    assert ended.returncode == 4 and ended.stdout == "flushed before the exit\n"
    assert os._exit is cli_support._REAL_EXIT  # and the test's process still has the real one


def test_a_thread_left_running_fails_the_run_by_name(probe: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(cli_support, "LEFTOVER_GRACE", 0.3)
    stop = tmp_path / "stop"
    with pytest.raises(LeftBehind, match="left thread 'probe-leftover' running"):
        run_cli("--plugins-dir", str(probe), "probe", "--leave-thread", str(stop))
    stop.touch()  # the probe's thread ends


def test_a_thread_that_ends_within_the_grace_is_no_leftover(probe: Path, tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    stop.touch()
    assert run_cli("--plugins-dir", str(probe), "probe", "--leave-thread", str(stop)).returncode == 0


def test_what_an_interpreter_reads_at_start_is_refused(probe: Path) -> None:
    with pytest.raises(ValueError, match="cannot honour PYTHONPATH: use run_cli_process"):
        run_in_process(["--plugins-dir", str(probe), "probe"], {**os.environ, "PYTHONPATH": "/elsewhere"})


def test_once_per_process_lines_are_said_by_every_run() -> None:
    env = {"ACCOUNT_ID": "acct", "PLUGHOST_EMBEDDER": "none"}
    for _ in range(2):
        done = run_cli("memory", "search", "anything", env=env)
        assert done.returncode == 0, done.stderr
        assert "[embed] warn provider=none reason=PLUGHOST_EMBEDDER=none" in done.stderr


_VARYING = re.compile(r"\b(ms|elapsed|took)=\S+")


@pytest.mark.parametrize("args", [("plugins", "list", "--json"), ("plugins", "list"), ("manifests", "check", "nope"),
                                  ("no-such-command",), ("account", "list", "--json"), ("boot", "--check")],
                         ids=" ".join)
def test_in_process_and_a_real_process_say_the_same(args: tuple[str, ...], tmp_path: Path) -> None:
    env = {"ACCOUNT_ID": "acct"} if args[0] == "boot" else {}
    real = run_cli_process(*args, env=env, cwd=tmp_path)
    here = run_cli(*args, env=env, cwd=tmp_path)
    assert here.returncode == real.returncode
    assert _VARYING.sub("", here.stdout) == _VARYING.sub("", real.stdout)
    assert _VARYING.sub("", here.stderr) == _VARYING.sub("", real.stderr)


# --------------------------------------------------------------------------- the state tables stay complete
_MUTATORS = {"add", "append", "update", "clear", "pop", "popitem", "setdefault", "extend", "insert", "remove",
             "discard"}


def _process_state(path: Path) -> set[str]:
    """Module-level names of one file that hold state across calls: rebound through ``global``,
    containers changed in place, functions under ``functools.cache`` / ``lru_cache``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_names = {t.id for s in tree.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
    module_names |= {s.target.id for s in tree.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                     and s.value is not None}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.update(node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS \
                and isinstance(node.func.value, ast.Name):
            found.add(node.func.value.id)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = [node.target] if isinstance(node, ast.AugAssign) else node.targets
            found.update(t.value.id for t in targets if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name))
    found &= module_names
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in stmt.decorator_list:
                fn = deco.func if isinstance(deco, ast.Call) else deco
                if (fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)) in ("cache", "lru_cache"):
                    found.add(stmt.name)
    return found


def test_every_piece_of_process_state_is_reset_or_said_harmless() -> None:
    found = set()
    for top in ("host", "plugins"):
        for path in sorted((REPO / top).rglob("*.py")):
            module = module_name(path)
            found |= {(module, name) for name in _process_state(path)}
    listed = {(m, n) for table in (MODULE_STATE, PROCESS_STATE_KEPT) for m, entry in table.items() for n in entry[0]}
    assert found - listed == set(), ("module state an in-process run would share with the next: reset it in "
                                     "cli_support.MODULE_STATE or say why it is harmless in PROCESS_STATE_KEPT")
    assert listed - found == set(), "stale entries in cli_support's state tables"
    for module, name in listed:
        assert hasattr(importlib.import_module(module), name), (module, name)
