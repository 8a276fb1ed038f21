"""plughost.util.gcpause: the collector is off inside and as it was after, even when the pass fails."""

from __future__ import annotations

import gc

import pytest

from plughost.util.gcpause import gc_paused


def test_the_collector_is_off_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("a failed pass")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # left off when it was off
    finally:
        gc.enable()
