"""The brand as the channels show it: its ``productName`` and the greeting that names it."""

from __future__ import annotations

from collections.abc import Mapping

GREETING = "Hello, and welcome to {product}! Ask me anything, for example about opening hours or orders."


def product_name(env: Mapping[str, str]) -> str:
    """The brand's ``productName`` (``PLUGHOST_BRAND``, default the default brand)."""
    from plughost.api.payload import load_brand, resolve_brand
    from plughost.api.settings import BRAND

    try:
        return load_brand(resolve_brand(BRAND.read(env) or "default")).product
    except Exception:  # a broken brand file is the gates' business; the greeting stays generic
        return "our service"


def greeting(env: Mapping[str, str]) -> str:
    return GREETING.format(product=product_name(env))
