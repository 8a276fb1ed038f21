"""``plughost ...`` run in the test's own process, isolated as a fresh process would be.

A CLI subprocess costs ~1.4 s of interpreter start and imports; :func:`run_in_process` calls
``plughost.cli.main(argv)`` instead and gives back the same :class:`subprocess.CompletedProcess`
(exit code, stdout, stderr) a ``python -m plughost.cli`` run would. What a process boundary would
have isolated is isolated here, and put back afterwards:

* the environment (``os.environ`` is exactly the ``env`` given, ``HOME`` and ``PLUGHOST_*``
  included; ``TZ`` and the temp-dir variables take effect), the working directory, ``sys.argv``,
  ``sys.path``, stdin (the ``input`` text, else empty, never a terminal), stdout and stderr
  (captured as bytes and decoded as ``text=True`` would), the ``warnings`` filters and the
  interpreter's default warning printer, the ``logging`` tree (library loggers print through
  ``logging.lastResort`` to the captured stderr, as in a fresh process; levels and handlers a
  command sets are undone), signal handlers, the garbage collector switch, context variables
  (``main`` runs in a copy of the context);
* ``SystemExit`` is an exit code, an escaping exception a traceback on stderr and exit 1, as
  the interpreter would do; ``os._exit`` from the run's main thread ends the run, not the test
  process (forked children and other threads get the real one);
* module-level state the CLI keeps between calls in one process (:data:`MODULE_STATE`) is reset
  before and after every run; ``plughost_ext_*`` modules a run imported from plugin folders are
  dropped (the test's own are put back as they were);
* a run must not leave threads or child processes behind: it waits a little for them to end,
  then fails the test naming them (a real process would have taken them down at exit).

What cannot be isolated is refused: an ``env`` that changes how the interpreter itself starts
(``PYTHONPATH``, ``PYTHONHOME`` ...) needs :func:`tests.conftest.run_cli_process`, as do tests
of signals, stdio servers, bare environments and the console script.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

PROCESS_ONLY_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONNOUSERSITE", "PYTHONUSERBASE",
                    "PYTHONSAFEPATH", "PYTHONNODEBUGRANGES", "PYTHONDEVMODE", "PYTHONUTF8", "PYTHONIOENCODING",
                    "PYTHONWARNINGS", "PYTHONOPTIMIZE", "PYTHONHASHSEED", "LD_PRELOAD", "LD_LIBRARY_PATH")
"""Variables read when an interpreter starts: an in-process run cannot honour a change to them."""

LEFTOVER_GRACE = 10.0
"""Seconds a run's threads and children get to finish after ``main`` returned."""

_STARTUP_FILTERS = list(warnings.filters)  # conftest imports this before any test's warning capture
_LOCK = threading.RLock()


class LeftBehind(AssertionError):
    """An in-process run left a thread or a child process running."""


class _ProcessExit(BaseException):
    """``os._exit(code)`` called by the run in this process's main thread: the process ends here."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


_REAL_EXIT = os._exit


def _exit_in_process(code: int) -> None:
    """``os._exit`` during a run: in the test's own process and main thread it ends the run with
    ``code`` (``plughost serve`` ends so after a graceful stop) instead of the test process; in a
    forked child or another thread it is the real one."""
    if os.getpid() == _PID and threading.current_thread() is threading.main_thread():
        raise _ProcessExit(code)
    _REAL_EXIT(code)


_PID = os.getpid()


def _clear_caches(module: Any, *names: str) -> None:
    for name in names:
        getattr(module, name).cache_clear()


def _clear(module: Any, *names: str) -> None:
    for name in names:
        getattr(module, name).clear()


def _set_none(module: Any, *names: str) -> None:
    for name in names:
        setattr(module, name, None)


MODULE_STATE: dict[str, tuple[tuple[str, ...], Callable[..., None], str]] = {
    "plughost.runtime.manifest": (("_validator", "_fast"), _clear_caches,
                      "validators keyed by schema name, read from PLUGHOST_MANIFESTS_DIR's folder"),
    "plughost.util.redact": (("_formats",), _set_none,
                    "a fresh process builds them from <PLUGHOST_HOME>/cache/redact-patterns.json (and writes it)"),
    "plughost.runtime.settings": (("_warned",), _clear, "an unknown PLUGHOST_* variable is warned once per process"),
    "plughost.runtime.types": (("_deprecated_runners",), _clear,
                               "an agent runner class with the old `run` is logged once per process"),
    "plughost.runtime.legacy": (("_owners", "_warned", "_logged"), _clear,
                                "an old `host...` name is warned once per file and logged once per plugin"),
    "plughost.plugins.memory.embedding.provider": (("_warned",), _clear, "`[embed] warn provider=none ...` is logged once per process"),
    "plughost.plugins.memory.retrieval.entities": (("_COUNTS",), _clear,
                                          "the entity path's Message counts per store and guards, for a minute"),
    "plughost.plugins.memory.conversations.service": (("_SESSION_CONVERSATIONS",), _clear,
                                     "(store, guards, session) → Conversation id, found once per process"),
    "plughost.plugins.admin.console.pages": (("DOCTOR_RUN",), lambda m, *n: m.DOCTOR_RUN.update(
        running=False, started="", error=""), "the console's background doctor run: a server's, one at a time"),
    "plughost.util.credentials": (("_CONVERSATION_SECRETS",), _clear,
                                  "an account's conversation-id key by file path: a home made anew at the same path"),
    "plughost.plugins.channels.pipeline": (("_KEYED",), _clear,
                                           "(home, account, channel, sender) → keyed conversation id, once found"),
    "plughost.plugins.memory.surfacing.recall": (("_CACHE",), _clear,
                              "decisions files by mtime: two writes within one clock tick look unchanged"),
}
"""Per-process state in host/ and plugins/ that changes what a later run prints, writes or reads:
module → (names, how to reset them, why). A module not imported yet has nothing to reset.
tests/host/test_cli_inprocess.py keeps this table and :data:`PROCESS_STATE_KEPT` complete."""

PROCESS_STATE_KEPT: dict[str, tuple[tuple[str, ...], str]] = {
    "plughost.runtime.manifest": (("_LOADER",), "the YAML loader class: built from no input"),
    "plughost.util.redact": (("secret_name", "_deep_values"),
                             "pure functions memoised: a secret name's verdict, a quote's compiled pattern"),
    "plughost.plugins.graph.common": (("_GOOD_KEYS", "_GOOD_NAMES", "iso"),
                                      "names already checked against a fixed rule; a pure time-to-text conversion, memoised"),
    "plughost.plugins.graph.sqlite_store.nodes": (("labels_of",), "a pure parse of a labels JSON text, memoised"),
    "plughost.plugins.channels.language": (("_IDENTIFIER",), "the language model, loaded once; its `op=lang-unavailable` "
                                  "line is said once per process, and the suite never uninstalls py3langid"),
    "plughost.plugins.memory.collections.sync": (("_FORKED",), "set only while parse workers fork, None again after"),
    "plughost.plugins.graph.analysis": (("_analysers",), "in-memory SQLite connections that only tokenise text "
                                        "(FTS5's tokenizers): they hold no data of any run"),
}
"""Per-process state that a later run may share: why it cannot change what a run does."""


def reset_module_state() -> None:
    for module_name, (names, reset, _why) in MODULE_STATE.items():
        module = sys.modules.get(module_name)
        if module is not None:
            reset(module, *names)


class _Captured(io.BytesIO):
    """A stream's bytes, kept when the CLI closes the stream."""

    def close(self) -> None:
        self.kept = self.getvalue()
        super().close()

    def value(self) -> bytes:
        return self.getvalue() if not self.closed else self.kept


def _text(data: bytes) -> str:
    """Bytes read as ``subprocess.run(text=True)`` reads them (universal newlines)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None).read()


def _children() -> set[int]:
    """Running child processes of this process (Linux ``/proc``; empty elsewhere)."""
    me, found = os.getpid(), set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(me) and fields[0] not in ("Z", "X"):
            found.add(int(entry))
    return found


@contextlib.contextmanager
def _logging_as_fresh() -> Iterator[None]:
    """The logging tree as a fresh interpreter has it during the run, as it was after."""
    manager = logging.Logger.manager
    root = logging.getLogger()
    saved = {name: (lg.level, list(lg.handlers), lg.propagate, lg.disabled)
             for name, lg in list(manager.loggerDict.items()) if isinstance(lg, logging.Logger)}
    root_saved = (root.level, list(root.handlers), manager.disable)
    root.handlers, root.level = [], logging.WARNING
    manager.disable = 0
    manager._clear_cache()  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for name, lg in list(manager.loggerDict.items()):
            if not isinstance(lg, logging.Logger):
                continue
            level, handlers, propagate, disabled = saved.get(name, (logging.NOTSET, [], True, False))
            for handler in lg.handlers:
                if handler not in handlers:
                    handler.close()
            lg.level, lg.handlers, lg.propagate, lg.disabled = level, handlers, propagate, disabled
        for handler in root.handlers:
            if handler not in root_saved[1]:
                handler.close()
        root.level, root.handlers, manager.disable = root_saved[0], root_saved[1], root_saved[2]
        manager._clear_cache()  # type: ignore[attr-defined]


def _print_warning(message: warnings.WarningMessage) -> None:
    """What the interpreter does with a warning nobody records: its text on stderr."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(warnings._formatwarnmsg(message))  # type: ignore[attr-defined]


