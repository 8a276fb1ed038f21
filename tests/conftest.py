"""Shared fixtures: an isolated PLUGHOST_HOME per test, host builders, external tool lookup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import tests.backends  # noqa: F401  (captures NEO4J_* before any test clears them)

os.environ[tests.backends.STASH] = json.dumps(tests.backends.RUN_ENV)
for _var in [v for v in os.environ if v.startswith("NEO4J_") or v == "PLUGHOST_STORE"]:
    del os.environ[_var]  # a test reaches the shared Neo4j server only by asking (tests.backends.neo4j_env):
    # a module fixture built from the process environment would otherwise write there unasked

REPO = Path(__file__).resolve().parent.parent
# The suite writes nothing into the checkout or its .venv: hypothesis keeps its example database
# (and caches) in the user's cache, not in ./.hypothesis.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY",
                      str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "plughost" / "hypothesis"))
TOOLS = Path(os.environ.get("PLUGHOST_TOOLS_DIR", REPO / ".tools"))
REQUIRE_EXTERNAL = os.environ.get("PLUGHOST_REQUIRE_EXTERNAL") == "1"
PACKAGE_FOLDERS = {"host": "plughost", "plugins": "plughost.plugins"}
"""The checkout's folders and the import names they install as (setup.py)."""


def module_name(path: Path) -> str:
    """The import name of a source file of the checkout: `host/util/log.py` is `plughost.util.log`."""
    top, *rest = path.resolve().relative_to(REPO).with_suffix("").parts
    return ".".join([PACKAGE_FOLDERS[top], *rest]).removesuffix(".__init__")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        reason = str(report.longrepr) if report.skipped else ""
        tests.backends.record(report.nodeid, report.outcome, reason)
        for what in MISSING_HINTS:
            if report.skipped and f"{what} not installed" in reason:
                MISSING[what] = MISSING.get(what, 0) + 1


