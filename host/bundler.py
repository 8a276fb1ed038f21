"""Brand bundling: assemble a payload for one brand, then generate its manifests (SPEC 5).

The payload is ``OUT/brand.json``, ``OUT/plugins/`` (the platform plugins minus the brand's
``plugins.excluded``) and ``OUT/premium-plugins/`` (only the bundles the brand allowlists in
``shipsPremiumBundles``), with every ``.claude-plugin/`` manifest generated.

Nothing is half-written: the brand, the exclusions, the premium gate and every PLUGIN.md are
checked first; the whole desired tree (copied files and generated manifests) is then planned in
memory. When ``OUT`` already holds exactly that tree nothing is written at all (a rerun is
idempotent: no byte, no mtime changes). Otherwise the payload is built in a temp folder beside
``OUT`` and renamed into place at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from host import config
from host.errors import FatalError, UserError
from host.generator import (
    BRAND_FILE,
    PLATFORM_FOLDER,
    PREMIUM_FOLDER,
    Payload,
    assemble,
    plan,
    plugin_folders,
    premium_bundles,
)
from host.jsonio import render
from host.log import log
from host.manifest import load_manifest, validate

IGNORED_NAMES = {"__pycache__", ".claude-plugin", ".git", ".DS_Store", "node_modules", ".pytest_cache"}
IGNORED_SUFFIXES = (".pyc", ".pyo")


@dataclass
class Brand:
    """A validated brand file."""

    path: Path
    data: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def product(self) -> str:
        return str(self.data["productName"])

    @property
    def excluded(self) -> list[str]:
        return list((self.data.get("plugins") or {}).get("excluded") or [])

    @property
    def premium(self) -> list[str] | None:
        """The allowlist, or None when the brand ships no premium bundle."""
        value = self.data.get("shipsPremiumBundles")
        return None if value is None else list(value)


@dataclass
class BundleReport:
    out: Path
    brand: str
    platform: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    shipped: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    files: int = 0
    changed: bool = False
    payload: Payload | None = None


def brands_dir() -> Path:
    return config.manifests_dir() / "brands"


def resolve_brand(ref: str) -> Path:
    """A brand name in ``manifests/brands/`` or a path to a brand JSON file."""
    candidate = Path(ref)
    if ref.endswith(".json") or os.sep in ref or candidate.is_file():
        if not candidate.is_file():
            raise UserError(f"BRAND: file '{ref}' does not exist")
        return candidate.resolve()
    shipped = brands_dir() / f"{ref}.json"
    if not shipped.is_file():
        known = ", ".join(sorted(p.stem for p in brands_dir().glob("*.json"))) or "none"
        raise UserError(f"BRAND: no brand named '{ref}' in {brands_dir()} (known: {known}); or pass a path to a brand JSON file")
    return shipped


def load_brand(path: Path) -> Brand:
    """Parse and validate a brand file; the legacy boolean premium form is the FATAL the SPEC names."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("shipsPremiumBundles"), bool):
        raise FatalError(
            "FATAL: brand.shipsPremiumBundles must be a string[] "
            f"(boolean 'true' no longer accepted; enumerate bundles in {path})"
        )
    validate(data, "brand", str(path))
    return Brand(path, data)


def default_premium_dir() -> Path | None:
    value = os.environ.get("PLUGHOST_PREMIUM_DIR")
    if value:
        return Path(value)
    candidate = config.REPO_ROOT / PREMIUM_FOLDER
    return candidate if candidate.is_dir() else None


def _platform_sources(plugins_dir: Path, brand: Brand) -> tuple[list[Path], list[str]]:
    """Platform plugin folders to ship, and the excluded names (each must exist)."""
    folders = plugin_folders(plugins_dir)
    by_name = {}
    for folder in folders:
        by_name[load_manifest(folder / "PLUGIN.md").name] = folder
    for i, name in enumerate(brand.excluded):
        if name not in by_name:
            raise UserError(
                f"{brand.path}: plugins.excluded[{i}]: no platform plugin named '{name}' in {plugins_dir} "
                f"(available: {', '.join(sorted(by_name)) or 'none'})"
            )
    ship = [f for n, f in sorted(by_name.items(), key=lambda kv: kv[1].name) if n not in brand.excluded]
    return ship, list(brand.excluded)


def premium_gate(brand: Brand, premium_dir: Path | None) -> tuple[str, dict[str, Path], list[str]]:
    """(mode, shipped bundles, skipped bundle names) by SPEC 5's premium-bundle gate."""
    available = premium_bundles(premium_dir)
    allow = brand.premium
    if allow is None:
        return "none", {}, sorted(available)
    missing = [b for b in allow if b not in available]
    if missing:
        where = str(premium_dir) if premium_dir else "(no premium bundles folder; pass --premium-dir)"
        raise FatalError(
            f"FATAL: brand.shipsPremiumBundles names bundle '{missing[0]}' that is missing on disk in {where} "
            f"({brand.path})"
        )
    shipped = {b: available[b] for b in sorted(allow)}
    return "allowlist", shipped, sorted(b for b in available if b not in shipped)


