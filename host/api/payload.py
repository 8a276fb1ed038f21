"""For plugins that look at the install (the admin console, the channels runner's gate): the
brand, the install's brand (``install_brand``: the one resolver every reader uses), the Claude
Code config dir plughost installed into and its registration, and ``plughost doctor``'s run and
last report (docs/payload.md, docs/gates.md).

The names load on first use (PEP 562), as ``plughost``'s do: a gate that reads the install's brand
at boot does not import the bundler or ``doctor``."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "load_brand": "plughost.payload.bundler",
    "resolve_brand": "plughost.payload.bundler",
    "install_brand": "plughost.runtime.install_brand",
    "InstallBrand": "plughost.runtime.install_brand",
    "Registration": "plughost.payload.registration",
    "config_dir_source": "plughost.runtime.install_record",
    "doctor": "plughost.payload:doctor",
}
"""name -> "module" (the same name there) or "package:module" (a submodule)."""

__all__ = ["load_brand", "resolve_brand", "install_brand", "InstallBrand", "Registration", "config_dir_source",
           "doctor"]

if TYPE_CHECKING:  # pragma: no cover
    from plughost.payload import doctor
    from plughost.payload.bundler import load_brand, resolve_brand
    from plughost.payload.registration import Registration
    from plughost.runtime.install_brand import InstallBrand, install_brand
    from plughost.runtime.install_record import config_dir_source


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'plughost.api.payload' has no attribute {name!r}")
    package, _, sub = module.partition(":")
    value = import_module(f"{package}.{sub}") if sub else getattr(import_module(package), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
