"""Bounded input (``run_bounded``): each key's items as one ordered sequence,
the key's own watermark advancing item by item in EventTime mode, then on_eof."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sparkwax import DISCARD, RETAIN, EventTime, StatefulBatchLogic, StatefulLogic
from sparkwax.testing import run_bounded
from sparkwax.testing.reference import (BatchCounter, Counter, SessionTracker,
                                        TransitionRecorder)

from kit import MIN, MS, NOON as T0


def at(minutes, ms=0):
    return T0 + minutes * MIN + ms * MS


def item(ident, gen=1):
    return ("item", ident, gen)


class ActivitySession(StatefulLogic):
    """Sessions with a 30 minute gap timer; "ping" values only move time on
    (they do not extend or open a session), so the key's watermark can pass
    the gap before the next click."""

    gap = timedelta(minutes=30)

    def __init__(self, resume=None):
        self.start, self.last, self.n = resume or (None, None, 0)

    def on_item(self, value):
        if value["kind"] == "click":
            self.start = self.start or value["ts"]
            self.last = value["ts"]
            self.n += 1
        return [], RETAIN

    def notify_at(self):
        return None if self.last is None else self.last + self.gap

    def on_notify(self):
        return [("notify", self.start, self.last, self.n)], DISCARD

    def on_eof(self):
        return ([("eof", self.start, self.last, self.n)] if self.n else []), DISCARD

    def snapshot(self):
        return (self.start, self.last, self.n)


def click(minutes, ms=0):
    return {"kind": "click", "ts": at(minutes, ms)}


def ping(minutes, ms=0):
    return {"kind": "ping", "ts": at(minutes, ms)}


class Deadline(StatefulBatchLogic):
    """A batch logic with a fixed timer: 30 minutes after the first event of a round."""

    def __init__(self, resume=None):
        self.first = resume

    def on_batch(self, values):
        if self.first is None:
            self.first = values[0]["ts"]
        return [("batch", [v["id"] for v in values])], RETAIN

    def notify_at(self):
        return None if self.first is None else self.first + timedelta(minutes=30)

    def on_notify(self):
        fired, self.first = self.notify_at(), None
        return [("notify", fired)], RETAIN

    def on_eof(self):
        return [("eof",)], RETAIN

    def snapshot(self):
        return self.first


# --- processing time (no event times) ---------------------------------------------


def test_one_sequence_per_key_then_eof_keys_sorted():
    items = [("b", {"id": 1}), ("a", {"id": 2}), ("b", {"id": 3}), ("a", {"id": 4}),
             ("c", {"id": 5, "discard": True})]
    result = run_bounded(TransitionRecorder, items)
    assert result.outputs == [
        ("a", item(2)), ("a", item(4)), ("a", ("eof", (2, 4), 1)),
        ("b", item(1)), ("b", item(3)), ("b", ("eof", (1, 3), 1)),
        ("c", item(5))]
    assert sorted(result.snapshots) == ["a", "b"]
    assert result.snapshots["a"]["seen"] == [2, 4]
    assert result.activations == 3


def test_discard_mid_sequence_rebuilds_fresh_logic():
    calls = []

    def builder(resume):
        calls.append(resume)
        return TransitionRecorder(resume)

    items = [("k", {"id": 1}), ("k", {"id": 2, "discard": True}), ("k", {"id": 3}),
             ("k", {"id": 4, "eof_discard": True})]
    result = run_bounded(builder, items)
    assert result.by_key == {"k": [item(1), item(2), item(3), item(4), ("eof", (3, 4), 1)]}
    assert calls == [None, None]
    assert result.snapshots == {} and result.live_keys == 0


def test_without_event_times_no_timer_fires_even_at_eof():
    items = [("k", {"id": 1, "notify": T0})]
    result = run_bounded(TransitionRecorder, items)
    assert result.by_key == {"k": [item(1), ("eof", (1,), 1)]}
    assert result.timers == {"k": T0}


def test_order_by_in_bounded_mode():
    items = [("k", {"id": 1, "n": 3}), ("k", {"id": 2, "n": 1}), ("k", {"id": 3, "n": 2})]
    assert run_bounded(TransitionRecorder, items, order_by="n").by_key == {
        "k": [item(2), item(3), item(1), ("eof", (2, 3, 1), 1)]}
    assert run_bounded(TransitionRecorder, items).by_key == {
        "k": [item(1), item(2), item(3), ("eof", (1, 2, 3), 1)]}


def test_batch_logic_gets_all_items_at_once_without_event_times():
    items = [("a", 1), ("b", 1), ("a", 1), ("a", 1)]
    result = run_bounded(BatchCounter, items, batch=True)
    assert result.by_key == {"a": [3], "b": [1]}
    assert result.snapshots == {"a": 3, "b": 1}


def test_counter_bounded_equals_streaming_totals():
    items = [(k, i) for i, k in enumerate("abcabca")]
    assert run_bounded(Counter, items).by_key == {"a": [1, 2, 3], "b": [1, 2], "c": [1, 2]}


# --- event time -----------------------------------------------------------------------


def test_gap_timer_closes_session_via_on_notify_before_next_item():
    time = EventTime("ts")
    items = [("u", click(0)), ("u", click(10)), ("u", ping(40)), ("u", click(41))]
    result = run_bounded(ActivitySession, items, time=time)
    # before the click at 12:41 the watermark is 12:40 == 12:10 + gap: due
    assert result.by_key == {"u": [("notify", at(0), at(10), 2),
                                   ("eof", at(41), at(41), 1)]}
    assert result.snapshots == {}


def test_gap_timer_one_ms_short_does_not_fire():
    time = EventTime("ts")
    items = [("u", click(0)), ("u", click(10)), ("u", ping(40, ms=-1)), ("u", click(41))]
    result = run_bounded(ActivitySession, items, time=time)
    assert result.by_key == {"u": [("eof", at(0), at(41), 3)]}


@pytest.mark.parametrize("ping_minutes, expected", [
    (45, [("notify", at(0), at(10), 2), ("eof", at(50), at(50), 1)]),
    (44, [("eof", at(0), at(50), 3)]),
])
def test_gap_timer_with_watermark_delay(ping_minutes, expected):
    time = EventTime("ts", watermark="5 minutes")
    items = [("u", click(0)), ("u", click(10)), ("u", ping(ping_minutes)), ("u", click(50))]
    assert run_bounded(ActivitySession, items, time=time).by_key == {"u": expected}


def test_timer_due_at_final_watermark_fires_before_eof():
    time = EventTime("ts")
    items = [("u", click(0)), ("u", ping(30)), ("v", click(0)), ("v", ping(29))]
    result = run_bounded(ActivitySession, items, time=time)
    assert result.by_key == {"u": [("notify", at(0), at(0), 1)],
                             "v": [("eof", at(0), at(0), 1)]}


def test_watermark_is_per_key():
    time = EventTime("ts")
    # w's late data would be late against u's times, but each key has its own watermark
    items = [("u", click(0)), ("u", ping(120)), ("w", click(0)), ("w", click(5))]
    result = run_bounded(ActivitySession, items, time=time)
    assert result.by_key == {"u": [("notify", at(0), at(0), 1)],
                             "w": [("eof", at(0), at(5), 2)]}
    assert result.late == 0


def test_reference_session_tracker_bounded():
    time = EventTime("ts")
    items = [("u", {"ts": at(0)}), ("u", {"ts": at(10)}), ("u", {"ts": at(50)}),
             ("v", {"ts": at(5)})]
    result = run_bounded(SessionTracker, items, time=time)
    assert result.by_key == {
        "u": [{"start": at(0), "end": at(10), "events": 2},
              {"start": at(50), "end": at(50), "events": 1}],
        "v": [{"start": at(5), "end": at(5), "events": 1}]}
    assert result.snapshots == {}


def test_late_items_dropped_item_by_item():
    time = EventTime("ts")
    values = [{"id": 1, "ts": at(0), "seq": 1}, {"id": 2, "ts": at(-1), "seq": 2},   # late
              {"id": 3, "ts": at(0), "seq": 3},                                      # late (==)
              {"id": 4, "ts": at(1), "seq": 4}, {"id": 5, "ts": at(0, ms=1), "seq": 5}]  # late
    result = run_bounded(TransitionRecorder, [("k", v) for v in values], time=time,
                         order_by="seq")
    assert result.by_key == {"k": [item(1), item(4), ("eof", (1, 4), 1)]}
    assert result.late == 3


def test_late_items_with_delay_kept_until_behind_watermark():
    time = EventTime("ts", watermark="2 minutes")
    values = [{"id": 1, "ts": at(10), "seq": 1}, {"id": 2, "ts": at(8, ms=1), "seq": 2},
              {"id": 3, "ts": at(8), "seq": 3}, {"id": 4, "ts": at(20), "seq": 4},
              {"id": 5, "ts": at(18, ms=1), "seq": 5}, {"id": 6, "ts": at(10), "seq": 6}]
    result = run_bounded(TransitionRecorder, [("k", v) for v in values], time=time,
                         order_by="seq")
    assert result.by_key == {"k": [item(1), item(2), item(4), item(5),
                                   ("eof", (1, 2, 4, 5), 1)]}
    assert result.late == 2


def test_equal_event_times_with_zero_delay_are_late_in_bounded_mode():
    """Pinned (surprising): bounded mode treats each item as its own micro-batch,
    so with the default delay of 0 a second event at the same time as the
    previous one of the same key is at the watermark, hence late."""
    values = [{"id": 1, "ts": T0}, {"id": 2, "ts": T0}, {"id": 3, "ts": at(1)}]
    items = [("k", v) for v in values]
    result = run_bounded(TransitionRecorder, items, time=EventTime("ts"))
    assert result.by_key == {"k": [item(1), item(3), ("eof", (1, 3), 1)]}
    assert result.late == 1
    kept = run_bounded(TransitionRecorder, items, time=EventTime("ts", watermark="1 second"))
    assert kept.by_key == {"k": [item(1), item(2), item(3), ("eof", (1, 2, 3), 1)]}
    assert kept.late == 0


def test_batch_logic_runs_split_at_timer_boundaries():
    time = EventTime("ts")
    ids = [(1, at(0)), (2, at(0)), (3, at(10)), (4, at(20)), (5, at(40)), (6, at(50)),
           (7, at(90))]
    items = [("k", {"id": i, "ts": ts}) for i, ts in ids]
    result = run_bounded(Deadline, items, time=time, batch=True)
    assert result.by_key == {"k": [
        ("batch", [1]),            # item 2 is late (== watermark 12:00): its own run
        ("batch", [3, 4, 5]),      # watermark before 6 is 12:40 >= 12:30: split
        ("notify", at(30)),
        ("batch", [6, 7]),         # new round from 12:50, timer 13:20
        ("notify", at(80)),        # due at the final watermark 13:30, before on_eof
        ("eof",)]}
    assert result.late == 1
    assert result.snapshots == {"k": None}
    assert result.timers == {}


def test_batch_logic_late_items_judged_one_by_one():
    time = EventTime("ts", watermark="1 minute")
    values = [{"id": 1, "ts": at(10), "seq": 1}, {"id": 2, "ts": at(9, ms=1), "seq": 2},
              {"id": 3, "ts": at(5), "seq": 3}, {"id": 4, "ts": at(11), "seq": 4},
              {"id": 5, "ts": at(10), "seq": 5}]
    result = run_bounded(Deadline, [("k", v) for v in values], time=time, batch=True,
                         order_by="seq")
    assert result.by_key == {"k": [("batch", [1, 2]), ("batch", [4]), ("eof",)]}
    assert result.late == 2


def test_pending_timer_reported_after_bounded_run():
    time = EventTime("ts")
    result = run_bounded(Deadline, [("k", {"id": 1, "ts": T0})], time=time, batch=True)
    assert result.by_key == {"k": [("batch", [1]), ("eof",)]}
    assert result.timers == {"k": at(30)}
    assert result.snapshots == {"k": T0}