def _walk(src: Path) -> list[Path]:
    """Files under ``src`` to copy (relative), skipping caches and generated manifests."""
    out = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES)
        base = Path(dirpath)
        for name in sorted(filenames):
            if name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES):
                continue
            out.append((base / name).relative_to(src))
    return out


def desired_tree(payload: Payload, brand: Brand, platform: list[Path], bundles: dict[str, Path],
                 python: str | None) -> dict[Path, Path | str]:
    """Relative path → source file to copy, or text to write (generated manifests, brand.json)."""
    root = payload.root
    tree: dict[Path, Path | str] = {}
    for folder in platform:
        for rel in _walk(folder):
            tree[Path(PLATFORM_FOLDER, folder.name, rel)] = folder / rel
    for name, folder in bundles.items():
        for rel in _walk(folder):
            tree[Path(PREMIUM_FOLDER, name, rel)] = folder / rel
    for path, text in plan(payload, python).items():
        tree[path.relative_to(root)] = text
    tree[Path(BRAND_FILE)] = render(brand.data)
    return tree


def _same_file(src: Path | str, dest: Path) -> bool:
    try:
        if isinstance(src, str):
            data = src.encode("utf-8")
            return dest.stat().st_size == len(data) and dest.read_bytes() == data
        if src.stat().st_size != dest.stat().st_size:
            return False
        return src.read_bytes() == dest.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return False


def tree_matches(out: Path, tree: dict[Path, Path | str]) -> bool:
    """True when ``out`` holds exactly ``tree`` (ignoring caches a running server leaves)."""
    if not out.is_dir():
        return False
    present = set()
    for dirpath, dirnames, filenames in os.walk(out):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        base = Path(dirpath)
        for name in filenames:
            if name.endswith(IGNORED_SUFFIXES):
                continue
            present.add((base / name).relative_to(out))
    if present != set(tree):
        return False
    return all(_same_file(src, out / rel) for rel, src in tree.items())


def _materialize(tmp: Path, tree: dict[Path, Path | str]) -> None:
    made: set[Path] = set()
    for rel, src in sorted(tree.items()):
        dest = tmp / rel
        if dest.parent not in made:
            dest.parent.mkdir(parents=True, exist_ok=True)
            made.add(dest.parent)
        if isinstance(src, str):
            dest.write_text(src, encoding="utf-8")
        else:
            shutil.copyfile(src, dest)
            shutil.copymode(src, dest)


def _looks_like_payload(out: Path) -> bool:
    return not any(out.iterdir()) or (out / BRAND_FILE).is_file()


def bundle(brand_ref: str, out: Path, *, plugins_dir: Path | None = None, premium_dir: Path | None = None,
           python: str | None = None) -> BundleReport:
    """Build (or confirm) the payload for ``brand_ref`` at ``out``."""
    brand = load_brand(resolve_brand(brand_ref))
    plugins_dir = plugins_dir or (Path(os.environ["PLUGHOST_PLUGINS_DIR"]) if os.environ.get("PLUGHOST_PLUGINS_DIR")
                                  else config.builtin_plugins_dir())
    premium_dir = premium_dir if premium_dir is not None else default_premium_dir()
    out = out.absolute()
    if out.exists() and (not out.is_dir() or not _looks_like_payload(out)):
        raise UserError(f"--out: '{out}' exists and is not a plughost payload (no {BRAND_FILE}); "
                        "choose a new or empty folder")
    platform, excluded = _platform_sources(plugins_dir, brand)
    mode, bundles, skipped = premium_gate(brand, premium_dir)
    log("bundler", "premium-bundle-gate", brand=brand.name, mode=mode, shipped=sorted(bundles), skipped=skipped)
    payload = assemble(out, brand.name, brand.product, platform=platform, bundles=bundles)
    tree = desired_tree(payload, brand, platform, bundles, python)
    report = BundleReport(out=out, brand=brand.name, platform=[p.name for p in payload.plugins if p.bundle is None],
                          excluded=excluded, shipped=sorted(bundles), skipped=skipped, files=len(tree), payload=payload)
    if tree_matches(out, tree):
        return report
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.build-", dir=out.parent))
    old: Path | None = None
    try:
        _materialize(tmp, tree)
        os.chmod(tmp, 0o755)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.rmdir(old)
            os.rename(out, old)
        os.rename(tmp, out)
    except BaseException:
        if old is not None and not out.exists():
            os.rename(old, out)
            old = None
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    report.changed = True
    return report
