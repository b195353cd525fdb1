"""stateful_filter, running fold/reduce, sum_window and mean_window offline:
exact outputs, crashes, EOF and check_logic."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import strategies as st

import sparkwax as sw
import sparkwax.operators as ops
from sparkwax.testing import Batch, Crash, Eof, check_logic, run, run_bounded
from sparkwax.testing.strategies import timestamped_items

from kit import T0, event as at

EVENT = sw.EventTime("ts")
ITEMS = timestamped_items(keys=st.sampled_from(["a", "b"]), values=st.integers(0, 5),
                          max_size=20)
TIME = sw.EventTime("ts", watermark="2 minutes")


# -- stateful_filter ----------------------------------------------------------------


def changed(last, value):
    """Keep a reading only when it differs from the key's previous one."""
    return value["v"], last is None or value["v"] != last


def test_stateful_filter_keeps_values_unchanged():
    script = [Batch([("s1", at(0, v=1)), ("s1", at(1, v=1)), ("s2", at(1, v=7))]),
              Crash(),
              Batch([("s1", at(2, v=2)), ("s1", at(3, v=2)), ("s1", at(4, v=1))])]
    result = run(ops.stateful_filter(changed), script)
    assert result.by_key == {"s1": [at(0, v=1), at(2, v=2), at(4, v=1)], "s2": [at(1, v=7)]}
    assert result.snapshots == {"s1": 1, "s2": 7}


def test_stateful_filter_none_state_discards():
    def first_two(count, value):
        count = (count or 0) + 1
        return (None if count == 3 else count), count <= 2      # resets after three

    result = run(ops.stateful_filter(first_two), [Batch([("k", n) for n in range(7)])])
    assert result.by_key == {"k": [0, 1, 3, 4, 6]}
    assert result.snapshots == {"k": 1}


@pytest.mark.parametrize("bad, message", [
    (lambda s, v: True, "2-tuple"),
    (lambda s, v: (s, 1), "keep as a bool"),
])
def test_stateful_filter_errors(bad, message):
    with pytest.raises(sw.CallbackError, match=message):
        run(ops.stateful_filter(bad), [Batch([("k", 1)])])
    with pytest.raises(sw.ConfigError, match="callable"):
        ops.stateful_filter("not a function")


# -- fold and reduce, after every value -----------------------------------------------


def test_fold_emits_after_every_value():
    script = [Batch([("a", 3), ("b", 1), ("a", 4)]), Crash(), Batch([("a", 2)]), Eof()]
    result = run(ops.fold(lambda: 0, lambda acc, v: acc + v), script)
    assert result.by_key == {"a": [3, 7, 9], "b": [1]}
    assert result.live_keys == 0                     # EOF discards without an emit


def test_fold_keeps_an_accumulator_of_none():
    def last_odd(acc, value):
        return value if value % 2 else acc

    result = run(ops.fold(lambda: None, last_odd), [Batch([("k", 2), ("k", 3), ("k", 4)])])
    assert result.by_key == {"k": [None, 3, 3]}
    assert result.snapshots == {"k": (3,)}


def test_reduce_emits_after_every_value():
    items = [("a", at(0, n=5)), ("a", at(1, n=2)), ("b", at(2, n=1)), ("a", at(3, n=9))]
    smallest = ops.reduce(lambda a, b: a if a["n"] <= b["n"] else b)
    result = run_bounded(smallest, items, time=EVENT)
    assert {k: [v["n"] for v in vs] for k, vs in result.by_key.items()} == {
        "a": [5, 2, 2], "b": [1]}
    streamed = run(ops.reduce(max), [Batch([("k", 1)]), Crash(), Batch([("k", 0), ("k", 4)])])
    assert streamed.by_key == {"k": [1, 1, 4]} and streamed.snapshots == {"k": (4,)}


