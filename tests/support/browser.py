"""Debian's headless Chromium driven by Playwright for Python, like a person would use a page
(keys typed, Enter pressed, the screen captured). Playwright's own browser downloads are never
used: the system `chromium` is launched through `executable_path`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

_DRIVER: Any = None
_OPEN = 0  # browsers open on the driver: the last one to close stops it


def _playwright() -> Any:
    """One Playwright driver while any browser is open (its sync API allows one per thread, and it
    holds an event loop on this thread that a later test's ``asyncio.run`` must not meet)."""
    global _DRIVER, _OPEN
    if _DRIVER is None:
        from playwright.sync_api import sync_playwright

        _DRIVER = sync_playwright().start()
    _OPEN += 1
    return _DRIVER


def _release() -> None:
    global _DRIVER, _OPEN
    _OPEN -= 1
    if _OPEN <= 0 and _DRIVER is not None:
        _DRIVER.stop()
        _DRIVER, _OPEN = None, 0


class Browser:
    """One Chromium with one page; a phone-sized viewport unless told otherwise."""

    def __init__(self, chromium: str, profile: Path, width: int = 390, height: int = 844) -> None:
        driver = _playwright()
        try:
            self.context = driver.chromium.launch_persistent_context(
                str(profile), executable_path=chromium, headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"],
                viewport={"width": width, "height": height}, device_scale_factor=2, is_mobile=width < 600,
                has_touch=width < 600)
        except BaseException:
            _release()
            raise
        self.page = self.context.pages[0] if self.context.pages else self.context.new_page()

    def eval(self, expression: str) -> Any:
        return self.page.evaluate(expression)

    def wait(self, expression: str, timeout: float = 60.0) -> Any:
        """Poll ``expression`` until truthy. Evaluated from outside the page (as ``eval`` does), not by
        ``wait_for_function``, whose in-page ``eval`` a page's ``script-src 'none'`` policy refuses."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.page.evaluate(expression)
            except Exception as exc:  # a navigation in flight destroys the context: ask again
                if "context was destroyed" not in str(exc) and "navigation" not in str(exc).lower():
                    raise
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"page never satisfied: {expression}")
            time.sleep(0.05)

    def open(self, url: str) -> None:
        self.page.goto(url, wait_until="load")

    def type(self, text: str) -> None:
        self.page.keyboard.type(text)

    def press_enter(self) -> None:
        self.page.keyboard.press("Enter")

    def screenshot(self, path: Path) -> Path:
        self.page.screenshot(path=str(path))
        return path

    def close(self) -> None:
        try:
            self.context.close()
        finally:
            _release()
