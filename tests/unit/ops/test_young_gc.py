"""young_gc.fewer_collections: the batch hosts' GC threshold, always restored."""

import gc

import pytest

from sparkwax.testing import Runner
from sparkwax.testing.reference import Counter
from sparkwax._ops.young_gc import fewer_collections


def test_the_thresholds_are_restored_after_an_error():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError):
        with fewer_collections(12_345):
            assert gc.get_threshold()[0] == 12_345
            raise RuntimeError("a logic failed")
    assert gc.get_threshold() == before


def test_a_higher_threshold_of_the_user_is_kept():
    before = gc.get_threshold()
    gc.set_threshold(50_000, *before[1:])
    try:
        with fewer_collections():
            assert gc.get_threshold()[0] == 50_000
    finally:
        gc.set_threshold(*before)


class Watching(Counter):
    """Records the young-generation threshold each on_item runs under."""
    seen = []

    def on_item(self, value):
        Watching.seen.append(gc.get_threshold()[0])
        return super().on_item(value)


def test_the_offline_runner_runs_a_batch_under_fewer_collections_and_restores_them():
    before = gc.get_threshold()
    Watching.seen.clear()
    runner = Runner(Watching)
    runner.batch([("a", 1), ("b", 2)])
    assert Watching.seen == [max(10_000, before[0])] * 2
    assert gc.get_threshold() == before
