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


def test_a_settled_server_heap_is_frozen_and_collects_its_young_less_often() -> None:
    import subprocess
    import sys

    code = ("import gc; from plughost.util.gcpause import SERVER_YOUNG, settle_heap; before = gc.get_threshold(); "
            "settle_heap(); after = gc.get_threshold(); "
            "assert gc.get_freeze_count() > 1000, gc.get_freeze_count(); "
            "assert after == (SERVER_YOUNG, *before[1:]), after; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr
