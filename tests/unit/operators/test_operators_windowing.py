"""Event-time windows offline, exact outputs: tumbling, sliding and session
windows; late data, out-of-order data within the watermark, session merges,
EOF closing, and no state left behind once a key's windows close."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta, timezone

import pytest

import sparkwax as sw
from sparkwax.operators import (LATE_SESSION_ID, SessionWindower, SlidingWindower, Tagged,
                                TumblingWindower, WindowOut, collect_window, count_window,
                                fold_window, join_window, max_window, min_window,
                                reduce_window, tag, window_schema)
from sparkwax.testing import Batch, Crash, Eof, Runner, Tick, run, run_bounded

from kit import T0, at as t

TEN = TumblingWindower(timedelta(minutes=10), align_to=T0)
SLIDING = SlidingWindower(timedelta(minutes=10), timedelta(minutes=5), align_to=T0)
SESSIONS = SessionWindower(timedelta(minutes=10))


def ev(minutes, x=None):
    return {"ts": t(minutes), "x": x}


def W(window_id, open_minutes, close_minutes, value=None, late=None):
    return WindowOut(window_id, None if open_minutes is None else t(open_minutes),
                     None if close_minutes is None else t(close_minutes), value, late)


def xs(values):
    return [v["x"] for v in values]


# -- windowers --------------------------------------------------------------------


def test_window_ids_and_bounds():
    assert list(TEN.ids_for(t(0))) == [0]
    assert list(TEN.ids_for(t(9.99))) == [0]
    assert list(TEN.ids_for(t(10))) == [1]
    assert list(TEN.ids_for(t(-1))) == [-1]
    assert TEN.bounds(2) == (t(20), t(30))
    assert list(SLIDING.ids_for(t(7))) == [0, 1]
    assert SLIDING.bounds(1) == (t(5), t(15))
    assert list(SLIDING.ids_for(t(10))) == [1, 2]
    epoch = TumblingWindower("1 hour")  # default origin: the Unix epoch
    assert epoch.bounds(epoch.ids_for(t(61))[0]) == (t(60), t(120))
    assert TumblingWindower(timedelta(minutes=10), T0) == TEN  # Bytewax's argument order


def test_windower_validation():
    with pytest.raises(sw.ConfigError, match="longer than its length"):
        SlidingWindower(timedelta(minutes=5), timedelta(minutes=10), align_to=T0)
    with pytest.raises(sw.ConfigError, match="positive"):
        TumblingWindower(timedelta(0), align_to=T0)
    with pytest.raises(sw.ConfigError, match="aware"):
        TumblingWindower(timedelta(minutes=1), align_to=datetime(2024, 1, 1))
    with pytest.raises(sw.ConfigError, match="merger"):
        fold_window(SESSIONS, list, lambda acc, v: acc + [v], ordered=False)
    with pytest.raises(sw.ConfigError, match="windower"):
        count_window("ten minutes")


# -- tumbling -----------------------------------------------------------------------


def test_tumbling_out_of_order_within_the_watermark_and_eof_closing():
    time = sw.EventTime("ts", watermark="5 minutes")
    script = [
        Batch([("a", ev(1)), ("a", ev(8)), ("a", ev(3)), ("b", ev(2))]),  # watermark -> 3
        Batch([("a", ev(12)), ("a", ev(6)), ("b", ev(4))]),   # 6 and 4 are behind, not late
        Batch([("a", ev(2)), ("a", ev(25))]),                 # 2 <= watermark 7: dropped
        Eof(),                     # watermark 20 fires window 0; EOF closes the rest
    ]
    result = run(count_window(TEN), script, time=time)
    assert result.by_key == {"a": [W(0, 0, 10, 4), W(1, 10, 20, 1), W(2, 20, 30, 1)],
                             "b": [W(0, 0, 10, 2)]}
    assert result.late == 1          # dropped by the engine's watermark, not reported
    assert result.live_keys == 0


def test_windows_close_when_the_watermark_passes_and_keys_are_discarded():
    script = [Batch([("a", ev(1)), ("a", ev(2)), ("b", ev(3))]),
              Batch([("c", ev(25))])]               # moves the watermark to 25
    result = run(count_window(TEN), script, time=sw.EventTime("ts"))
    assert result.by_key == {"a": [W(0, 0, 10, 2)], "b": [W(0, 0, 10, 1)]}
    assert result.live_keys == 1                    # only c, with its open window [20, 30)
    assert result.snapshots["c"] == (None, None, ((2, t(20), t(30), 1, None),))


def test_late_values_are_reported_with_lateness():
    op = collect_window(TEN, lateness="2 minutes")
    script = [Batch([("a", ev(1, 1)), ("a", ev(9, 2)), ("a", ev(13, 3))]),
              Batch([("a", ev(8, 4)), ("a", ev(12, 5))]),
              Eof()]
    result = run(op, script, time=sw.EventTime("ts", watermark="30 minutes"))
    # 13 moves a's watermark to 11: window [0, 10) closes at once; 8 is then late
    # for it (reported, not counted); 12 still joins [10, 20), before 13 (ordered).
    assert [(w.window_id, w.value and xs(w.value), w.late and w.late["x"])
            for w in result.by_key["a"]] == [(0, [1, 2], None), (0, None, 4), (1, [5, 3], None)]
    assert result.by_key["a"][1] == W(0, 0, 10, late=ev(8, 4))
    assert result.late == 0


def test_late_output_of_a_bounded_input():
    items = [("a", ev(m, m)) for m in (1, 13, 8, 14, 2)]
    result = run_bounded(count_window(TEN, lateness="1 minute"), items,
                         time=sw.EventTime("ts", watermark="1 hour"), order_by=lambda v: 0)
    # arrival order kept (order_by constant): 13 moves a's watermark to 12, so 8 and 2
    # are late for window 0, which closed with 1 value.
    assert result.by_key == {"a": [W(0, 0, 10, 1), W(0, 0, 10, late=ev(8, 8)),
                                   W(0, 0, 10, late=ev(2, 2)), W(1, 10, 20, 2)]}


# -- sliding ------------------------------------------------------------------------


def test_sliding_windows_overlap():
    result = run(count_window(SLIDING), [Batch([("a", ev(1)), ("a", ev(7)), ("a", ev(12))]),
                                         Eof()], time=sw.EventTime("ts"))
    assert result.by_key == {"a": [W(-1, -5, 5, 1), W(0, 0, 10, 2), W(1, 5, 15, 2),
                                   W(2, 10, 20, 1)]}


def test_sliding_late_only_for_the_closed_windows():
    op = collect_window(SLIDING, lateness=timedelta(0))
    script = [Batch([("a", ev(1, 1)), ("a", ev(12, 2))]), Batch([("a", ev(8, 3))]), Eof()]
    result = run(op, script, time=sw.EventTime("ts", watermark="1 hour"))
    got = [(w.window_id, w.value and xs(w.value), w.late and w.late["x"])
           for w in result.by_key["a"]]
    # watermark 12 closed [-5, 5) and [0, 10); 8 is late for [0, 10) only (and
    # comes before 12 in [5, 15): values are in timestamp order).
    assert got == [(-1, [1], None), (0, [1], None), (0, None, 3), (1, [3, 2], None),
                   (2, [2], None)]


# -- sessions -------------------------------------------------------------------------


def test_session_merge_by_an_out_of_order_value():
    op = collect_window(SESSIONS)
    script = [Batch([("a", ev(0, 1)), ("a", ev(15, 2))]),   # two sessions
              Batch([("a", ev(7, 3))]),                     # within 10 min of both: merge
              Eof()]
    result = run(op, script, time=sw.EventTime("ts", watermark="30 minutes"))
    # Bytewax's metadata: session 0, from the first value's time to the last's
    assert result.by_key == {"a": [W(0, 0, 15, [ev(0, 1), ev(7, 3), ev(15, 2)])]}


def test_sessions_close_on_the_watermark_and_keys_keep_their_session_counter():
    op = count_window(SESSIONS)
    script = [Batch([("a", ev(0)), ("a", ev(5)), ("b", ev(1)), ("a", ev(40))]),
              Batch([("c", ev(60))]),     # watermark 40: a's first session and b close
              Batch([("c", ev(90))]),     # watermark 60: a's second session closes
              Batch([("d", ev(200))])]    # watermark 90: c's first session closes
    runner = Runner(op, time=sw.EventTime("ts"))
    live = []
    for step in script:
        runner.play(step)
        live.append(sorted(runner.blobs))
    result = runner.process_all_available()               # the trailing no-data batch: watermark 200
    # as in Bytewax, a key numbers its sessions 0, 1, ... for as long as it lives,
    # so it keeps that counter (one int) after its sessions close
    assert live == [["a", "b"], ["a", "b", "c"], ["a", "b", "c"], ["a", "b", "c", "d"]]
    assert result.by_key == {"a": [W(0, 0, 5, 2), W(1, 40, 40, 1)],
                             "b": [W(0, 1, 1, 1)],
                             "c": [W(0, 60, 60, 1), W(1, 90, 90, 1)]}
    assert result.snapshots["a"][2:] == ((), 2) and result.timers.keys() == {"d"}


def test_many_keys_keep_only_their_session_counter_after_their_sessions_close():
    items = [(f"user{n}", ev(n % 7)) for n in range(200)]
    script = [Batch(items), Batch([("clock", ev(500))])]
    result = run(count_window(SESSIONS), script + [Batch([("clock", ev(501))])],
                 time=sw.EventTime("ts"))
    assert len(result.outputs) == 200
    assert {result.snapshots[f"user{n}"][2:] for n in range(200)} == {((), 1)}
    assert result.timers.keys() == {"clock"}   # no timers for the closed keys


def test_session_late_values_with_lateness():
    op = count_window(SESSIONS, lateness="0 minutes")
    script = [Batch([("a", ev(0)), ("a", ev(30))]),   # 30 moves a's watermark: [0, 10) closes
              Batch([("a", ev(5)), ("a", ev(31))]),
              Eof()]
    result = run(op, script, time=sw.EventTime("ts", watermark="1 hour"))
    assert result.by_key == {"a": [W(0, 0, 0, 1), W(LATE_SESSION_ID, None, None, late=ev(5)),
                                   W(1, 30, 31, 2)]}


def test_session_merge_of_three_sessions_with_fold():
    op = fold_window(SESSIONS, list, lambda acc, v: acc + [v["x"]], lambda a, b: a + b)
    script = [Batch([("a", ev(0, "p")), ("a", ev(12, "q")), ("a", ev(24, "r"))]),
              Crash(),
              Batch([("a", ev(6, "s")), ("a", ev(18, "t"))]),
              Eof()]
    result = run(op, script, time=sw.EventTime("ts", watermark="1 hour"))
    assert result.by_key == {"a": [W(0, 0, 24, ["p", "s", "q", "t", "r"])]}


# -- a watermark that jumps past several windows at once -------------------------------
#
# A key's timer is its earliest close time; when it fires, on_notify reads
# sw.now() and closes every window that is due, in close-time order, in that
# one activation.

JUMP = sw.EventTime("ts", watermark="30 minutes")


def test_a_jump_past_three_tumbling_windows_closes_them_in_one_activation():
    runner = Runner(count_window(TEN), time=JUMP)
    runner.play(Batch([("a", ev(1)), ("a", ev(12)), ("a", ev(25)), ("a", ev(27))]))
    runner.play(Batch([("a", ev(55)), ("clock", ev(75))]))  # watermark still 0 here
    assert runner.result.outputs == []
    assert runner.result.activations == 3
    runner.play(Tick())                                      # watermark 45: a's timer fires
    assert runner.result.outputs == [("a", W(0, 0, 10, 1)), ("a", W(1, 10, 20, 1)),
                                     ("a", W(2, 20, 30, 2))]
    assert runner.result.activations == 4                    # a, once
    result = runner.process_all_available()
    # a's watermark is the last close time it closed, `known` the clock it saw
    assert result.snapshots["a"] == (t(30), t(45), ((5, t(50), t(60), 1, None),))
    assert result.timers == {"a": t(60), "clock": t(80)}


@pytest.mark.parametrize("windower,expected,live", [
    (SLIDING, [W(-1, -5, 5, 1), W(0, 0, 10, 1), W(1, 5, 15, 1), W(2, 10, 20, 1),
               W(4, 20, 30, 2), W(5, 25, 35, 2)], ["clock"]),
    (SESSIONS, [W(0, 1, 1, 1), W(1, 12, 12, 1), W(2, 25, 27, 2)], ["a", "clock"]),
])
def test_a_jump_closes_every_due_sliding_window_and_session(windower, expected, live):
    script = [Batch([("a", ev(1)), ("a", ev(12)), ("a", ev(25)), ("a", ev(27))]),
              Batch([("clock", ev(75))])]                    # watermark 0, then 45
    result = run(count_window(windower), script, time=JUMP)  # + the no-data batch at 45
    assert result.by_key["a"] == expected
    assert result.activations == 3                           # a, clock, a
    assert sorted(result.snapshots) == live                  # sessions: a's counter


def test_in_processing_time_every_window_due_by_the_batch_time_closes():
    script = [Batch([("a", ev(1)), ("a", ev(12)), ("a", ev(25))], now=t(0)),
              Tick(now=t(15)),              # closes [0, 10) only: [10, 20) is not due
              Tick(now=t(40))]              # closes [10, 20) and [20, 30) together
    runner = Runner(count_window(TEN))
    emitted = []
    for step in script:
        runner.play(step)
        emitted.append([w.window_id for _, w in runner.result.outputs[sum(map(len, emitted)):]])
    assert emitted == [[], [0], [1, 2]]
    assert runner.process_all_available().live_keys == 0


def test_the_key_watermark_is_the_last_close_time_closed_not_the_clock():
    # ProcessingTime, values stamped with the batch time: the batch at 40 closes the
    # session [0, 10) first; its own value at 40 is not late (the key's watermark
    # is 10, the last close time it closed), it opens the next session.
    script = [Batch([("a", ev(0)), ("a", ev(5))], now=t(5)),
              Batch([("a", ev(40))], now=t(40)),
              Eof()]
    result = run(count_window(SESSIONS), script)
    assert result.by_key == {"a": [W(0, 0, 5, 2), W(1, 40, 40, 1)]}


def test_without_a_clock_on_notify_closes_what_its_timer_tells():
    from sparkwax.clock import running_at
    from sparkwax.timers import to_epoch_ms

    windows = ((0, t(0), t(10), 1, None), (1, t(10), t(20), 1, None),
               (2, t(20), t(30), 2, None))
    logic = count_window(TEN)((None, None, windows))
    assert sw.now() is None
    assert logic.on_notify() == ([W(0, 0, 10, 1)], sw.RETAIN)     # the earliest only
    assert logic.snapshot() == (t(10), t(10), windows[1:])
    with running_at(sw.Clock(to_epoch_ms(t(25)), "processing")):
        assert logic.on_notify() == ([W(1, 10, 20, 1)], sw.RETAIN)     # 30 > now (25)
    assert logic.snapshot() == (t(20), t(25), windows[2:])


# -- the aggregations -------------------------------------------------------------------

VALUES = [("a", ev(1, 4)), ("a", ev(2, 9)), ("a", ev(3, 9)), ("a", ev(4, 1)), ("a", ev(12, 5))]


@pytest.mark.parametrize("op,first,second", [
    (count_window(TEN), 4, 1),
    (collect_window(TEN), [ev(1, 4), ev(2, 9), ev(3, 9), ev(4, 1)], [ev(12, 5)]),
    (fold_window(TEN, lambda: 0, lambda acc, v: acc + v["x"]), 23, 5),
    (reduce_window(TEN, lambda acc, v: {"ts": v["ts"], "x": acc["x"] * v["x"]}),
     {"ts": t(4), "x": 324}, ev(12, 5)),
    (max_window(TEN, by="x"), ev(2, 9), ev(12, 5)),        # tie: the earlier 9
    (min_window(TEN, by=lambda v: v["x"]), ev(4, 1), ev(12, 5)),
])
def test_window_aggregations(op, first, second):
    expected = {"a": [W(0, 0, 10, first), W(1, 10, 20, second)]}
    assert run_bounded(op, VALUES, time=sw.EventTime("ts")).by_key == expected
    streamed = run(op, [Batch(VALUES[:2]), Crash(), Batch(VALUES[2:]), Eof()],
                   time=sw.EventTime("ts", watermark="1 minute"))
    assert streamed.by_key == expected


def test_max_and_min_window_merge_sessions_keeping_the_earlier_tie():
    script = [Batch([("a", ev(0, 5)), ("a", ev(15, 5))]), Batch([("a", ev(7, 2))]), Eof()]
    time = sw.EventTime("ts", watermark="1 hour")
    assert run(max_window(SESSIONS, by="x"), script, time=time).by_key == {
        "a": [W(0, 0, 15, ev(0, 5))]}
    assert run(min_window(SESSIONS, by="x"), script, time=time).by_key == {
        "a": [W(0, 0, 15, ev(7, 2))]}
    assert run(reduce_window(SESSIONS, lambda acc, v: {"ts": acc["ts"], "x": acc["x"] + v["x"]}),
               script, time=time).by_key == {"a": [W(0, 0, 15, ev(0, 12))]}


# -- join per window -----------------------------------------------------------------


def orders_and_payments():
    return [Batch(tag("orders", [("k1", ev(1, "o1")), ("k2", ev(2, "o2"))])
                  + tag("payments", [("k1", ev(3, "p1")), ("k1", ev(4, "p2"))])),
            Batch(tag("orders", [("k1", ev(11, "o3"))])),
            Eof()]


def joined(result):
    return {k: [(w.window_id, tuple(v and v["x"] for v in w.value)) for w in ws]
            for k, ws in result.by_key.items()}


@pytest.mark.parametrize("emit_mode,insert_mode,expected", [
    ("final", "last", {"k1": [(0, ("o1", "p2")), (1, ("o3", None))], "k2": [(0, ("o2", None))]}),
    ("final", "first", {"k1": [(0, ("o1", "p1")), (1, ("o3", None))],
                        "k2": [(0, ("o2", None))]}),
    ("final", "product", {"k1": [(0, ("o1", "p1")), (0, ("o1", "p2")), (1, ("o3", None))],
                          "k2": [(0, ("o2", None))]}),
    ("complete", "last", {"k1": [(0, ("o1", "p1"))]}),
    ("running", "last", {"k1": [(0, ("o1", None)), (0, ("o1", "p1")), (0, ("o1", "p2")),
                                (1, ("o3", None))],
                         "k2": [(0, ("o2", None))]}),
])
def test_join_window(emit_mode, insert_mode, expected):
    op = join_window(TEN, ("orders", "payments"), emit_mode=emit_mode, insert_mode=insert_mode)
    result = run(op, orders_and_payments(), time=sw.EventTime("ts"))
    assert joined(result) == expected
    assert result.live_keys == 0


def test_join_window_over_sessions_merges_sides():
    op = join_window(SESSIONS, 2, emit_mode="final")
    script = [Batch([("k", Tagged(0, ev(0, "a"))), ("k", Tagged(1, ev(15, "b")))]),
              Batch([("k", Tagged(1, ev(7, "c")))]),     # bridges the sessions
              Eof()]
    result = run(op, script, time=sw.EventTime("ts", watermark="1 hour"))
    # "last" keeps the newer session's value for side 1
    assert joined(result) == {"k": [(0, ("a", "b"))]}


# -- state and outputs -----------------------------------------------------------------


def test_snapshots_are_plain_data():
    # unordered: session 0, the next one will be 1; ordered: the values are kept
    # until the close, which numbers the session (inside, its first time in µs)
    first_us = int((t(0) - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds()) * 10**6
    for ordered, window_id, acc, next_id in (
            (False, 0, [[ev(0, "a")], [ev(1, "b")]], 1),
            (True, first_us, [(0, ev(0, "a")), (1, ev(1, "b"))], 0)):
        runner = Runner(join_window(SESSIONS, 2, insert_mode="product", ordered=ordered),
                        time=sw.EventTime("ts"))
        runner.play(Batch([("k", Tagged(0, ev(0, "a"))), ("k", Tagged(1, ev(1, "b")))]))
        snapshot = runner.process_all_available().snapshots["k"]
        assert snapshot == (None, None, ((window_id, t(0), t(11), 2, acc),), next_id)
        assert b"sparkwax" not in pickle.dumps(snapshot)   # no sparkwax classes inside


def test_window_schema():
    assert window_schema("long") == ("window_id long, open_time timestamp, close_time "
                                     "timestamp, value long, late string")
    assert window_schema("double", late="struct<ts: timestamp>").endswith(
        "late struct<ts: timestamp>")


@pytest.mark.parametrize("ordered,xs_in_window", [(True, [2, 3, 1]), (False, [1, 2, 3])])
def test_ordered_applies_a_windows_values_in_time_order(ordered, xs_in_window):
    # arrival: 3 min (x=1), then 1 min (x=2) and 2 min (x=3) in later batches
    script = [Batch([("a", ev(3, 1))]), Batch([("a", ev(1, 2))]), Batch([("a", ev(2, 3))]),
              Eof()]
    time = sw.EventTime("ts", watermark="1 hour")
    collected = run(collect_window(TEN, ordered=ordered), script, time=time).by_key["a"]
    assert [xs(w.value) for w in collected] == [xs_in_window]
    folded = run(fold_window(TEN, list, lambda acc, v: acc + [v["x"]], ordered=ordered),
                 script, time=time).by_key["a"]
    assert [w.value for w in folded] == [xs_in_window]
    first = run(join_window(TEN, ["l", "r"], insert_mode="first", ordered=ordered),
                [Batch([("a", Tagged("l", ev(3, 1)))]), Batch([("a", Tagged("l", ev(1, 2)))]),
                 Eof()], time=time).by_key["a"]
    assert [w.value[0]["x"] for w in first] == [xs_in_window[0]]   # "first" in event time


def test_ordered_sessions_are_numbered_in_time_order_like_bytewaxs():
    # session [20] arrives before session [0]; Bytewax applies ordered values in
    # time order, so [0] is session 0 and [20] session 1
    script = [Batch([("a", ev(20, 1))]), Batch([("a", ev(0, 2))]), Eof()]
    time = sw.EventTime("ts", watermark="1 hour")
    ordered = run(collect_window(SESSIONS), script, time=time).by_key["a"]
    assert [(w.window_id, xs(w.value)) for w in ordered] == [(0, [2]), (1, [1])]
    unordered = run(count_window(SESSIONS), script, time=time).by_key["a"]
    assert sorted((w.window_id, w.open_time.minute) for w in unordered) == [(0, 20), (1, 0)]