@contextlib.contextmanager
def _warnings_as_fresh() -> Iterator[None]:
    """The interpreter's own warning filters and printer (pytest records warnings in a test);
    the filters' version moves on, so a warning shown once per process shows again."""
    with warnings.catch_warnings():
        warnings.filters[:] = _STARTUP_FILTERS
        warnings._filters_mutated()  # type: ignore[attr-defined]
        warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]
        warnings._showwarnmsg_impl = _print_warning  # type: ignore[attr-defined]
        yield


@contextlib.contextmanager
def _process_state(env: Mapping[str, str], argv: list[str], cwd: Path | str | None,
                   stdin: bytes) -> Iterator[tuple[_Captured, _Captured]]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_argv, saved_path = sys.argv, list(sys.path)
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_gc = gc.isenabled()
    saved_signals = {sig: signal.getsignal(sig) for sig in signal.valid_signals()
                     if sig not in (signal.SIGKILL, signal.SIGSTOP)}
    saved_tempdir = tempfile.tempdir
    saved_ext = {name: module for name, module in sys.modules.items() if name.startswith("plughost_ext_")}
    out, err = _Captured(), _Captured()
    try:
        os.environ.clear()
        os.environ.update(env)
        if os.environ.get("TZ") != saved_env.get("TZ"):
            time.tzset()
        tempfile.tempdir = None  # re-read TMPDIR / TEMP / TMP from this run's environment
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = argv
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True)
        sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
        os._exit = _exit_in_process
        with _logging_as_fresh(), _warnings_as_fresh():
            yield out, err
    finally:
        os._exit = _REAL_EXIT
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(ValueError, OSError):
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        if os.environ.get("TZ") != env.get("TZ"):
            time.tzset()
        tempfile.tempdir = saved_tempdir
        for sig, handler in saved_signals.items():
            if signal.getsignal(sig) is not handler and handler is not None:
                with contextlib.suppress(OSError, ValueError):
                    signal.signal(sig, handler)
        (gc.enable if saved_gc else gc.disable)()
        for name in [name for name in sys.modules if name.startswith("plughost_ext_")]:
            del sys.modules[name]
        sys.modules.update(saved_ext)  # the test's own plugin-folder imports, as they were


def _exit_code(exc: SystemExit, stderr: Any) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=stderr)
    return 1


def _check_nothing_left(threads: set[threading.Thread], children: set[int], argv: Sequence[str]) -> None:
    deadline = time.monotonic() + LEFTOVER_GRACE
    while True:
        alive = [t for t in threading.enumerate() if t not in threads and t.is_alive()]
        running = _children() - children
        if not alive and not running:
            return
        if time.monotonic() >= deadline:
            break
        for t in alive:
            t.join(timeout=0.05)
        if running:
            time.sleep(0.05)
    for pid in running:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    left = [f"thread {t.name!r}" for t in alive] + [f"child process {pid}" for pid in sorted(running)]
    raise LeftBehind(f"plughost {' '.join(argv)} (in process) left {', '.join(left)} running "
                     f"{LEFTOVER_GRACE:.0f} s after it returned")


def run_in_process(args: Sequence[str], env: Mapping[str, str], *, input: str | None = None,
                   cwd: Path | str | None = None) -> subprocess.CompletedProcess[str]:
    """``plughost *args`` as ``python -m plughost.cli`` would run it with environment ``env``
    (the whole environment, not additions), stdin ``input`` and working directory ``cwd``."""
    changed = [k for k in PROCESS_ONLY_ENV if env.get(k) != os.environ.get(k)]
    if changed:
        raise ValueError(f"an in-process plughost cannot honour {', '.join(changed)}: use run_cli_process")
    import plughost.cli.main

    argv = [str(a) for a in args]
    with _LOCK:
        threads, children = set(threading.enumerate()), _children()
        reset_module_state()
        try:
            with _process_state(env, [plughost.cli.main.__file__, *argv], cwd, (input or "").encode("utf-8")) as (out, err):
                try:
                    code = contextvars.copy_context().run(plughost.cli.main.main, argv)
                except SystemExit as exc:
                    code = _exit_code(exc, sys.stderr)
                except _ProcessExit as exc:
                    code = exc.code
                except Exception:  # what the interpreter prints for an uncaught exception (a test's
                    # own outcome exceptions, e.g. pytest-timeout's, still end the test)
                    traceback.print_exc(file=sys.stderr)
                    code = 1
        finally:
            reset_module_state()
        _check_nothing_left(threads, children, argv)
    return subprocess.CompletedProcess([sys.executable, "-m", "plughost.cli", *argv], int(code or 0) & 0xFF,
                                       _text(out.value()), _text(err.value()))
