"""Fixtures for manifest generation, bundling and installing: payload builders, tree snapshots,
and a runner for the real Claude Code CLI in throwaway config dirs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, npx_bin, run_cli

EXAMPLES = REPO / "examples" / "premium"
BUILTIN = REPO / "plugins"


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` with its bytes and mtime (ns): equal snapshots mean nothing was written."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            out[path.relative_to(root).as_posix()] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


def copy_plugin(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", ".claude-plugin"))
    return dest


def write_plugin(folder: Path, frontmatter: str, *, server: bool = False) -> Path:
    """A minimal plugin folder: PLUGIN.md with the given frontmatter, optionally mcp/__main__.py."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "PLUGIN.md").write_text(f"---\n{frontmatter.strip()}\n---\n# doc\n", encoding="utf-8")
    if server:
        (folder / "mcp").mkdir(exist_ok=True)
        (folder / "mcp" / "__main__.py").write_text("print('server')\n", encoding="utf-8")
    return folder


def bundle(brand: str, out: Path, *extra: str, premium: Path | None = EXAMPLES) -> subprocess.CompletedProcess[str]:
    args = ["bundle", brand, "--out", str(out)]
    if premium is not None:
        args += ["--premium-dir", str(premium)]
    return run_cli(*args, *extra)


@pytest.fixture
def example_payload(tmp_path: Path) -> Path:
    """A payload tree (not yet generated): the built-in plugins plus the example premium bundles."""
    root = tmp_path / "payload"
    (root / "plugins").mkdir(parents=True)
    for folder in sorted(BUILTIN.iterdir()):
        if (folder / "PLUGIN.md").is_file():
            copy_plugin(folder, root / "plugins" / folder.name)
    shutil.copytree(EXAMPLES, root / "premium-plugins", ignore=shutil.ignore_patterns("__pycache__", ".claude-plugin"))
    return root


class Claude:
    """The real Claude Code CLI as a user's machine starts it (docs/testing.md#external-checks): `env -i` with
    only `PATH=/usr/bin:/bin`, a throwaway HOME/config dir/temp dir, run from `/tmp`. No virtualenv,
    no `PLATFORM_ROOT`, no `PLUGHOST_*`: whatever a server needs must come from the install."""

    def __init__(self, base: Path, plughost_home: Path | None = None) -> None:
        self.bin = str(npx_bin("claude"))
        self.config = base / "claude-config"
        for sub in ("claude-config", "home", "tmp"):
            (base / sub).mkdir(parents=True, exist_ok=True)
        self.env = {
            "PATH": "/usr/bin:/bin", "HOME": str(base / "home"), "CLAUDE_CONFIG_DIR": str(self.config),
            "CLAUDE_CODE_TMPDIR": str(base / "tmp"), "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }

    def __call__(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.bin, *args], capture_output=True, text=True, env=self.env, timeout=timeout,
                              cwd="/tmp")


def connected_servers(mcp_list_output: str) -> dict[str, bool]:
    """``plugin:<plugin>:<server>: <command> - ✔ Connected`` lines → {"<plugin>:<server>": connected}."""
    out = {}
    for line in mcp_list_output.splitlines():
        if line.startswith("plugin:") and " - " in line:
            head = line.split(": ", 1)[0][len("plugin:"):]
            out[head] = line.rstrip().endswith("✔ Connected")
    return out


__all__ = ["EXAMPLES", "BUILTIN", "Claude", "bundle", "connected_servers", "copy_plugin", "snapshot",
           "write_plugin", "run_cli"]
