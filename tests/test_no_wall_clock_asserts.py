"""No test asserts a wall-clock time: a bound on how long something took fails on a slow but
correct machine (a loaded CI runner, two workers on two cores). What a timing guards is kept as
behaviour (the result, the order, that it finished, a count of operations); the figure itself
lives in a ``bench/`` script, against a floor measured in the same run (docs/testing.md).

This scans every test module with ``ast`` for an ``assert`` that orders (``<``, ``<=``, ``>``,
``>=``) a measured duration: ``clock() - start`` (``time.monotonic``, ``perf_counter``,
``time.time`` and their ``_ns`` forms), a name assigned from one (or from a helper returning
one), or a name that says it is a duration (``took``, ``elapsed``, ``*_s``, ``*_ms``, ...).
A deadline (``while time.monotonic() < deadline``, ``assert time.monotonic() < deadline, "hung"``)
bounds a wait, not the code's speed, and is not a measurement.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}
DURATION_NAME = re.compile(r"^(took|seconds|secs|elapsed\w*|duration\w*|latency\w*|\w+_(s|ms|secs|seconds))$")
NUMERIC = {"round", "abs", "max", "min", "sum", "float", "int"}
ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _is_clock(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in CLOCKS and not node.args


def _has_clock(node: ast.AST) -> bool:
    return any(_is_clock(n) for n in ast.walk(node))


class _Scan:
    def __init__(self, tree: ast.Module, measuring: set[str]) -> None:
        self.tree, self.measuring, self.tainted, self.found = tree, measuring, set[str](), list[int]()

    def measures(self, node: ast.AST) -> bool:
        """``node`` contains a duration: clock() - x, a tainted name, or a call to a measuring helper."""
        for n in ast.walk(node):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and _has_clock(n.left):
                return True
            if isinstance(n, ast.Name) and (n.id in self.tainted or DURATION_NAME.match(n.id)):
                return True
            if isinstance(n, ast.Attribute) and DURATION_NAME.match(n.attr):  # run.seconds
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in self.measuring:
                return True
        return False

    def value_measures(self, node: ast.AST) -> bool:
        """An assigned value that is a duration: not any call that merely takes one (a record of it)."""
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and
                                               node.func.id in NUMERIC | self.measuring):
            return False
        return self.measures(node)

    def run(self) -> list[int]:
        nodes = list(ast.walk(self.tree))
        for _ in range(3):  # assignments feed each other; three rounds reach a fixed point here
            for n in nodes:
                if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None \
                        and self.value_measures(n.value):
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    self.tainted.update(t.id for t in targets if isinstance(t, ast.Name))
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                        and n.func.attr in ("append", "extend", "add") and isinstance(n.func.value, ast.Name) \
                        and any(self.measures(a) for a in n.args):
                    self.tainted.add(n.func.value.id)
                elif isinstance(n, ast.comprehension) and self.measures(n.iter):
                    self.tainted.update(t.id for t in ast.walk(n.target) if isinstance(t, ast.Name))
        for n in nodes:
            if isinstance(n, ast.Assert):
                for cmp in (c for c in ast.walk(n.test) if isinstance(c, ast.Compare)):
                    if any(isinstance(op, ORDER) for op in cmp.ops) and \
                            any(self.measures(side) for side in [cmp.left, *cmp.comparators]):
                        self.found.append(n.lineno)
                        break
        return self.found


def _measuring_helpers(trees: dict[Path, ast.Module]) -> set[str]:
    """Functions of the suite (tests/support too) whose return value is a duration on its own."""
    names = set()
    for tree in trees.values():
        for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            scan = _Scan(ast.Module(body=fn.body, type_ignores=[]), set())
            scan.run()
            if any(isinstance(r, ast.Return) and r.value is not None and scan.value_measures(r.value)
                   for r in ast.walk(fn)):
                names.add(fn.name)
    return names


def wall_clock_asserts(root: Path = TESTS) -> list[str]:
    trees = {p: ast.parse(p.read_text(), str(p)) for p in sorted(root.rglob("*.py"))}
    helpers = _measuring_helpers(trees)
    return [f"{p.relative_to(root.parent)}:{line}" for p, tree in trees.items() for line in _Scan(tree, helpers).run()]


def test_no_test_asserts_a_wall_clock_time() -> None:
    found = wall_clock_asserts()
    assert not found, ("these asserts bound a measured time; keep the behaviour in the test and move the "
                       "figure to bench/ (docs/testing.md#no-wall-clock-asserts):\n  " + "\n  ".join(found))


def test_the_scan_sees_the_forms_it_forbids(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "import time\n"
        "def timed():\n    t = time.perf_counter()\n    return time.perf_counter() - t\n"
        "def test_a():\n"
        "    started = time.monotonic()\n"
        "    assert time.monotonic() - started < 10\n"                        # 7
        "    took = time.monotonic() - started\n"
        "    assert 0.8 <= took <= 5, took\n"                                 # 9
        "    assert timed() < 1\n"                                            # 10
        "    per = took / 3 * 1000\n"
        "    assert per < 5\n"                                                # 12
        "    exit_s = stop()\n"
        "    assert exit_s <= 4\n"                                            # 14
        "    deadline = time.monotonic() + 30\n"
        "    assert time.monotonic() < deadline, 'hung'\n"                    # a deadline: allowed
        "    assert len([1]) < 5 and took >= 0 or True\n"                     # 17
        "    run = record(took)\n"
        "    assert run.items < 5\n"                                         # a record holding one: not flagged
        "    assert run.seconds < 5\n"                                       # 20
        "    n = 3\n"
        "    assert n < 5\n")                                                 # not a time
    assert [s.rsplit(":", 1)[1] for s in wall_clock_asserts(tmp_path / "tests")] == ["7", "9", "10", "12", "14", "17", "20"]
