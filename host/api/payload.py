"""For plugins that look at the install (the admin console, the channels runner's gate): the
brand, the install's brand (``install_brand``: the one resolver every reader uses), the Claude
Code config dir plughost installed into and its registration, and ``plughost doctor``'s run and
last report (docs/payload.md, docs/gates.md)."""

from plughost.payload import doctor
from plughost.payload.bundler import load_brand, resolve_brand
from plughost.payload.registration import Registration
from plughost.runtime.install_brand import InstallBrand, install_brand
from plughost.runtime.install_record import config_dir_source

__all__ = ["load_brand", "resolve_brand", "install_brand", "InstallBrand", "Registration", "config_dir_source",
           "doctor"]
