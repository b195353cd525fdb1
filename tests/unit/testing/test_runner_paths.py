"""The offline runner's two ways of grouping a batch give the same run.

A batch with many keys is grouped by one stable sort (no list per key living
through the batch); other batches by a dict. ``_MANY_KEYS`` picks the path:
these tests force each path on the same scripts and compare per key.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkwax.metrics import FIELDS, StepMetrics
from sparkwax.testing import Batch, Runner, run
from sparkwax.testing import runner as runner_module
from sparkwax.testing.reference import Counter, TransitionRecorder
from sparkwax.testing.strategies import START, keyed_items, scripts

SORT_ALWAYS, SORT_NEVER = 1, 10 ** 9


def run_with(monkeypatch, many_keys, builder, script, **options):
    monkeypatch.setattr(runner_module, "_MANY_KEYS", many_keys)
    return run(builder, script, **options)


def same_run(left, right):
    assert left.by_key == right.by_key
    assert left.snapshots == right.snapshots
    assert left.timers == right.timers
    assert left.activations == right.activations
    assert left.metrics.deterministic() == right.metrics.deterministic()
    assert [m.deterministic() for m in left.batch_metrics] == \
        [m.deterministic() for m in right.batch_metrics]


class Echo(Counter):
    """Emits ``(count, value)``: the order of a key's values shows."""

    def on_item(self, value):
        self.count += 1
        return [(self.count, value)], value % 11 == 0


ITEMS = st.one_of(  # batches of int keys, of str keys (sorted), of mixed keys (dict)
    keyed_items(keys=st.integers(-3, 40), max_size=40),
    keyed_items(keys=st.sampled_from(["a", "b", "c", "é"]), max_size=40),
    keyed_items(keys=st.sampled_from([1, True, False, 1.0, 2.5, b"x", "a"]), max_size=40))


@settings(max_examples=60, deadline=None)
@given(script=scripts(items=ITEMS),
       restore=st.sampled_from(["always", "on_crash"]))
def test_sorted_and_dict_grouping_agree(script, restore):
    # Mixed str/int keys, bool and float keys fall back to the dict inside
    # the sorted path's own checks; the rest is sorted: both must agree.
    with pytest.MonkeyPatch.context() as patch:
        sorted_run = run_with(patch, SORT_ALWAYS, Echo, script, restore=restore)
        dict_run = run_with(patch, SORT_NEVER, Echo, script, restore=restore)
    same_run(sorted_run, dict_run)


def recorder_items(keys):
    return [(key, {"id": n, "discard": n % 7 == 3,
                   "notify": START + timedelta(seconds=n % 3) if n % 5 == 0 else None})
            for n, key in enumerate(keys)]


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_many_keys_with_discards_and_timers(monkeypatch, restore):
    # 1,500 keys per batch (the sorted path by default), DISCARD mid-batch,
    # timers, and timers due at keys without data in a later batch (the dict path).
    first = recorder_items([k % 1500 for k in range(4000)])
    second = recorder_items([k % 700 for k in range(1000)])
    script = [Batch(first, now=START), Batch(second, now=START + timedelta(seconds=5)),
              Batch(first[:2000], now=START + timedelta(seconds=9))]
    by_sort = run_with(monkeypatch, 1000, TransitionRecorder, script, restore=restore)
    by_dict = run_with(monkeypatch, SORT_NEVER, TransitionRecorder, script, restore=restore)
    same_run(by_sort, by_dict)
    assert by_sort.metrics.timers_fired > 0 and by_sort.metrics.keys_discarded > 0


def test_a_malformed_item_in_a_large_batch_is_an_input_error():
    items = [(k, k) for k in range(2000)] + [["bad", 1]]
    with pytest.raises(Exception) as info:
        Runner(Counter).batch(items)
    assert type(info.value).__name__ == "InputError" and "bad" in str(info.value)


def test_metrics_add_and_values_field_by_field():
    left = StepMetrics(*range(1, 8))
    right = StepMetrics(*range(10, 80, 10))
    assert left.values() == tuple(getattr(left, name) for name in FIELDS)
    assert (left + right).as_dict() == {name: getattr(left, name) + getattr(right, name)
                                        for name in FIELDS}


def test_counts_of_a_failed_batch_stay_with_its_outputs():
    class FailsAtFive(Counter):
        def on_item(self, value):
            if value == 5:
                raise ValueError("five")
            return super().on_item(value)

    runner = Runner(FailsAtFive)
    with pytest.raises(Exception):
        runner.batch([(k, k) for k in range(10)])
    assert runner.result.activations == len(runner.result.outputs) == 5


@settings(max_examples=40, deadline=None)
@given(script=scripts(items=ITEMS), restore=st.sampled_from(["always", "on_crash"]),
       chunk=st.integers(1, 5))
def test_a_batch_in_chunks_is_the_batch_in_one_call(script, restore, chunk):
    # The runner hands the driver ``_CHUNK`` keys at a time (their results die
    # before the collector sees them); any chunk size gives the same run.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner_module, "_CHUNK", chunk)
        chunked = run(Echo, script, restore=restore)
        patch.setattr(runner_module, "_CHUNK", 10 ** 9)
        whole = run(Echo, script, restore=restore)
    same_run(chunked, whole)


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_an_error_in_a_later_chunk_keeps_the_chunks_before_it(monkeypatch, restore):
    class FailsAt(Counter):
        def on_item(self, value):
            if value == 1100:
                raise ValueError("1100")
            return super().on_item(value)

    monkeypatch.setattr(runner_module, "_CHUNK", 512)  # key 1100 is in the third chunk
    runner = Runner(FailsAt, restore=restore)
    with pytest.raises(Exception) as info:
        runner.batch([(k, k) for k in range(1500)])
    assert "1100" in str(info.value)
    assert runner.result.activations == len(runner.result.outputs) == 1100
    assert runner.result.outputs[-1] == (1099, 1)
    kept = runner.blobs if restore == "always" else runner.live
    assert sorted(kept) == list(range(1100))
