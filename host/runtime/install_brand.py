"""The install's brand: the one resolver every reader asks (docs/payload.md#the-installs-brand).

A payload carries the brand it was built for as ``PAYLOAD/brand.json`` (the bundler writes the
resolved brand there, wherever the brand file came from), and ``plughost install`` records that
copy as ``PLUGHOST_BRAND_FILE`` in ``<PLUGHOST_HOME>/.env``. :func:`install_brand` answers "which
brand is this install" for the host (exclusions before import), the gates (marketplace names, the
strip-list, the ``install-brand`` gate), ``serve`` and, through ``plughost.api.payload``, the
plugins (the webchat's title and greeting, the hostname tools). First found wins:

1. ``PLUGHOST_BRAND`` (``--brand``, exported, or written by hand): a brand JSON path, a shipped
   brand's name (``host/manifests/brands/<name>.json``) or the ``name`` of the payload's own
   ``brand.json``;
2. the payload this process runs from: ``brand.json`` beside its plugins folder (an MCP server's
   ``PLUGHOST_PLUGINS_DIR`` is ``${CLAUDE_PLUGIN_ROOT}/..``, so a moved payload's servers read
   their own copy);
3. the install record, ``PLUGHOST_BRAND_FILE``;
4. none: no brand (a checkout that was never bundled).

A named or recorded brand that cannot be read is not an exception here: the result carries the
``problem`` (one line naming the file and the fix) and no data, so the host still loads and the
``install-brand`` gate reports it; commands that were given ``--brand`` check it first
(:func:`require`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plughost.runtime import install_record
from plughost.runtime.manifest import validate
from plughost.util import config, settings
from plughost.util.errors import UserError
from plughost.util.log import format_line

if TYPE_CHECKING:  # pragma: no cover
    from plughost.runtime.types import Gate, GateContext, GateResult

BRAND_FILE = "brand.json"
RECORD_KEY = settings.BRAND_FILE.name
def _fix(env: Mapping[str, str]) -> str:
    """The install to rerun: this install's config dir and account; the payload is wherever it went."""
    account = install_record.account_on_record(env) or "ID"
    return (f"rerun plughost install PAYLOAD --config-dir {install_record.config_dir(env)} --account {account}"
            " with PAYLOAD the folder the payload is in now")


@dataclass(frozen=True)
class InstallBrand:
    """The brand of this install: its file, its data, where it was found, or what is wrong."""

    path: Path | None
    data: dict[str, Any] = field(default_factory=dict)
    source: str = "none"  # PLUGHOST_BRAND | payload | install | none
    problem: str | None = None

    @property
    def name(self) -> str | None:
        value = self.data.get("name")
        return value if isinstance(value, str) and value else None

    @property
    def product(self) -> str | None:
        value = self.data.get("productName")
        return value if isinstance(value, str) and value else None

    @property
    def excluded(self) -> list[str]:
        block = self.data.get("plugins")
        value = block.get("excluded") if isinstance(block, dict) else None
        return list(value) if isinstance(value, list) else []

    @property
    def hostnames(self) -> dict[str, str]:
        block = self.data.get("hostnames")
        return {k: v for k, v in block.items() if isinstance(v, str)} if isinstance(block, dict) else {}


def read_brand_file(path: Path) -> dict[str, Any]:
    """A brand file's JSON object; a file that is missing or not a JSON object is one UserError line."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: brand file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: invalid brand file: {exc}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: (top level): expected a JSON object")
    excluded = (data.get("plugins") or {}).get("excluded", []) if isinstance(data.get("plugins"), dict) else []
    if not isinstance(excluded, list) or not all(isinstance(x, str) for x in excluded):
        raise UserError(f"{path}: plugins.excluded: expected a list of plugin names")
    return data


def _looks_like_path(ref: str) -> bool:
    return ref.endswith(".json") or os.sep in ref


def payload_brand_file(plugins_dir: Path | str | None) -> Path | None:
    """``brand.json`` of the payload whose plugins folder is ``plugins_dir``, when it has one."""
    if plugins_dir is None:
        return None
    candidate = Path(plugins_dir).parent / BRAND_FILE
    return candidate if candidate.is_file() else None


def _named(ref: str, env: Mapping[str, str], payload: Path | None) -> Path:
    """A ``PLUGHOST_BRAND`` value as a file: a path, a shipped brand, or the payload's brand by name."""
    if _looks_like_path(ref):
        path = Path(os.path.expanduser(ref))
        if not path.is_file():
            raise UserError(f"PLUGHOST_BRAND: brand file '{ref}' not found")
        return path.resolve()
    brands = config.manifests_dir(env) / "brands"
    candidates = [brands / f"{ref}.json"] + ([payload] if payload else [])
    candidates += sorted(brands.glob("*.json")) if brands.is_dir() else []
    for candidate in candidates:
        if not candidate.is_file():
            continue
        if candidate.parent == brands and candidate.stem == ref:
            return candidate
        try:
            if read_brand_file(candidate).get("name") == ref:
                return candidate
        except UserError:
            continue
    where = f", and {payload} is another brand" if payload else ""
    raise UserError(f"PLUGHOST_BRAND: brand '{ref}' not found (no {brands / f'{ref}.json'}{where}); "
                    "pass a brand JSON path, or leave it unset for the payload's brand.json")


