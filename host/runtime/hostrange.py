"""The host versions a plugin says it works with: PLUGIN.md's ``requires-plughost`` or, for an entry
point, its distribution's ``Requires-Dist: plughost ...``, both PEP 440 specifiers.

Checked before the plugin's module is imported, so a plugin needing a newer host fails alone with one
line naming both versions instead of an ImportError from deep inside it (CHANGELOG.md, 0.2.0).
``packaging`` loads only for a plugin that names a range: the built-in ones name none, so boot does
without it.
"""

from __future__ import annotations

import re
from typing import Any

import plughost
from plughost.util.errors import UserError

FIELD = "requires-plughost"
_EXAMPLE = "'>=0.2,<1'"
_NAME = re.compile(r"\s*([A-Za-z0-9._-]*)")


def _names_plughost(name: str) -> bool:
    """PEP 503's normalised name (runs of ``-_.`` are one ``-``, lower case) is ``plughost``."""
    return re.sub(r"[-_.]+", "-", name).lower() == "plughost"


def host_version() -> str:
    return plughost.__version__


def check_specifier(text: str, source: str) -> None:
    """Raise UserError(`<source>: requires-plughost: ...`) unless ``text`` is a PEP 440 specifier."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        raise UserError(f"{source}: {FIELD}: expected a PEP 440 version specifier such as {_EXAMPLE} "
                        f"(got {text!r})") from None


def of_distribution(dist: Any) -> str | None:
    """The specifier ``dist`` requires plughost at ('' for any version), None when it names no plughost.

    A requirement with a marker counts when the marker holds here without extras. An unparsable
    requirement is one line naming the distribution's METADATA and the field.
    """
    if dist is None:
        return None
    for line in dist.requires or []:
        name = _NAME.match(line)
        if not name or not _names_plughost(name.group(1)):
            continue  # not ours to judge: no requirement parser loaded for the others (packaging.requirements)
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            req = Requirement(line)
        except InvalidRequirement:
            where = getattr(dist, "_path", None) or f"{dist.name} {dist.version}"
            raise UserError(f"{where}/METADATA: Requires-Dist: expected a PEP 508 requirement such as "
                            f"'plughost>=0.2,<1' (got {line!r})") from None
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        return str(req.specifier)
    return None


def problem(specifier: str | None) -> str | None:
    """``needs plughost >=0.3 (this is 0.2.0)`` when ``specifier`` excludes the running host, else None."""
    if not specifier:
        return None
    from packaging.specifiers import SpecifierSet

    version = host_version()
    if SpecifierSet(specifier).contains(version, prereleases=True):
        return None
    return f"needs plughost {specifier} (this is {version})"
