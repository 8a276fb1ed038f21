"""plughost installed as a user installs it (/work/shared/REAL-CHECKS.md "Installed as a user installs
it"): the project's wheel, built once, `pip install`ed into a fresh virtualenv in a temporary
folder with no checkout, every command run from there with `PATH=<venv>/bin:/usr/bin:/bin` and
nothing of the checkout on `PYTHONPATH`. Beside it, two third-party plugins that are their own
distributions: `fixtures/plughost-weather` (written by hand, no PLUGIN.md, a tool, a CLI command
and a boot gate, importing only `plughost`) and the `plughost plugin new --package` scaffold.

The sdist is built into a wheel the way `pip install` builds it, and must hold the same files. The venvs'
dependencies come from PyPI through pip's cache: each venv takes about a minute, once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from run_support import ask

from tests.conftest import REPO, npx_bin
from tests.host.manifests.conftest import Claude, connected_servers

pytestmark = pytest.mark.e2e

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "plughost-weather"


class Venv:
    """The fresh virtualenv and how a user's shell runs its commands."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "venv" / "bin"
        self.python = self.bin / "python"
        self.version = ""

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        return {"PATH": f"{self.bin}:/usr/bin:/bin", "HOME": str(home), "PLUGHOST_HOME": str(home / "data"),
                "PLUGHOST_EMBEDDER": "none", "LANG": "C.UTF-8", **extra}

    def run(self, *args: str, home: Path, cwd: Path, timeout: float = 180, **extra: str
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=cwd, env=self.env(home, **extra), capture_output=True, text=True,
                              timeout=timeout)

    def plughost(self, *args: str, home: Path, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
        result = self.run("plughost", *args, home=home, cwd=cwd, **extra)
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        return result


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.args, result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout


def _pip_wheel(source: Path | str, dist: Path) -> Path:
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(dist)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = dist.glob("plughost-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's wheel, built once for the module."""
    return _pip_wheel(REPO, tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Venv:
    root = tmp_path_factory.mktemp("installed")
    assert not root.resolve().is_relative_to(REPO)
    weather = shutil.copytree(FIXTURE, root / "plughost-weather")  # built there, so the checkout stays clean
    v = _fresh_venv(root, wheel, weather)
    v.version = wheel.name.split("-")[1]
    home = root / "setup-home"
    # the scaffold of a plugin distribution, made by the installed plughost and installed as generated
    _ok(v.plughost("plugin", "new", "shop-hours", "--package", "--dir", str(root / "src"), home=home, cwd=root))
    _ok(v.run(str(v.python), "-m", "pip", "install", "-q", "--no-compile", str(root / "src" / "shop-hours"),
              home=home, cwd=root,
              timeout=900, **PIP_CACHE))
    return v


PIP_CACHE = {"PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))}


def _fresh_venv(root: Path, *requirements: Path) -> Venv:
    """A new virtualenv (not --system-site-packages) at ``root/venv`` with ``requirements`` pip-installed."""
    made = subprocess.run([sys.executable, "-c", "import sys, venv; venv.create(sys.argv[1], with_pip=True)",
                           str(root / "venv")], capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin"})
    assert made.returncode == 0, made.stderr
    v = Venv(root)
    # --no-compile: Python compiles what the commands import as they run; compiling all of the
    # dependencies up front is most of an install's time and tests nothing of plughost's.
    _ok(v.run(str(v.python), "-m", "pip", "install", "-q", "--no-compile", *map(str, requirements),
              home=root / "setup-home", cwd=root, timeout=900, **PIP_CACHE))
    return v


def _top_levels(v: Venv, home: Path) -> set[str]:
    """The top-level names `pip show -f plughost` lists (the console script's ../../../bin aside)."""
    shown = _ok(v.run("pip", "show", "-f", "plughost", home=home, cwd=home))
    files = [line.strip() for line in shown.split("\nFiles:\n", 1)[1].splitlines() if line.startswith("  ")]
    return {f.split("/", 1)[0] for f in files if not f.startswith("..")}


def test_the_wheel_claims_only_the_plughost_package(venv: Venv, tmp_path: Path) -> None:
    tops = _top_levels(venv, tmp_path)
    assert {t for t in tops if not t.endswith(".dist-info")} == {"plughost"}, tops
    assert [t for t in tops if t.endswith(".dist-info")] == [f"plughost-{venv.version}.dist-info"], tops
    found = _ok(venv.run("python", "-c", "import plughost, sys; print(plughost.__file__); print(sys.path)",
                         home=tmp_path, cwd=tmp_path))
    assert str(REPO) not in found and str(venv.root) in found.splitlines()[0]


def test_the_main_job_runs_and_the_webchat_answers(venv: Venv, tmp_path: Path) -> None:
    home, work = tmp_path, tmp_path / "work"
    work.mkdir()
    ph = lambda *a, **kw: venv.plughost(*a, home=home, cwd=work, **kw)  # noqa: E731
    _ok(ph("account", "create", "demo"))
    _ok(ph("demo", ACCOUNT_ID="demo"))
    bundled = _ok(ph("bundle", "bakery", "--out", str(work / "payload")))
    assert "entry-points=[shop-hours,weather]" in bundled and "left out" not in bundled, bundled
    config = home / "claude-config"
    _ok(ph("install", str(work / "payload"), "--config-dir", str(config), "--account", "demo"))
    agent = home / "data" / "accounts" / "demo" / "agents" / "shopfront"  # the brand's public agent, from package data
    assert (agent / "IDENTITY.md").is_file() and (agent / "KNOWLEDGE.md").is_file()
    boot = _ok(ph("boot", "--check"))
    assert "weather-ready: 2 forecasts" in boot + ph("boot", "--check").stderr
    doctor = _ok(ph("doctor", "--config-dir", str(config)))
    ok = {line.split()[2] for line in doctor.splitlines() if line.startswith("[doctor] ok ")}
    assert len(ok) >= 5, doctor

    (work / "prices.md").write_text("# Prices\n\nA sourdough loaf costs 4.50 euros at Harbour Street Bakery.\n")
    _ok(ph("memory", "ingest", "prices.md", "--scope", "public", ACCOUNT_ID="demo"))
    assert "A sourdough loaf costs 4.50 euros" in (agent / "KNOWLEDGE.md").read_text()  # its keyword: bakery
    found = _ok(ph("memory", "search", "sourdough loaf price", ACCOUNT_ID="demo"))
    assert "sourdough" in found.lower(), found
    _ok(ph("graph", "export", "--out", str(work / "graph.jsonl"), ACCOUNT_ID="demo"))
    lines = (work / "graph.jsonl").read_text().splitlines()
    assert len(lines) >= 5 and all(json.loads(line) for line in lines)

    out = work / "serve.out"
    with out.open("w") as stdout, (work / "serve.err").open("w") as stderr:
        proc = subprocess.Popen(["plughost", "serve", "--host", "127.0.0.1", "--port", "0", "--config-dir",
                                 str(config), "--brand", "bakery"], cwd=work, stdout=stdout, stderr=stderr,
                                env=venv.env(home, PLUGHOST_BRAND="bakery"), start_new_session=True)
    try:
        base = None
        for _ in range(1200):
            text = out.read_text()
            if "plughost serving on " in text:
                base = text.split("plughost serving on ", 1)[1].split()[0]
                break
            assert proc.poll() is None, (work / "serve.err").read_text()[-3000:]
            time.sleep(0.1)
        assert base, (work / "serve.err").read_text()[-3000:]
        reply, _, _, _ = ask(base, "What are your opening hours?", None, 0)
        assert "Tuesday to Saturday from 7:00 to 16:00" in reply and "Source:" in reply, reply
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode in (0, -signal.SIGTERM, 143), proc.returncode


CLIENT = '''
import os, sys
import anyio
from mcp import Client, StdioServerParameters

server = StdioServerParameters(command=sys.executable, args=["-m", "plughost.cli", "mcp", "serve", sys.argv[1]],
                               env=dict(os.environ))

async def main():
    async with Client(server) as client:
        print([tool.name for tool in (await client.list_tools()).tools])
        result = await client.call_tool(sys.argv[2], {sys.argv[3]: sys.argv[4]})
        print(result.content[0].text)

anyio.run(main)
'''

BRAND = {"name": "outside", "productName": "Outside Weather Co",
         "plugins": {"excluded": ["channels"]}, "store": {"backend": "sqlite"}}
"""A brand of the test's own, outside the repo, leaving one built-in out."""


def _hello(work: Path) -> Path:
    """A plugin folder of the brand's own shaped like the README's ``hello`` (no ``mcp:`` block, a server
    file, its one tool admin-allowlisted): ``--plugins-dir``."""
    mine = work / "my-plugins"
    shutil.copytree(REPO / "examples" / "hello", mine / "hello", ignore=shutil.ignore_patterns("__pycache__"))
    md = mine / "hello" / "PLUGIN.md"
    text = md.read_text()
    assert "mcp:" not in text
    md.write_text(text.replace('    description: "Greet someone by name."\n',
                               '    description: "Greet someone by name."\n    adminAllowlist: true\n', 1))
    return mine


def _third_party_payload(venv: Venv, home: Path, work: Path, config: Path) -> Path:
    (work / "outside.json").write_text(json.dumps(BRAND))
    bundled = _ok(venv.plughost("--plugins-dir", str(_hello(work)), "bundle", str(work / "outside.json"), "--out",
                                str(work / "payload"), home=home, cwd=work))
    assert "entry-points=[shop-hours,weather]" in bundled and "left out" not in bundled, bundled
    assert "excluded=[channels]" in bundled, bundled
    _ok(venv.plughost("account", "create", "acme", home=home, cwd=work))
    return _install(venv, home, work, work / "payload", config)


def _install(venv: Venv, home: Path, work: Path, payload: Path, config: Path) -> Path:
    _ok(venv.plughost("install", str(payload), "--config-dir", str(config), "--account", "acme",
                      home=home, cwd=work))
    boot = venv.plughost("boot", "--check", home=home, cwd=home)  # no flag, another folder: the install's record
    assert boot.returncode == 0 and "failed=0 warned=0 errored=0 exit=0" in boot.stderr, boot.stderr[-3000:]
    assert "[install-brand] op=resolved brand=outside source=payload" in boot.stderr, boot.stderr[-3000:]
    return payload


def test_third_party_distributions_are_found_served_run_bundled_and_boot(venv: Venv, tmp_path: Path) -> None:
    home, work = tmp_path, tmp_path / "work"
    work.mkdir()
    listed = json.loads(_ok(venv.plughost("plugins", "list", "--json", home=home, cwd=work)))["plugins"]
    plugins = {p["name"]: p for p in listed}
    assert {n: (plugins[n]["status"], plugins[n]["source"], plugins[n]["tools"]) for n in ("weather", "shop-hours")} == {
        "weather": ("loaded", "entry-point", ["forecast"]),
        "shop-hours": ("loaded", "entry-point", ["shop-hours-greet"])}

    (work / "client.py").write_text(CLIENT)  # a real MCP client over stdio, with the install's Python
    served = _ok(venv.run("python", "client.py", "weather", "forecast", "city", "Lisbon", home=home, cwd=work))
    assert served.splitlines() == ["['forecast']", "Lisbon: sunny, 24 °C"], served
    served = _ok(venv.run("python", "client.py", "shop-hours", "shop-hours-greet", "name", "Ada", home=home,
                          cwd=work))
    assert served.splitlines() == ["['shop-hours-greet']", "Hello, Ada, from shop-hours."], served

    assert _ok(venv.plughost("weather-report", "Oslo", home=home, cwd=work)) == "weather-report Oslo: snow, -3 °C\n"

    site = _ok(venv.run("python", "-c", "import plughost_shop_hours as m, os; print(os.path.dirname(m.__file__))",
                        home=home, cwd=work)).strip()
    _ok(venv.plughost("manifests", "check", site, home=home, cwd=work))  # the scaffold's PLUGIN.md, as installed

    payload = _third_party_payload(venv, home, work, home / "claude-config")
    generated = (payload / "plugins" / "weather" / "PLUGIN.md").read_text()
    assert "python: plughost_weather.plugin" in generated and "name: forecast" in generated
    boot = venv.plughost("boot", "--check", home=home, cwd=work, ACCOUNT_ID="acme")
    assert boot.returncode == 0 and "weather-ready: 2 forecasts" in boot.stdout + boot.stderr, boot.stderr[-3000:]


@pytest.mark.external
def test_claude_code_connects_their_servers_and_validates_their_plugins(venv: Venv, tmp_path: Path) -> None:
    npx_bin("claude")
    home, work = tmp_path / "user", tmp_path / "work"
    work.mkdir()
    claude = Claude(tmp_path / "claude")
    payload = _third_party_payload(venv, home, work, claude.config)
    # every server the brand ships Connected (channels left out by the brand), before and after the payload moves
    # (then installed again from where it is), each target valid for the CLI, under env -i from /tmp
    servers = {f"{n}:{n}": True for n in ("admin", "graph", "hello", "memory", "shop-hours", "weather")}
    for moved in (False, True):
        if moved:
            payload = _install(venv, home, work, payload.rename(tmp_path / "moved-payload"), claude.config)
        listing = claude("mcp", "list")
        assert connected_servers(listing.stdout) == servers, (moved, listing.stdout)
        assert str(venv.bin) in listing.stdout and str(payload) in listing.stdout  # the install's Python
        targets = [payload / "plugins", *(p for p in sorted((payload / "plugins").iterdir())
                                          if (p / ".claude-plugin").is_dir())]
        assert len(targets) == 7, targets  # the marketplace and its six plugins
        for target in targets:
            checked = claude("plugin", "validate", "--strict", str(target))
            assert checked.returncode == 0 and "✔ Validation passed" in checked.stdout, checked.stdout + checked.stderr
            assert "warning" not in checked.stdout.lower(), checked.stdout


def test_the_sdist_builds_the_same_wheel(wheel: Path, tmp_path: Path) -> None:
    """The sdist (`setup.py sdist`: no `build` module needed), built into a wheel by pip as a user's
    `pip install plughost-*.tar.gz` does, holds byte for byte the files of the checkout's wheel, so
    everything the tests above prove of the installed wheel holds of the installed sdist."""
    made = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path / "sdist")], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    [sdist] = (tmp_path / "sdist").glob("plughost-*.tar.gz")
    from_sdist = _pip_wheel(sdist, tmp_path / "dist")
    assert from_sdist.name == wheel.name
    assert _wheel_files(from_sdist) == _wheel_files(wheel)


def _wheel_files(wheel: Path) -> dict[str, str]:
    """Each file's sha256 as the wheel's RECORD lists it (RECORD itself, which lists no hash, aside)."""
    with zipfile.ZipFile(wheel) as z:
        [record] = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")]
        rows = [line.split(",") for line in z.read(record).decode().splitlines() if line]
    return {name: digest for name, digest, _ in rows if digest}