def install_brand(env: Mapping[str, str], plugins_dir: Path | str | None = None) -> InstallBrand:
    """This install's brand (see the module docstring for the order). ``plugins_dir``: the host's
    plugins folder (``host.plugins_dir``), default ``PLUGHOST_PLUGINS_DIR``."""
    if plugins_dir is None:
        plugins_dir = settings.PLUGINS_DIR.read(env)
    payload = payload_brand_file(plugins_dir)
    ref = (settings.BRAND.read(env) or "").strip()
    if ref:
        try:
            path = _named(ref, env, payload)
            return InstallBrand(path, read_brand_file(path), settings.BRAND.name)
        except UserError as exc:
            return InstallBrand(None, source=settings.BRAND.name, problem=str(exc))
    if payload is not None:
        try:
            return InstallBrand(payload, read_brand_file(payload), "payload")
        except UserError as exc:
            return InstallBrand(payload, source="payload", problem=str(exc))
    recorded = settings.BRAND_FILE.read(env)
    if recorded is not None:
        path = Path(os.path.expanduser(str(recorded)))
        if not path.is_file():
            return InstallBrand(path, source="install", problem=(
                f"{RECORD_KEY}: the install's brand file '{path}' is missing (the payload moved or was removed); "
                f"{_fix(env)}"))
        try:
            return InstallBrand(path, read_brand_file(path), "install")
        except UserError as exc:
            return InstallBrand(path, source="install", problem=str(exc))
    return InstallBrand(None)


def require(brand: str, env: Mapping[str, str], plugins_dir: Path | str | None = None,
            flag: str = "--brand") -> InstallBrand:
    """``--brand``'s brand, or one UserError line naming the flag (bad input: exit 2)."""
    found = install_brand({**env, settings.BRAND.name: brand}, plugins_dir)
    if found.problem:
        raise UserError(found.problem.replace("PLUGHOST_BRAND:", f"{flag}:", 1))
    return found


def problem_fields(found: InstallBrand, problem: str, env: Mapping[str, str]) -> dict[str, str]:
    """What is wrong with the install's brand as log fields: the reason, where it was looked for,
    and the install to rerun (a recorded file that is gone) or the detail (anything else)."""
    reason = "brand-file-missing" if found.path is not None and not found.path.is_file() else "brand-unusable"
    fields = {"reason": reason, "source": found.source, "path": str(found.path or "")}
    fields.update({"fix": _fix(env)} if reason == "brand-file-missing" and found.source == "install" else
                  {"detail": problem})
    return fields


def unread_warning(env: Mapping[str, str], plugins_dir: Path | str | None, tag: str) -> str | None:
    """One ``[tag] warn`` line when the install's brand cannot be read (so it excludes nothing and
    every plugin it would leave out loads), naming the fix; None when it can. For listings that,
    unlike ``doctor`` and ``boot --check``, run no gates."""
    found = install_brand(env, plugins_dir)
    if found.problem is None:
        return None
    return format_line(tag, "warn", "op=brand-unread", excluded="none", **problem_fields(found, found.problem, env))


def check_install_brand(ctx: GateContext) -> GateResult:
    """`install-brand`: the install's brand can be read and is a valid brand file. A named or recorded
    brand that is missing or broken names the file and the fix (`[install-brand] FATAL reason=..
    source=.. path=.. fix=..`); no brand at all (a checkout never bundled) passes with `brand=none`."""
    from plughost.runtime.types import GateResult
    found = ctx.extras.get("install_brand")
    if not isinstance(found, InstallBrand):
        found = install_brand(ctx.env, ctx.host.plugins_dir)
    problem = found.problem
    if problem is None and found.path is not None:
        try:
            validate(found.data, "brand", str(found.path))
        except UserError as exc:
            problem = str(exc)
    if problem is not None:
        fields = problem_fields(found, problem, ctx.env)
        return GateResult(status="fail", inspected=1, defects=[fields],
                          lines=[format_line("install-brand", "FATAL", **fields)])
    return GateResult(status="ok", inspected=1 if found.path else 0, lines=[
        format_line("install-brand", "op=resolved", brand=found.name or "none", source=found.source,
                    path=str(found.path or "")),
        format_line(None, "startup-self-test", **{"install-brand": "ok"}, inspected=1 if found.path else 0),
    ])


def install_brand_gate() -> Gate:
    """The `install-brand` gate, for the host's gate plugin (fatal: a brand that cannot be read
    would serve the wrong name and load what it excludes)."""
    from plughost.runtime.types import Gate

    return Gate("install-brand", check=check_install_brand, fatal=True, order=6)
