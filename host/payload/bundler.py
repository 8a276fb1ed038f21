"""Brand bundling: assemble a payload for one brand, then generate its manifests (docs/payload.md#brands).

The payload is ``OUT/brand.json`` (with the brand's public-agent files in ``OUT/brand/agents/``), ``OUT/plugins/`` (the platform plugins minus the brand's
``plugins.excluded``) and ``OUT/premium-plugins/`` (only the bundles the brand allowlists in
``shipsPremiumBundles``), with every ``.claude-plugin/`` manifest generated.

Nothing is half-written: the brand, the exclusions, the premium gate and every PLUGIN.md are
checked first; the whole desired tree (copied files and generated manifests) is then planned in
memory. When ``OUT`` already holds exactly that tree nothing is written at all (a rerun is
idempotent: no byte, no mtime changes). Otherwise the payload is built in a temp folder beside
``OUT`` and renamed into place at the end.

A rerun must be fast on a large tree, so the build leaves a stamp (``.plughost-bundle.json``):
a digest of every input (each source file's path, size and mtime, the brand, the interpreter,
the output location, the plughost version) and the size and mtime of every file it wrote.
When the digest and the output's listing both match, nothing changed and nothing is parsed
(like rsync's quick check); otherwise the full path runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plughost import __version__
from plughost.payload import entrypoints
from plughost.payload.generator import (
    BRAND_FILE,
    PLATFORM_FOLDER,
    PREMIUM_FOLDER,
    Payload,
    assemble,
    plan,
    plugin_folders,
    premium_bundles,
)
from plughost.runtime import hostrange, plugin_checks, plugin_model
from plughost.runtime.agent_files import brand_agent_files
from plughost.runtime.manifest import CODE_FIELDS, load_manifest, validate
from plughost.util import config, settings
from plughost.util.errors import FatalError, UserError
from plughost.util.jsonio import read_json, render, write_if_changed
from plughost.util.log import log
from plughost.util.trees import (
    CACHE_NAMES,
    CACHE_SUFFIXES,
    build_and_swap,
    materialize,
    tree_matches,
    walk_files,
)

BRAND_AGENTS = Path("brand", "agents")
"""The brand's public-agent files in a payload (docs/agents.md), beside its ``brand.json``."""
IGNORED_NAMES = CACHE_NAMES | {".claude-plugin"}  # manifests are regenerated for the payload
STAMP = ".plughost-bundle.json"
STAMP_FORMAT = 2  # 2: a stamped build passed the plugin checks


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
    entry_points: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # entry-point plugin → why it is not shipped
    files: int = 0
    changed: bool = False
    payload: Payload | None = None


def brands_dir() -> Path:
    return config.manifests_dir() / "brands"


def resolve_brand(ref: str) -> Path:
    """A brand name in ``host/manifests/brands/`` or a path to a brand JSON file."""
    candidate = Path(ref)
    if ref.endswith(".json") or os.sep in ref or candidate.is_file():
        if candidate.is_dir():
            raise UserError(f"BRAND: '{ref}' is a folder; expected a brand JSON file (or a shipped brand's name)")
        if not candidate.is_file():
            raise UserError(f"BRAND: file '{ref}' does not exist")
        return candidate.resolve()
    shipped = brands_dir() / f"{ref}.json"
    if not shipped.is_file():
        known = ", ".join(sorted(p.stem for p in brands_dir().glob("*.json"))) or "none"
        raise UserError(f"BRAND: no brand named '{ref}' in {brands_dir()} (known: {known}); or pass a path to a brand JSON file")
    return shipped


_MISSING = object()


def load_brand(path: Path) -> Brand:
    """Parse and validate a brand file; the legacy boolean premium form is the FATAL docs/payload.md#brands names."""
    try:
        data = read_json(path, default=_MISSING)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None
    if data is _MISSING:
        raise UserError(f"{path}: cannot read: no such file")
    if isinstance(data, dict) and isinstance(data.get("shipsPremiumBundles"), bool):
        raise FatalError(
            "FATAL: brand.shipsPremiumBundles must be a string[] "
            f"(boolean 'true' no longer accepted; enumerate bundles in {path})"
        )
    validate(data, "brand", str(path))
    return Brand(path, data)


def default_premium_dir() -> Path | None:
    """`PLUGHOST_PREMIUM_DIR`; nothing by default (an installed package ships no premium bundles)."""
    return settings.PREMIUM_DIR.read()