MISSING_HINTS = {
    "chromium": "the page tests; `bash scripts/ci-system-deps.sh` installs Debian's chromium (root)",
    "external tool": "the validators; `bash scripts/install-tools.sh` (scripts/test.sh runs it)",
    "local embedder": "`bash scripts/setup.sh` installs the embed extra",
}
"""What a local run may lack and skip for (CI fails instead, PLUGHOST_REQUIRE_EXTERNAL=1), and how to get it."""
MISSING: dict[str, int] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Without NEO4J_URI (and outside CI) every Neo4j test skips, before any fixture of it runs; the
    summary's ``[backends]`` line counts them and says how to run them."""
    if not tests.backends.RUN_NEO4J:
        skip = pytest.mark.skip(reason=tests.backends.SKIP_REASON)
        for item in items:
            if tests.backends.is_neo4j(item.nodeid):
                item.add_marker(skip)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under pytest-xdist (``scripts/test.sh`` runs ``--dist loadgroup``) the tests of one Neo4j
    server run on one worker: they wipe and reuse fixed account ids on its one database (with a
    server per worker, each file's Neo4j tests are a group of their own: tests.backends.SERVERS).
    The tests sharing a module-scoped fixture of their module run on one worker too, so its setup
    (a bundle, a pip install, a served process, a Node run) is paid once, not once per worker."""
    explicit = item.get_closest_marker("xdist_group")
    if "neo4j" in item.nodeid.lower() or (explicit is not None and explicit.args[:1] == ("neo4j",)):
        item.add_marker(pytest.mark.xdist_group(tests.backends.xdist_group(item.nodeid)))
    elif item.get_closest_marker("xdist_group") is None and _shares_a_module_fixture(item):
        item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    module = item.nodeid.split("::", 1)[0]
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name) or ()
        if defs and defs[-1].scope in ("module", "class") and defs[-1].baseid == module:
            return True
    return False


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 — pytest's reporter
    for line in tests.backends.summary_lines():
        terminalreporter.write_line(line)
    if MISSING:
        terminalreporter.write_line("[external] skipped=" + str(sum(MISSING.values())) + ": " + "; ".join(
            f"{what} not installed ({n}): {MISSING_HINTS[what]}" for what, n in MISSING.items()))


@pytest.fixture(autouse=True)
def plughost_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own data root; logs never leak into ~/.plughost."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("PLUGHOST_HOME", str(home))
    for var in ("PLUGHOST_DISABLE_PLUGINS", "PLUGHOST_LOAD_PLUGINS", "PLUGHOST_NO_EXTERNAL_PLUGINS",
                "PLUGHOST_TRACE_HOOKS", "PLUGHOST_PLUGINS_DIR", "PLUGHOST_PREMIUM_DIR", "ACCOUNT_ID",
                "ALLOWED_SCOPES", "AGENT_SLUG", "SESSION_ID", "NEO4J_URI", "PLUGHOST_STORE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PLUGHOST_EMBEDDER", os.environ.get("PLUGHOST_TEST_EMBEDDER", "none"))
    monkeypatch.setenv("PLUGHOST_AUDIT_MCP", "0")  # served-call audit nodes would skew node counts; tests/plugins/memory/toolcalls turns it on
    return home


@pytest.fixture
def make_host(plughost_home: Path):
    """Build a loaded Host with an explicit env (defaults to the test's environment)."""
    from plughost.runtime.host import Host

    made = []

    def build(plugins_dir: Path | None = None, premium_dir: Path | None = None, entry_points: bool = True,
              **env: str) -> Host:
        full = dict(os.environ)
        full.update(env)
        host = Host(plugins_dir=plugins_dir, premium_dir=premium_dir, env=full, entry_points=entry_points).load()
        made.append(host)
        return host

    yield build
    for host in made:
        host.close()


def ensure_account(env: dict[str, str] | None = None) -> None:
    """Create the account ``ACCOUNT_ID`` names under ``PLUGHOST_HOME`` when it is missing: commands
    aimed at an account refuse one that does not exist (the account-less cases test that)."""
    env = dict(os.environ) if env is None else env
    account, home = env.get("ACCOUNT_ID", "").strip(), env.get("PLUGHOST_HOME")
    if account and home and not (Path(home) / "accounts" / account / "account.json").is_file():
        from plughost.runtime.accounts import create_account

        create_account(account, Path(home))


def _cli_env(args: tuple[str, ...], env: dict[str, str] | None) -> dict[str, str]:
    full = dict(os.environ)
    full.update(env or {})
    if args and args[0] not in ("account", "demo") and os.environ.get("PLUGHOST_TEST_NO_ACCOUNT") != "1":
        ensure_account(full)
    return full


def run_cli(*args: str, env: dict[str, str] | None = None, input: str | None = None,
            timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`plughost ...` in this process (``plughost.cli.main``), isolated as a process would be
    (tests/support/cli_support.py): the same exit code, stdout and stderr, without the ~1.4 s
    interpreter start. ``env`` is added to the test's environment. ``timeout`` is a process's:
    in process, pytest-timeout bounds the run."""
    from cli_support import run_in_process

    return run_in_process(args, _cli_env(args, env), input=input, cwd=cwd)


def run_cli_process(*args: str, env: dict[str, str] | None = None, input: str | None = None,
                    timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m plughost.cli ...` in a real subprocess (the console script's code path): for
    what only a process shows (interpreter start, signals, stdio servers, PYTHONPATH)."""
    return subprocess.run([sys.executable, "-m", "plughost.cli", *args], capture_output=True, text=True,
                          env=_cli_env(args, env), input=input, timeout=timeout, cwd=cwd)


def node_tool(*parts: str) -> Path:
    """Path to an installed Node tool under .tools/; skip (or fail under CI) when missing."""
    path = TOOLS.joinpath("node_modules", *parts)
    if not path.exists():
        if REQUIRE_EXTERNAL:
            pytest.fail(f"required external tool missing: {path} (run scripts/install-tools.sh)")
        pytest.skip(f"external tool not installed: {path}")
    return path


def npx_bin(name: str) -> Path:
    return node_tool(".bin", name)


@pytest.fixture
def cli() -> object:
    """``cli("plugins", "list", env={...})``: :func:`run_cli`, the in-process ``plughost``."""
    return run_cli


@pytest.fixture
def cli_process() -> object:
    """:func:`run_cli_process`: ``plughost`` in a real ``python -m plughost.cli`` process."""
    return run_cli_process


def which_or_skip(name: str) -> str:
    found = shutil.which(name)
    if not found:
        if REQUIRE_EXTERNAL:
            pytest.fail(f"required program missing: {name}")
        pytest.skip(f"{name} not installed")
    return found


@pytest.fixture
def tmp_tree(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


def require_local_model() -> None:
    """Skip without the packaged MiniLM model (fail under ``PLUGHOST_REQUIRE_EXTERNAL=1``, as in CI)."""
    try:
        from plughost.plugins.memory.embedding.local import check_available

        check_available()
    except Exception as exc:
        if os.environ.get("PLUGHOST_REQUIRE_EXTERNAL") == "1":
            pytest.fail(f"local embedder required: {exc}")
        pytest.skip(f"local embedder not installed: {exc}")
