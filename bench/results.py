"""bench/RESULTS.md, written by the benches themselves: one section per bench, between its markers.

A bench run with ``--write-results`` prints as usual and then replaces its own section of
``bench/RESULTS.md`` (``<!-- bench:NAME:start -->`` ... ``<!-- bench:NAME:end -->``; the section is
appended when the file has none yet) with what it printed, headed by the command line, the date,
the machine (cores, CPU, load average at the start and at the end) and, where the bench measures
a floor, what that floor is and on how many threads and which kernels it ran. Without the flag
nothing is written, so a test or CI run of a bench leaves the file alone. A run that fails (an
exception, a non-zero exit) writes nothing either.

A bench wires itself in with two calls::

    results.add_flag(parser)                                   # in main(): --write-results in --help
    raise SystemExit(results.run("boot", main))                # under if __name__ == "__main__"

and, when it knows its floor, ``results.floor("bare numpy matmul, " + results.numpy_kernels())``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import os
import platform
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

RESULTS = Path(__file__).resolve().with_name("RESULTS.md")
FLAG = "--write-results"
REPO = Path(__file__).resolve().parent.parent
HEADER = ("# Benchmark results\n\n"
          "Written by the benches in `bench/`: `python bench/NAME.py ... --write-results` replaces its own\n"
          "section below (between its `bench:NAME` markers) with the figures it printed, the command, the\n"
          "date and the machine. Text outside the markers is kept as it is.\n")

_floor: list[str] = []


def add_flag(parser: Any) -> None:
    """``--write-results`` in the bench's ``--help`` (:func:`run` takes it off the command line)."""
    parser.add_argument(FLAG, action="store_true",
                        help="also write this run's figures into bench/RESULTS.md (its own section)")


def markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"


def floor(text: str) -> None:
    """Say what this run's floor is (and its threads / kernels); the section's header names it."""
    _floor.append(text)


def numpy_kernels() -> str:
    """numpy's BLAS (name, version, build configuration), the SIMD extensions it found, and the
    thread settings a numpy floor runs with."""
    try:
        import numpy

        config = numpy.show_config(mode="dicts") or {}
        blas = (config.get("Build Dependencies") or {}).get("blas") or {}
        simd = (config.get("SIMD Extensions") or {}).get("found") or []
        name = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
        build = " ".join(str(blas.get("openblas configuration") or "").split())
        kernels = f"numpy {numpy.__version__}, BLAS {name}" + (f" ({build})" if build else "")
        if simd:
            kernels += f", SIMD {','.join(simd)}"
    except Exception as exc:  # a figure is still a figure without its kernel line
        kernels = f"numpy kernels unknown ({type(exc).__name__})"
    threads = ", ".join(f"{k}={os.environ[k]}" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                          "PLUGHOST_VECTOR_THREADS") if os.environ.get(k))
    return kernels + f"; threads: {threads or 'library defaults'}; {blas_pools()}"


def blas_pools() -> str:
    """The BLAS thread pools numpy runs on now, as threadpoolctl finds them loaded: library,
    kernel (architecture), threads. Call it after numpy is imported (and used)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "BLAS pools unknown (threadpoolctl not installed)"
    pools = [f"{p.get('internal_api')} {p.get('version') or ''} kernel {p.get('architecture') or '?'}, "
             f"{p.get('num_threads')} threads ({p.get('threading_layer') or p.get('user_api')})"
             for p in threadpool_info()]
    return "BLAS pools: " + ("; ".join(pools) or "none loaded")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def command_line(argv: list[str] | None = None) -> str:
    """The command as run, from the checkout (``python bench/NAME.py ...``), without the flag."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0]).resolve() if argv else Path("bench")
    with contextlib.suppress(ValueError):
        script = script.relative_to(REPO)
    rest = [a for a in argv[1:] if a != FLAG]
    return " ".join(["python", shlex.quote(str(script)), *map(shlex.quote, rest)])


def section(name: str, body: str, *, command: str, when: _dt.datetime, load_start: str, load_end: str,
            floors: list[str]) -> str:
    """One bench's section: the markers, a heading, the run's header lines, and its output."""
    start, end = markers(name)
    lines = [start, f"## {name}", "",
             f"- command: `{command}`",
             f"- date: {when.strftime('%Y-%m-%d %H:%M')} UTC",
             f"- machine: {os.cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}, "
             f"{platform.system()} {platform.release()}",
             f"- load average (1 / 5 / 15 min): {load_start} at the start, {load_end} at the end"]
    lines += [f"- floor: {f}" for f in floors]
    text = body.rstrip("\n").replace("```", "'''")
    lines += ["", "```text", text, "```", end]
    return "\n".join(lines) + "\n"


def replace_section(text: str, name: str, block: str) -> str:
    """``text`` with the section ``name`` replaced by ``block`` (appended when it has none)."""
    start, end = markers(name)
    i = text.find(start)
    j = text.find(end, i + len(start)) if i >= 0 else -1
    if i >= 0 and j >= 0:
        return text[:i] + block.rstrip("\n") + text[j + len(end):]
    if not text.strip():
        text = HEADER
    return text.rstrip("\n") + "\n\n" + block


def write_section(name: str, body: str, *, command: str | None = None, floors: list[str] | None = None,
                  load_start: str | None = None, when: _dt.datetime | None = None, path: Path = RESULTS) -> Path:
    """Replace (or add) the section of bench ``name`` in ``path`` with ``body`` and the run's header."""
    when = when or _dt.datetime.now(_dt.UTC)
    block = section(name, body, command=command or command_line(), when=when,
                    load_start=load_start or load_average(), load_end=load_average(), floors=list(floors or []))
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    new = replace_section(old, name, block)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(path)
    return path


class _Tee(io.TextIOBase):
    """stdout as it was, and a copy of everything written to it."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()

    def isatty(self) -> bool:
        return self.out.isatty()

    @property
    def encoding(self) -> str:
        return getattr(self.out, "encoding", "utf-8")


@contextlib.contextmanager
def _captured() -> Iterator[_Tee]:
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        yield tee
    finally:
        sys.stdout = tee.out


def run(name: str, main: Callable[[], Any], *, path: Path = RESULTS) -> Any:
    """Run a bench's ``main()``; with ``--write-results`` on the command line, its printed output
    becomes section ``name`` of ``bench/RESULTS.md`` once it returns 0 (or None). Returns what
    ``main`` returned, for ``SystemExit``."""
    if FLAG not in sys.argv[1:]:
        return main()
    command = command_line()
    sys.argv = [a for a in sys.argv if a != FLAG]
    when, load_start = _dt.datetime.now(_dt.UTC), load_average()
    _floor.clear()
    with _captured() as tee:
        code = main()
    if code not in (None, 0):
        print(f"bench exited {code}: {path.name} left as it was", file=sys.stderr)
        return code
    write_section(name, tee.copy.getvalue(), command=command, floors=list(_floor), load_start=load_start,
                  when=when, path=path)
    print(f"wrote section '{name}' of {path}", file=sys.stderr)
    return code