def _platform_folders(plugins_dir: Path) -> list[Path]:
    """The built-in plugin folders plus those of ``plugins_dir`` (``--plugins-dir`` adds to the
    built-ins, as it does for the host); another plugin named like a built-in is a usage error."""
    builtin_dir = config.builtin_plugins_dir()
    folders = plugin_folders(builtin_dir)
    if plugins_dir.resolve() == builtin_dir.resolve():
        return folders
    taken = {f.name: f for f in folders}
    for folder in plugin_folders(plugins_dir):
        if folder.name in taken:
            if (load_manifest(folder / "PLUGIN.md").python or "").startswith("plughost.plugins."):
                continue  # a payload's copy of the built-in (bundling from an installed payload)
            raise UserError(f"--plugins-dir: '{folder}' has the name of the built-in plugin '{taken[folder.name]}' "
                            "(rename the folder and its PLUGIN.md name)")
        folders.append(folder)
    return sorted(folders, key=lambda f: f.name)


def _platform_sources(plugins_dir: Path, brand: Brand, staged: list[Path] | None = None,
                      replaces: set[Path] | frozenset[Path] = frozenset()) -> tuple[list[Path], list[str]]:
    """Platform plugin folders to ship, and the excluded names (each must name a platform plugin).
    ``staged``: the entry-point plugins' staged folders (:mod:`plughost.payload.entrypoints`), which
    take the place of the folders in ``replaces`` (an earlier payload's copies of them).

    A platform plugin's folder is named after it (docs/architecture.md#plugin-folders), so exclusions match folder names;
    only a name that matches no folder is looked up in the PLUGIN.md files.
    """
    folders = sorted([f for f in _platform_folders(plugins_dir) if f not in replaces] + list(staged or []),
                     key=lambda f: f.name)
    drop: set[Path] = set()
    by_folder = {f.name: f for f in folders}
    by_manifest: dict[str, Path] | None = None
    for i, name in enumerate(brand.excluded):
        if name in by_folder:
            drop.add(by_folder[name])
            continue
        if by_manifest is None:
            by_manifest = {load_manifest(f / "PLUGIN.md").name: f for f in folders}
        if name not in by_manifest:
            raise UserError(
                f"{brand.path}: plugins.excluded[{i}]: no platform plugin named '{name}' in {plugins_dir} "
                f"(available: {', '.join(sorted(by_folder)) or 'none'})"
            )
        drop.add(by_manifest[name])
    return [f for f in folders if f not in drop], list(brand.excluded)


def premium_gate(brand: Brand, premium_dir: Path | None) -> tuple[str, dict[str, Path], list[str]]:
    """(mode, shipped bundles, skipped bundle names) by the premium-bundle gate of docs/payload.md#brands."""
    available = premium_bundles(premium_dir)
    allow = brand.premium
    if allow is None:
        return "none", {}, sorted(available)
    missing = [b for b in allow if b not in available]
    if missing:
        where = (f"is not in the premium bundles folder {premium_dir}" if premium_dir
                 else "needs a premium bundles folder: pass --premium-dir DIR (or set PLUGHOST_PREMIUM_DIR)")
        raise FatalError(f"FATAL: {brand.path}: shipsPremiumBundles: bundle '{missing[0]}' {where}")
    shipped = {b: available[b] for b in sorted(allow)}
    return "allowlist", shipped, sorted(b for b in available if b not in shipped)


def _premium_folders(bundles: dict[str, Path]) -> list[Path]:
    """The plugin folders of premium bundles: ``<bundle>/PLUGIN.md`` or ``<bundle>/plugins/<sub>/``."""
    return [f for top in bundles.values()
            for f in ([top] if (top / "PLUGIN.md").is_file() else plugin_folders(top / PLATFORM_FOLDER))]


