"""The brand as the channels show it: its ``productName`` and the greeting that names it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from plughost.api.payload import install_brand, load_brand, resolve_brand

GREETING = "Hello, and welcome to {product}! Ask me anything, for example about opening hours or orders."
GENERIC = "our service"


def product_name(env: Mapping[str, str], plugins_dir: Path | str | None = None) -> str:
    """The install's brand's ``productName`` (``plughost.api.payload.install_brand``: ``PLUGHOST_BRAND``,
    the payload's ``brand.json``, the install record), the default brand's when there is none."""
    found = install_brand(env, plugins_dir)
    if found.product:
        return found.product
    if found.source != "none":  # named or recorded but unreadable: the install-brand gate says so
        return GENERIC
    try:
        return load_brand(resolve_brand("default")).product
    except Exception:  # a broken shipped brand is the gates' business; the greeting stays generic
        return GENERIC


def greeting(env: Mapping[str, str], plugins_dir: Path | str | None = None) -> str:
    return GREETING.format(product=product_name(env, plugins_dir))
