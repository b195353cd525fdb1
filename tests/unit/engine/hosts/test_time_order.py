"""The per-key host's event-time pre-sort (``columns.time_order``) and the
driver's shortcuts for rows already in order (``Driver._arrange_ordered``,
``Driver._drop_late``): each gives exactly what the plain sort and scan give.

The Spark-side proof is tests/spark/hosts/test_differential.py; here the same
activation runs with and without the shortcuts, on pandas frames, no pyspark.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sparkwax import RETAIN, EventTime, StatefulBatchLogic
from sparkwax._driver import Driver
from sparkwax.engine.hosts.columns import (INTEGER, InputLayout, _stable_argsort, presorted,
                                     radix_argsort, read_group, time_order)
from sparkwax.step import Step

BASE_US = 1_700_000_000_000_000
LAYOUT = InputLayout(names=("v",), sources=("v",), kinds=(INTEGER,), scalar=True, order_by=(),
                     event_column="t")


class Seen(StatefulBatchLogic):
    """Emits the values of each batch, in the order they came."""

    def __init__(self, resume=None):
        pass

    def on_batch(self, values):
        return [list(values)], RETAIN

    def snapshot(self):
        return None


def driver() -> Driver:
    return Driver(Step.of(Seen, step_id="seen", batch=True,
                          time=EventTime("ts", watermark=timedelta(0))))


offsets = st.lists(st.one_of(st.integers(0, 50), st.integers(0, 1 << 40)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(offsets)
def test_stable_argsort_is_numpys(offs):
    times = np.array([BASE_US + o for o in offs], dtype=np.int64)
    assert _stable_argsort(times).tolist() == np.argsort(times, kind="stable").tolist() \
        if len(times) else True


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 20), max_size=60),
       st.sampled_from([21, 1 << 16, 1 << 17, 1 << 20, 1 << 33]))
def test_radix_argsort_is_numpys_for_every_span(small, span):
    """One pass, two passes or numpy's own sort, by span (packed's key numbers too)."""
    values = np.array([v * (span // 21) for v in small], dtype=np.int64)
    assert radix_argsort(values, span).tolist() == np.argsort(values, kind="stable").tolist()


@settings(max_examples=300, deadline=None)
@given(offsets, st.integers(-1, 60))
def test_pre_sorted_activation_is_the_plain_one(offs, watermark_at):
    """Same emits and late count with the host's pre-sort as without it,
    whatever the order, ties and the watermark (which makes some rows late)."""
    frame = pd.DataFrame({"v": np.arange(len(offs), dtype=np.int64),
                          "t": np.array([BASE_US + o for o in offs], dtype=np.int64)})
    now_ms = (BASE_US + watermark_at) // 1000
    plain = driver().activate("k", None, *read_group(frame, LAYOUT)[:1], now_ms,
                              event_times=read_group(frame, LAYOUT)[1])
    values, times, order = read_group(frame, LAYOUT, time_order(frame, LAYOUT))
    fast = driver().activate("k", None, values, now_ms, event_times=times, order=order)
    assert (fast.emits, fast.late) == (plain.emits, plain.late)
    kept = sorted((t, v) for v, t in enumerate(frame["t"].tolist()) if t > now_ms * 1000)
    assert fast.emits == ([[v for _, v in kept]] if kept else [])


@settings(max_examples=300, deadline=None)
@given(offsets, st.integers(-1, 60), st.booleans())
def test_the_hosts_ascending_claim_holds_and_changes_nothing(offs, watermark_at, with_null):
    """``presorted`` says "ascending" only when the times it reads are (no
    null: a null makes the column float); the driver then skips its check,
    with the same emits and late count as the plain activation."""
    times_us = [BASE_US + o for o in offs]
    if with_null and offs:
        times_us[len(offs) // 2] = None
    frame = pd.DataFrame({"v": np.arange(len(offs), dtype=np.int64), "t": times_us})
    if not with_null or not offs:
        frame["t"] = frame["t"].astype(np.int64)
    rows, ascending = presorted(frame, LAYOUT)
    values, times, order = read_group(frame, LAYOUT, rows)
    assert ascending == (len(offs) == 0 or not with_null)
    if ascending:
        assert None not in times and times == sorted(times)
    now_ms = (BASE_US + watermark_at) // 1000
    plain = driver().activate("k", None, *read_group(frame, LAYOUT)[:1], now_ms,
                              event_times=read_group(frame, LAYOUT)[1])
    fast = driver().activate("k", None, values, now_ms, event_times=times, order=order,
                             times_ascending=ascending)
    assert (fast.emits, fast.late) == (plain.emits, plain.late)


def test_the_driver_trusts_the_ascending_claim():
    """With ``times_ascending`` the driver takes the rows as they come (the
    claim replaces its pass over them; ``presorted`` makes it true)."""
    act = driver().activate("k", None, [0, 1, 2], 0, event_times=[30, 10, 20],
                            times_ascending=True)
    assert act.emits == [[0, 1, 2]]
    act = driver().activate("k", None, [0, 1, 2], 0, event_times=[30, 10, 20])
    assert act.emits == [[1, 2, 0]]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 20)), max_size=30), st.integers(-1, 21))
def test_drop_late_ordered_is_the_scan(times, watermark):
    """``ordered=True`` (ascending, no null) and the no-late shortcut agree
    with the row-by-row scan."""
    d = driver()
    values = list(range(len(times)))
    scan = ([v for v, t in zip(values, times) if t is not None and t > watermark],
            sum(1 for t in times if t is None or t <= watermark))
    kept, late = d._drop_late(values, times, watermark)
    assert (list(kept), late) == scan
    arranged, arranged_times, ordered = d._arrange_ordered("k", values, times, None)
    if ordered:
        assert None not in arranged_times and arranged_times == sorted(arranged_times)
        kept, late = d._drop_late(arranged, arranged_times, watermark, ordered=True)
        assert sorted(kept) == sorted(scan[0]) and late == scan[1]


def test_rows_in_order_are_not_copied():
    d = driver()
    values, times = [3, 1, 2], [5, 5, 7]
    arranged, arranged_times, ordered = d._arrange_ordered("k", values, times, None)
    assert arranged is values and arranged_times is times and ordered
    assert d._arrange_ordered("k", values, [5, None, 7], None)[2] is False
    frame = pd.DataFrame({"v": [1, 2], "t": [2.0, float("nan")]})  # a null: no pre-sort
    assert time_order(frame, LAYOUT) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 20)), st.integers(0, 5)),
                max_size=30), st.integers(-1, 21))
@example([(10, 2), (0, 1), (20, 0)], 5)  # by order_by: times 20, 0, 10; only 0 is late
def test_rows_put_in_order_by_another_column_keep_their_late_ones(rows, watermark):
    """With ``order_by`` the rows are sorted by it, not by event time: the
    event times are then not known to ascend, and the late rows are found by
    a scan wherever they sit."""
    times = [time for time, _ in rows]
    order = ([rank for _, rank in rows],)
    values = list(range(len(rows)))
    arranged, arranged_times, ordered = driver()._arrange_ordered("k", values, times, order)
    if ordered:
        assert None not in arranged_times and arranged_times == sorted(arranged_times)
    kept = sorted((rank, v) for v, (time, rank) in enumerate(rows)
                  if time is not None and time * 1000 > watermark * 1000)
    act = driver().activate("k", None, values, watermark,
                            event_times=[None if t is None else t * 1000 for t in times],
                            order=order)
    assert act.emits == ([[v for _, v in kept]] if kept else [])
    assert act.late == len(rows) - len(kept)