def _shown(path: str) -> str:
    """``path`` relative to the working directory when under it (what a person typed), else as is."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def check_needs(brand: Brand, platform: list[Path], bundles: dict[str, Path], plugins_dir: Path,
                staged: list[Path] | None = None, origins: dict[Path, str] | None = None) -> None:
    """Refuse a payload in which a plugin needs a capability no shipped plugin provides (the
    ``plugin-needs`` rule of :mod:`plughost.runtime.plugin_model`, over the payload's folders): it would
    install and boot, then fail every call that needs it (memory without a graph store). An entry-point
    plugin's need is named where it is declared (``origins``), never by its staging copy."""
    models = [m for f in [*platform, *_premium_folders(bundles)] if (m := plugin_model.of_folder(f)) is not None]
    unmet = plugin_model.unmet_needs(models)
    if not unmet:
        return
    shipped = set(platform)
    others = [m for f in [*_platform_folders(plugins_dir), *(staged or [])] if f not in shipped
              and (m := plugin_model.of_folder(f)) is not None]
    by_need: dict[str, list[plugin_model.Unmet]] = {}
    for miss in unmet:
        by_need.setdefault(miss.need, []).append(miss)
    lines = []
    for need, misses in by_need.items():  # one line per capability, naming every plugin that needs it
        who = ", ".join(f"'{m.plugin}' ({_declared(m, origins or {})})" for m in misses)
        names = plugin_model.providers_of(others, need)
        add = f"add '{names[0]}' or a plugin that provides it" if names else "add a plugin that provides it"
        lines.append(f"bundle: plugin{'s' if len(misses) > 1 else ''} {who} need{'' if len(misses) > 1 else 's'} "
                     f"'{need}'; no plugin in brand '{brand.name}' provides it: {add}")
    raise UserError("\n".join(lines))


def _declared(miss: plugin_model.Unmet, origins: dict[Path, str]) -> str:
    """Where an unmet need is declared: the file and field, an entry point's by its installed
    PLUGIN.md or, when bundle generated that, its module's ``NEEDS``."""
    origin = origins.get(Path(miss.file).resolve())
    if origin is None:
        return f"{_shown(miss.file)} {miss.field}"
    field = miss.field if not origin.startswith("module:") else miss.field.replace("needs", CODE_FIELDS["needs"], 1)
    return f"{_shown(origin)} {field}"


def check_plugins(folders: list[Path], env: Any = None) -> None:
    """Refuse a payload with a plugin ``plughost manifests check`` rejects (:mod:`plughost.runtime.plugin_checks`):
    its Python does not import, a declared tool has no handler, an ``inputSchema`` contradicts the
    handler, ``plughost_tools`` raises. Claude Code would install it and then fail to connect the server."""
    defects = plugin_checks.tool_defects([f / "PLUGIN.md" for f in folders], env)
    if defects:
        raise UserError(f"bundle: {len(defects)} plugin defect(s); nothing written "
                        "(`plughost manifests check FOLDER` shows them too):\n"
                        + "\n".join(f"  plugin '{d.plugin}': {_shown(str(d.file))}: {d.field}: {d.detail}"
                                     for d in defects))


def source_files(platform: list[Path], bundles: dict[str, Path]) -> dict[Path, Path]:
    """Relative payload path → source file, for every file the payload copies."""
    tree: dict[Path, Path] = {}
    for top, name, folder in [(PLATFORM_FOLDER, f.name, f) for f in platform] + [
            (PREMIUM_FOLDER, n, f) for n, f in bundles.items()]:
        for rel in walk_files(folder, IGNORED_NAMES):
            tree[Path(f"{top}/{name}/{rel}")] = Path(f"{folder}/{rel}")
    return tree


def inputs_digest(copies: dict[Path, Path], brand: Brand, out: Path, python: str) -> str:
    """A digest of everything the payload is built from (file identity by path, size, mtime)."""
    h = hashlib.sha256()
    h.update(json.dumps([STAMP_FORMAT, __version__, python, str(out), render(brand.data)]).encode())
    for rel, src in sorted(copies.items()):
        st = src.stat()
        h.update(f"\0{rel.as_posix()}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _listing(out: Path) -> dict[str, list[int]]:
    """Every file under ``out`` (caches aside) with its size and mtime, the stamp excluded."""
    listing: dict[str, list[int]] = {}
    for dirpath, dirnames, filenames in os.walk(out):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel_dir = os.path.relpath(dirpath, out)
        for name in filenames:
            if name.endswith(CACHE_SUFFIXES) or (name == STAMP and rel_dir == "."):
                continue
            st = os.stat(os.path.join(dirpath, name))
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            listing[rel] = [st.st_size, st.st_mtime_ns]
    return listing


def quick_unchanged(out: Path, digest: str) -> int | None:
    """The file count when ``out`` is the untouched result of a build from the same inputs."""
    try:
        stamp = json.loads((out / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("inputs") != digest:
        return None
    files = stamp.get("files")
    if not isinstance(files, dict) or _listing(out) != files:
        return None
    return len(files)


def desired_tree(payload: Payload, brand: Brand, copies: dict[Path, Path],
                 python: str | None) -> dict[Path, Path | str]:
    """Relative path → source file to copy, or text to write (generated manifests, brand.json)."""
    root = payload.root
    tree: dict[Path, Path | str] = dict(copies)
    for path, text in plan(payload, python).items():
        tree[path.relative_to(root)] = text
    tree[Path(BRAND_FILE)] = render(brand.data)
    return tree


def _write_stamp(root: Path, digest: str) -> None:
    write_if_changed(root / STAMP, render({"format": STAMP_FORMAT, "inputs": digest, "files": _listing(root)}))


def _looks_like_payload(out: Path) -> bool:
    return not any(out.iterdir()) or (out / BRAND_FILE).is_file()


def bundle(brand_ref: str, out: Path, *, plugins_dir: Path | None = None, premium_dir: Path | None = None,
           python: str | None = None, env: Any = None) -> BundleReport:
    """Build (or confirm) the payload for ``brand_ref`` at ``out``."""
    brand = load_brand(resolve_brand(brand_ref))
    plugins_dir = plugins_dir or settings.PLUGINS_DIR.read() or config.builtin_plugins_dir()
    premium_dir = premium_dir if premium_dir is not None else default_premium_dir()
    out = out.resolve()
    if out.exists() and (not out.is_dir() or not _looks_like_payload(out)):
        raise UserError(f"--out: '{out}' exists and is not a plughost payload (no {BRAND_FILE}); "
                        "choose a new or empty folder")
    python = python or sys.executable
    if not entrypoints.third_party_entry_points():
        return _bundle(brand, out, plugins_dir, premium_dir, python, entrypoints.Staged(), env)
    with tempfile.TemporaryDirectory(prefix="plughost-entry-points-") as tmp:
        return _bundle(brand, out, plugins_dir, premium_dir, python, _staged(Path(tmp), plugins_dir), env)


def _staged(tmp: Path, plugins_dir: Path) -> Any:
    """The entry-point plugins staged as folders; one named like a folder plugin of another module is refused."""
    staged = entrypoints.stage(tmp, config.load_env())
    taken = {f.name: f for f in _platform_folders(plugins_dir)}
    for folder in list(staged.folders):
        other = taken.get(folder.name)
        if other is None:
            continue
        if load_manifest(other / "PLUGIN.md").python == load_manifest(folder / "PLUGIN.md").python:
            staged.replaces.add(other)  # an earlier payload's copy of it (bundling from an install): ship it fresh
            continue
        # the host loads the entry point and fails the folder: shipping either would not be what runs here
        origin = staged.origins.get((folder / "PLUGIN.md").resolve(), "?")
        raise UserError(f"bundle: plugin '{folder.name}' is both an entry point ({origin}) and the folder "
                        f"'{other}'; rename or remove one")
    for name, reason in sorted(staged.left_out.items()):
        log("bundler", "op=left-out", plugin=name, source="entry-point", reason=reason)
    return staged


def _bundle(brand: Brand, out: Path, plugins_dir: Path, premium_dir: Path | None, python: str,
            staged: Any, env: Any = None) -> BundleReport:
    platform, excluded = _platform_sources(plugins_dir, brand, staged.folders, staged.replaces)
    refused = {f: p for f in platform if (p := hostrange.problem(load_manifest(f / "PLUGIN.md").requires_plughost))}
    platform = [f for f in platform if f not in refused]  # a plugin this host never loads is not shipped
    for folder, problem in sorted(refused.items()):
        staged.left_out[folder.name] = problem
        log("bundler", "op=left-out", plugin=folder.name, source="folder", reason=problem)
    mode, bundles, skipped = premium_gate(brand, premium_dir)
    check_needs(brand, platform, bundles, plugins_dir, staged.folders, staged.origins)
    log("bundler", "premium-bundle-gate", brand=brand.name, mode=mode, shipped=sorted(bundles), skipped=skipped)
    report = BundleReport(out=out, brand=brand.name, platform=[f.name for f in platform], excluded=excluded,
                          shipped=sorted(bundles), skipped=skipped,
                          entry_points=sorted(f.name for f in staged.folders if f in platform),
                          left_out=dict(staged.left_out))
    copies = source_files(platform, bundles)
    copies.update({BRAND_AGENTS / rel: src for rel, src in brand_agent_files(brand.path).items()})
    digest = inputs_digest(copies, brand, out, python)
    count = quick_unchanged(out, digest)
    if count is not None:
        report.files = count
        return report
    check_plugins([*platform, *_premium_folders(bundles)], env)  # a stamped build passed them: skipped above
    payload = assemble(out, brand.name, brand.product, platform=platform, bundles=bundles)
    tree = desired_tree(payload, brand, copies, python)
    report.files, report.payload = len(tree), payload
    if tree_matches(out, tree, root_extras={STAMP}):
        _write_stamp(out, digest)  # same content from touched sources: refresh the quick check only
        return report

    def fill(tmp: Path) -> None:
        materialize(tmp, tree)
        _write_stamp(tmp, digest)

    build_and_swap(out, fill)
    report.changed = True
    return report
