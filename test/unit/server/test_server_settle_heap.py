"""Once the caches have synced, the heap is frozen out of the cyclic collector's scans
and its young generation is collected less often."""

from __future__ import annotations

import gc

from mpi_operator.server.app import GC_YOUNG_THRESHOLD, settle_heap


def test_the_startup_heap_is_frozen_and_the_young_generation_grows() -> None:
    before = gc.get_threshold()
    try:
        gc.unfreeze()
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, *before[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