def test_fold_and_reduce_match_their_final_versions_at_the_last_value():
    items = [(k, n) for n, k in enumerate("abcabca")]
    running = run_bounded(ops.fold(list, lambda acc, v: acc + [v]), items).by_key
    final = run_bounded(ops.fold_final(list, lambda acc, v: acc + [v]), items).by_key
    assert {k: vs[-1:] for k, vs in running.items()} == final
    running = run_bounded(ops.reduce(lambda a, b: a + b), items).by_key
    assert {k: vs[-1:] for k, vs in running.items()} == \
        run_bounded(ops.reduce_final(lambda a, b: a + b), items).by_key


def test_fold_and_reduce_need_callables():
    with pytest.raises(sw.ConfigError, match="fold needs callables"):
        ops.fold(list, "x")
    with pytest.raises(sw.ConfigError, match="reduce needs a callable"):
        ops.reduce(None)


# -- sum_window and mean_window -------------------------------------------------------

TEN = ops.TumblingWindower(timedelta(minutes=10), align_to=T0)


def test_sum_and_mean_per_tumbling_window():
    items = [("a", at(1, price=4)), ("a", at(3, price=5)), ("a", at(12, price=1.5)),
             ("a", at(14, price=None)), ("b", at(2, price=None))]
    sums = run_bounded(ops.sum_window(TEN, by="price"), items, time=EVENT)
    means = run_bounded(ops.mean_window(TEN, by="price"), items, time=EVENT)
    assert [(w.window_id, w.value) for w in sums.by_key["a"]] == [(0, 9), (1, 1.5)]
    assert [(w.window_id, w.value) for w in means.by_key["a"]] == [(0, 4.5), (1, 1.5)]
    # None is skipped like Spark's sum/avg; a window of Nones has no sum and no mean
    assert sums.by_key["b"] == [ops.WindowOut(0, T0, T0 + timedelta(minutes=10), None)]
    assert means.by_key["b"][0].value is None


def test_sum_and_mean_merge_sessions():
    sessions = ops.SessionWindower("10 minutes")
    script = [Batch([("a", at(0, n=1)), ("a", at(15, n=2))]),
              Batch([("a", at(7, n=6))]),                   # bridges the two sessions
              Eof()]
    time = sw.EventTime("ts", watermark="1 hour")
    (total,) = run(ops.sum_window(sessions, by="n"), script, time=time).by_key["a"]
    (mean,) = run(ops.mean_window(sessions, by="n"), script, time=time).by_key["a"]
    assert (total.value, mean.value) == (9, 3.0)
    # Bytewax's session metadata: close_time is the last value's time
    assert (mean.open_time, mean.close_time) == (T0, T0 + timedelta(minutes=15))


def test_sum_and_mean_of_plain_numbers():
    items = [("k", 2), ("k", 3)]
    time_of = (lambda v: T0)
    assert run_bounded(ops.mean_window(TEN, ts=time_of), items).by_key["k"][0].value == 2.5
    assert run_bounded(ops.sum_window(TEN, ts=time_of), items).by_key["k"][0].value == 5


# -- check_logic ------------------------------------------------------------------------


@pytest.mark.parametrize("builder", [
    ops.stateful_filter(lambda s, v: (None if v["value"] == 0 else (s or 0) + 1,
                                      (s or 0) % 2 == 0)),
    ops.fold(list, lambda acc, v: acc + [v["value"]]),
    ops.reduce(lambda a, b: a if a["value"] >= b["value"] else b),
    ops.sum_window(ops.SlidingWindower("10 minutes", "5 minutes"), by="value"),
    ops.mean_window(TEN, by="value", lateness="1 minute"),
    ops.mean_window(ops.SessionWindower("3 minutes"), by="value"),
], ids=["stateful_filter", "fold", "reduce", "sum_window", "mean_window",
        "mean_window_sessions"])
def test_check_logic(builder):
    check_logic(builder, time=TIME, items=ITEMS, max_examples=60)
