"""Call order of one activation (docs/semantics.md "One activation of one key"), pinned through the
offline runner, which drives the same ``sparkwax._driver.Driver`` as Spark.

Every test asserts exact per-key outputs; most run with both restore modes
(``"always"``: rebuild from the encoded snapshot at every activation, as on
Spark; ``"on_crash"``: keep live objects between batches).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from sparkwax import (DISCARD, RETAIN, ConfigError, EventTime, InputError, ProcessingTime,
                      StatefulBatchLogic, StatefulLogic)
from sparkwax.testing import Batch, Crash, Eof, Runner, Tick, run
from sparkwax.testing.reference import BatchCounter, Counter, TransitionRecorder

from kit import MIN, MS, SEC, US, NOON as T0

RESTORE = pytest.mark.parametrize("restore", ["always", "on_crash"])


def r(ident, **commands):
    """A TransitionRecorder value."""
    return {"id": ident, **commands}


def item(ident, gen=1):
    return ("item", ident, gen)


def counting(builder):
    """Wrap a builder, recording every resume state it is called with."""
    calls = []

    def wrapped(resume):
        calls.append(resume)
        return builder(resume)

    return wrapped, calls


class Sticky(StatefulLogic):
    """on_item sets the timer to the value; on_notify never clears it."""

    def __init__(self, resume=None):
        self.at, self.fired = resume or (None, 0)

    def on_item(self, value):
        self.at = value["at"] if isinstance(value, dict) else value
        return [("item", self.at)], RETAIN

    def on_notify(self):
        self.fired += 1
        return [("notify", self.fired)], RETAIN

    def notify_at(self):
        return self.at

    def snapshot(self):
        return (self.at, self.fired)


class EofMarks(StatefulLogic):
    """Changes its state in on_eof and keeps it."""

    def __init__(self, resume=None):
        state = resume or {"n": 0, "eofs": 0}
        self.n, self.eofs = state["n"], state["eofs"]

    def on_item(self, value):
        self.n += 1
        return [], RETAIN

    def on_eof(self):
        self.eofs += 1
        return [("eof", self.n, self.eofs)], RETAIN

    def snapshot(self):
        return {"n": self.n, "eofs": self.eofs}


class Echo(StatefulLogic):
    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        return [value], RETAIN

    def snapshot(self):
        return None


class BatchLog(StatefulBatchLogic):
    """A batch logic recording every callback; a value dict may set the timer
    (``notify``) or ask for DISCARD (``discard``)."""

    def __init__(self, resume=None):
        self.batches, self.at = resume or (0, None)

    def on_batch(self, values):
        self.batches += 1
        out = [("batch", self.batches, [v["id"] for v in values])]
        discard = False
        for v in values:
            if "notify" in v:
                self.at = v["notify"]
            discard = discard or v.get("discard", False)
        return out, discard

    def on_notify(self):
        fired, self.at = self.at, None
        return [("notify", fired)], RETAIN

    def on_eof(self):
        return [("eof", self.batches)], RETAIN

    def notify_at(self):
        return self.at

    def snapshot(self):
        return (self.batches, self.at)


# --- RETAIN / DISCARD on each callback -------------------------------------------


@RESTORE
def test_retain_on_item_keeps_state_across_batches(restore):
    result = run(TransitionRecorder, [Batch([("k", r(1)), ("k", r(2))]), Batch([("k", r(3))])],
                 restore=restore)
    assert result.by_key == {"k": [item(1), item(2), item(3)]}
    assert result.snapshots["k"]["seen"] == [1, 2, 3]
    assert result.live_keys == 1


@RESTORE
def test_discard_mid_batch_rebuilds_with_builder_none(restore):
    builder, calls = counting(TransitionRecorder)
    script = [Batch([("k", r(1)), ("k", r(2, discard=True)), ("k", r(3))]), Eof()]
    result = run(builder, script, restore=restore)
    # The eof shows only what the fresh logic saw: item 3.
    assert result.by_key == {"k": [item(1), item(2), item(3), ("eof", (3,), 1)]}
    assert calls[:2] == [None, None]
    if restore == "always":
        # the Eof activation restores from the committed snapshot of the fresh logic
        assert len(calls) == 3 and calls[2]["seen"] == [3]
    else:
        assert len(calls) == 2
    assert result.snapshots["k"]["seen"] == [3]


@RESTORE
def test_discard_as_last_item_removes_state_and_next_batch_starts_fresh(restore):
    builder, calls = counting(TransitionRecorder)
    runner = Runner(builder, restore=restore)
    runner.batch([("a", r(1)), ("b", r(2, discard=True))])
    mid = runner.process_all_available()
    assert mid.live_keys == 1 and list(mid.snapshots) == ["a"]
    runner.batch([("b", r(3))])
    runner.eof()
    result = runner.process_all_available()
    assert result.by_key == {"a": [item(1), ("eof", (1,), 1)],
                             "b": [item(2), item(3), ("eof", (3,), 1)]}
    assert sorted(result.snapshots) == ["a", "b"]
    # b was built fresh twice (no resume state ever reached it after the discard)
    assert calls.count(None) == 3


@RESTORE
@pytest.mark.parametrize("discard", [False, True])
def test_on_notify_retain_or_discard(restore, discard):
    script = [Batch([("k", r(1, notify=T0 + SEC, notify_discard=discard))], now=T0),
              Tick(now=T0 + SEC), Eof()]
    result = run(TransitionRecorder, script, restore=restore)
    expected = [item(1), ("notify", T0 + SEC, 1)]
    if not discard:
        expected.append(("eof", (1,), 1))
    assert result.by_key == {"k": expected}
    assert result.live_keys == (0 if discard else 1)
    assert result.timers == {}


@RESTORE
@pytest.mark.parametrize("discard", [False, True])
def test_on_eof_retain_or_discard(restore, discard):
    script = [Batch([("k", r(1, eof_discard=discard)), ("j", r(2))]), Eof()]
    result = run(TransitionRecorder, script, restore=restore)
    assert result.by_key == {"j": [item(2), ("eof", (2,), 1)],
                             "k": [item(1), ("eof", (1,), 1)]}
    assert sorted(result.snapshots) == (["j"] if discard else ["j", "k"])
    assert result.live_keys == (1 if discard else 2)


@RESTORE
def test_discard_in_on_notify_then_item_in_same_activation_gets_fresh_logic(restore):
    builder, calls = counting(TransitionRecorder)
    script = [Batch([("k", r(1, notify=T0 + SEC, notify_discard=True))], now=T0),
              Batch([("k", r(2))], now=T0 + SEC), Eof()]
    result = run(builder, script, restore=restore)
    assert result.by_key == {"k": [item(1), ("notify", T0 + SEC, 1), item(2),
                                   ("eof", (2,), 1)]}
    assert calls.count(None) == 2


# --- timers ---------------------------------------------------------------------


@RESTORE
def test_due_timer_fires_before_the_items_of_the_activation(restore):
    script = [Batch([("k", r(1, notify=T0 + 10 * SEC))], now=T0),
              Batch([("k", r(2)), ("k", r(3))], now=T0 + 10 * SEC)]
    result = run(TransitionRecorder, script, restore=restore)
    assert result.by_key == {"k": [item(1), ("notify", T0 + 10 * SEC, 1), item(2), item(3)]}
    assert result.timers == {}


@RESTORE
def test_timer_equal_to_now_is_due_one_ms_before_is_not(restore):
    at = T0 + 10 * SEC
    runner = Runner(TransitionRecorder, restore=restore)
    runner.batch([("k", r(1, notify=at))], now=T0)
    runner.tick(now=at - MS)
    assert runner.process_all_available().by_key == {"k": [item(1)]}
    runner.tick(now=at)
    assert runner.process_all_available().by_key == {"k": [item(1), ("notify", at, 1)]}
    # the same with data for the key in both batches
    script = [Batch([("k", r(1, notify=at))], now=T0), Batch([("k", r(2))], now=at - MS),
              Batch([("k", r(3))], now=at)]
    result = run(TransitionRecorder, script, restore=restore)
    assert result.by_key == {"k": [item(1), item(2), ("notify", at, 1), item(3)]}


@RESTORE
def test_sub_millisecond_timer_is_due_only_once_now_reaches_it(restore):
    at = T0 + 10 * SEC + 500 * US      # rounded up to the next ms for the host
    script = [Batch([("k", r(1, notify=at))], now=T0),
              Batch([("k", r(2))], now=T0 + 10 * SEC),
              Batch([("k", r(3))], now=T0 + 10 * SEC + MS)]
    result = run(TransitionRecorder, script, restore=restore)
    assert result.by_key == {"k": [item(1), item(2), ("notify", at, 1), item(3)]}


@RESTORE
def test_none_from_notify_at_cancels_the_timer(restore):
    script = [Batch([("k", r(1, notify=T0 + 10 * SEC))], now=T0),
              Batch([("k", r(2, notify=None))], now=T0 + SEC),
              Tick(now=T0 + 10 * SEC), Tick(now=T0 + timedelta(hours=1))]
    result = run(TransitionRecorder, script, restore=restore)
    assert result.by_key == {"k": [item(1), item(2)]}
    assert result.timers == {}


@RESTORE
def test_timer_moved_later_fires_only_at_the_new_time(restore):
    script = [Batch([("k", r(1, notify=T0 + 10 * SEC))], now=T0),
              Batch([("k", r(2, notify=T0 + 20 * SEC))], now=T0 + SEC),
              Tick(now=T0 + 15 * SEC), Tick(now=T0 + 20 * SEC)]
    result = run(TransitionRecorder, script, restore=restore)
    assert result.by_key == {"k": [item(1), item(2), ("notify", T0 + 20 * SEC, 1)]}


@RESTORE
def test_pending_timer_is_reported_in_result_timers(restore):
    at = T0 + timedelta(hours=2)
    result = run(TransitionRecorder, [Batch([("k", r(1, notify=at))], now=T0)], restore=restore)
    assert result.timers == {"k": at}
    assert result.snapshots["k"]["notify"] == at


@RESTORE
def test_still_due_timer_fires_again_at_next_activation_not_in_a_loop(restore):
    at = T0 + SEC
    script = [Batch([("k", at)], now=T0),
              Tick(now=at),                 # due: fires once; on_notify keeps it due
              Tick(now=at),                 # same now: no activation, no loop
              Tick(now=at + SEC),           # time moved: fires again, once
              Batch([("j", at)], now=at + SEC),   # other key's batch, same now: not k
              Batch([("k", at)], now=at + SEC)]   # k has data: still due -> fires first
    result = run(Sticky, script, restore=restore)
    assert result.by_key == {
        "j": [("item", at)],
        "k": [("item", at), ("notify", 1), ("notify", 2), ("notify", 3), ("item", at)],
    }
    assert result.activations == 5
    assert result.timers == {"j": at, "k": at}


@RESTORE
def test_event_time_still_due_timer_waits_for_the_watermark_to_move(restore):
    time = EventTime("ts")
    script = [Batch([("k", {"ts": T0, "at": T0})]),     # after: watermark 12:00
              Batch([("j", {"ts": T0, "at": None})]),    # k due: fires once, stays due
              Batch([("j", {"ts": T0 - MIN, "at": None})]),   # same watermark: not again
              Tick(),
              Batch([("j", {"ts": T0 + MIN, "at": None})])]   # watermark 12:01: fires again
    result = run(Sticky, script, time=time, restore=restore)
    assert result.by_key == {"j": [("item", None)],
                             "k": [("item", T0), ("notify", 1), ("notify", 2)]}
    assert result.late == 2


@RESTORE
def test_processing_time_still_due_timer_needs_two_ms(restore):
    """Spark's ProcessingTimeTimeout only takes a duration > 0 and fires when
    ``timeout < batch time``: a timer re-armed at ``now`` is woken at now + 2 ms
    at the earliest, not now + 1 ms (pinned host rule, see timers.py)."""
    at = T0 + SEC
    script = [Batch([("k", at)], now=T0), Tick(now=at), Tick(now=at + MS),
              Tick(now=at + 2 * MS)]
    result = run(Sticky, script, restore=restore)
    assert result.by_key == {"k": [("item", at), ("notify", 1), ("notify", 2)]}


@RESTORE
def test_processing_time_timer_one_ms_after_batch_wakes_on_tick_one_ms_late(restore):
    """Same Spark limit for a fresh timer at batch time + 1 ms: a Tick at
    exactly the timer does not wake the key (the timer is due by the contract,
    but Spark cannot arm a duration of 0); data for the key does."""
    at = T0 + MS
    ticks = run(TransitionRecorder, [Batch([("k", r(1, notify=at))], now=T0), Tick(now=at)],
                restore=restore)
    assert ticks.by_key == {"k": [item(1)]}
    data = run(TransitionRecorder, [Batch([("k", r(1, notify=at))], now=T0),
                                    Batch([("k", r(2))], now=at)], restore=restore)
    assert data.by_key == {"k": [item(1), ("notify", at, 1), item(2)]}


@RESTORE
def test_timer_due_at_eof_fires_before_on_eof(restore):
    script = [Batch([("k", r(1, notify=T0 + SEC))], now=T0), Tick(now=T0 + 2 * SEC), Eof()]
    # the Tick already fired it; then on_eof
    result = run(TransitionRecorder, script, restore=restore)
    assert result.by_key == {"k": [item(1), ("notify", T0 + SEC, 1), ("eof", (1,), 1)]}
    # a timer still due when Eof comes (same now) fires once more, before on_eof
    result = run(Sticky, [Batch([("k", T0)], now=T0), Eof()], restore=restore)
    assert result.by_key == {"k": [("item", T0), ("notify", 1)]}
    # not due at Eof: no on_notify
    result = run(TransitionRecorder, [Batch([("k", r(1, notify=T0 + MS))], now=T0), Eof()],
                 restore=restore)
    assert result.by_key == {"k": [item(1), ("eof", (1,), 1)]}


@RESTORE
def test_processing_time_now_from_batch_aware_non_utc(restore):
    plus2 = timezone(timedelta(hours=2))
    at = T0 + 10 * SEC
    script = [Batch([("k", r(1, notify=at))], now=T0.astimezone(plus2)),
              Tick(now=(at - MS).astimezone(plus2)), Tick(now=at.astimezone(plus2))]
    result = run(TransitionRecorder, script, restore=restore)
    assert result.by_key == {"k": [item(1), ("notify", at, 1)]}


def test_batch_without_now_keeps_the_previous_now():
    at = T0 + SEC
    script = [Batch([("k", r(1, notify=at))], now=T0), Tick(now=at + SEC),
              Batch([("k", r(2, notify=at + SEC))]),    # now is still at + 1 s
              Batch([("j", r(3))])]                        # other key, same now
    result = run(TransitionRecorder, script)
    # item 2 sets a timer equal to now; it fires at the next activation of k, which
    # only comes when time moves on
    assert result.by_key == {"j": [item(3)], "k": [item(1), ("notify", at, 1), item(2)]}
    assert result.timers == {"k": at + SEC}


def test_processing_time_naive_now_is_rejected():
    with pytest.raises(ConfigError, match="aware"):
        run(Counter, [Batch([("k", 1)], now=datetime(2024, 1, 1))])
    with pytest.raises(ConfigError):
        run(Counter, [Tick(now=datetime(2024, 1, 1))])


# --- EOF and snapshots -------------------------------------------------------------


@RESTORE
def test_on_eof_for_keys_without_rows_in_the_last_batch(restore):
    script = [Batch([("a", r(1)), ("b", r(2))]), Batch([("a", r(3))]), Eof()]
    result = run(TransitionRecorder, script, restore=restore)
    assert result.by_key == {"a": [item(1), item(3), ("eof", (1, 3), 1)],
                             "b": [item(2), ("eof", (2,), 1)]}
    assert [k for k, v in result.outputs if v[0] == "eof"] == ["a", "b"]


@RESTORE
def test_on_eof_after_crash_restores_every_key(restore):
    script = [Batch([("a", r(1)), ("b", r(2))]), Crash(), Batch([("a", r(3))]), Crash(), Eof()]
    result = run(TransitionRecorder, script, restore=restore)
    assert result.by_key == {"a": [item(1), item(3), ("eof", (1, 3), 1)],
                             "b": [item(2), ("eof", (2,), 1)]}


@RESTORE
def test_state_changed_in_on_eof_is_persisted(restore):
    script = [Batch([("k", "x"), ("k", "y")]), Eof()]
    result = run(EofMarks, script, restore=restore)
    assert result.by_key == {"k": [("eof", 2, 1)]}
    assert result.snapshots == {"k": {"n": 2, "eofs": 1}}

    # Eof() ends the run: Spark's finish leaves the checkpoint as it was, so
    # nothing may build on what on_eof committed (docs/semantics.md, EOF).
    for after in (Crash(), Eof(), Batch([("k", "z")]), Tick()):
        with pytest.raises(ConfigError, match=rf"step 2 \({type(after).__name__}\) comes "
                                              r"after Eof\(\).*continues from the state "
                                              r"before EOF"):
            run(EofMarks, script + [after], restore=restore)
    runner = Runner(EofMarks, restore=restore)
    runner.eof()
    for call in (runner.eof, runner.crash, runner.tick, lambda: runner.batch([("k", 1)])):
        with pytest.raises(ConfigError, match="after Eof"):
            call()


@RESTORE
def test_restore_rebuilds_from_snapshot_every_activation_or_only_after_crash(restore):
    builder, calls = counting(Counter)
    run(builder, [Batch([("k", 1)]), Batch([("k", 2)]), Crash(), Batch([("k", 3)])],
        restore=restore)
    if restore == "always":
        assert calls == [None, 1, 2]
    else:
        assert calls == [None, 2]


def test_restore_mode_must_be_known():
    with pytest.raises(ConfigError):
        Runner(Counter, restore="sometimes")
    with pytest.raises(ConfigError):
        Runner(Counter, time="event")
    with pytest.raises(ConfigError):
        run(Counter, ["not a step"])
    with pytest.raises(InputError):
        run(Counter, [Batch(["k"])])


# --- EventTime ----------------------------------------------------------------------


def ev(ident, at, **commands):
    return {"id": ident, "ts": at, **commands}


@RESTORE
def test_event_time_watermark_comes_from_earlier_batches(restore):
    time = EventTime("ts", watermark="10 minutes")
    script = [
        # watermark 0 in the first batch: nothing is late, even 11:00
        Batch([("k", ev(1, T0)), ("k", ev(2, T0 - 60 * MIN))]),
        # watermark = 12:00 - 10 min = 11:50: 11:50 is late (equal), 11:51 is not
        Batch([("k", ev(3, T0 - 9 * MIN)), ("k", ev(4, T0 - 10 * MIN)),
               ("k", ev(5, T0 - 40 * MIN))]),
        # no newer data in batch 2, so batch 3 still has watermark 11:50
        Batch([("k", ev(6, T0 - 10 * MIN + MS)), ("k", ev(7, T0 - 10 * MIN))]),
    ]
    result = run(TransitionRecorder, script, time=time, restore=restore)
    # default order_by is the event time column: 2 (11:00) before 1 (12:00)
    assert result.by_key == {"k": [item(2), item(1), item(3), item(6)]}
    assert result.late == 3


@RESTORE
def test_event_time_watermark_uses_all_keys_and_never_goes_back(restore):
    time = EventTime("ts")
    script = [Batch([("a", ev(1, T0)), ("b", ev(2, T0 + MIN))]),
              Batch([("a", ev(3, T0 + MIN)), ("b", ev(4, T0))]),  # wm 12:01: both late
              Batch([("a", ev(5, T0 + MIN + MS))])]
    result = run(TransitionRecorder, script, time=time, restore=restore)
    assert result.by_key == {"a": [item(1), item(5)], "b": [item(2)]}
    assert result.late == 2


@RESTORE
def test_event_time_trailing_no_data_batch_fires_timers_due_at_final_watermark(restore):
    time = EventTime("ts", watermark="10 minutes")
    script = [Batch([("k", ev(1, T0, notify=T0 + 5 * MIN)),
                     ("m", ev(2, T0, notify=T0 + 5 * MIN + MS))]),
              # watermark during this batch: 11:50; after it: 12:05
              Batch([("j", ev(3, T0 + 15 * MIN))])]
    result = run(TransitionRecorder, script, time=time, restore=restore)
    assert result.by_key == {"j": [item(3)], "k": [item(1), ("notify", T0 + 5 * MIN, 1)],
                             "m": [item(2)]}
    assert result.timers == {"m": T0 + 5 * MIN + MS}


@RESTORE
def test_event_time_trailing_batch_runs_before_eof(restore):
    time = EventTime("ts")
    script = [Batch([("k", ev(1, T0, notify=T0 + MIN))]), Batch([("j", ev(2, T0 + MIN))]),
              Eof()]
    result = run(TransitionRecorder, script, time=time, restore=restore)
    assert result.by_key == {"j": [item(2), ("eof", (2,), 1)],
                             "k": [item(1), ("notify", T0 + MIN, 1), ("eof", (1,), 1)]}


@RESTORE
def test_event_time_timer_fires_before_items_of_a_later_batch(restore):
    time = EventTime("ts")
    script = [Batch([("k", ev(1, T0, notify=T0 + 30 * SEC))]),
              Batch([("j", ev(2, T0 + MIN))]),
              Batch([("k", ev(3, T0 + 2 * MIN))])]
    result = run(TransitionRecorder, script, time=time, restore=restore)
    assert result.by_key == {"j": [item(2)],
                             "k": [item(1), ("notify", T0 + 30 * SEC, 1), item(3)]}


@RESTORE
def test_only_late_values_keep_the_pending_timer(restore):
    time = EventTime("ts")
    script = [Batch([("k", ev(1, T0, notify=T0 + 10 * MIN))]),
              Batch([("j", ev(2, T0 + 5 * MIN))]),
              Batch([("k", ev(3, T0 - MIN))]),             # late: no callback runs for k
              Batch([("j", ev(4, T0 + 20 * MIN))])]        # watermark -> 12:20
    result = run(TransitionRecorder, script, time=time, restore=restore)
    assert result.by_key == {"j": [item(2), item(4)],
                             "k": [item(1), ("notify", T0 + 10 * MIN, 1)]}
    assert result.late == 1
    assert result.snapshots["k"]["seen"] == [1]


def test_event_time_batch_now_sets_the_processing_clock_only():
    # now= is the second clock (read by processing deadlines); the watermark
    # still comes from the items, so a one-kind logic runs as without it
    script = [Batch([("k", {"ts": T0})], now=T0 + 60 * MIN), Batch([("k", {"ts": T0})])]
    assert run(Counter, script, time=EventTime("ts")).by_key == {"k": [1]}
    with pytest.raises(ConfigError):
        run(Counter, [Batch([("k", {"ts": T0})], now=T0.replace(tzinfo=None))],
            time=EventTime("ts"))


def test_event_time_values_need_an_aware_event_time():
    with pytest.raises(InputError) as info:
        run(Counter, [Batch([("k", {"when": T0})])], time=EventTime("ts"))
    assert "'k'" in str(info.value) and "'ts'" in str(info.value)
    with pytest.raises(InputError):
        run(Counter, [Batch([("k", {"ts": datetime(2024, 1, 1)})])], time=EventTime("ts"))


# --- StatefulBatchLogic ----------------------------------------------------------------


@RESTORE
def test_batch_counter_gets_one_on_batch_per_activation(restore):
    script = [Batch([("a", 1), ("b", 1), ("a", 1)]), Batch([("a", 1)]), Crash(),
              Batch([("b", 1), ("b", 1), ("b", 1)])]
    result = run(BatchCounter, script, batch=True, restore=restore)
    assert result.by_key == {"a": [2, 3], "b": [1, 4]}
    assert result.snapshots == {"a": 3, "b": 4}


@RESTORE
def test_batch_logic_call_order(restore):
    script = [Batch([("k", {"id": 1}), ("k", {"id": 2, "notify": T0 + SEC})], now=T0),
              Tick(now=T0 + SEC),                        # no on_batch([])
              Batch([("k", {"id": 3, "notify": T0 + 2 * SEC})], now=T0 + SEC),
              Batch([("k", {"id": 4}), ("k", {"id": 5})], now=T0 + 2 * SEC),
              Batch([("k", {"id": 6, "discard": True})], now=T0 + 2 * SEC),
              Batch([("k", {"id": 7})], now=T0 + 2 * SEC), Eof()]
    result = run(BatchLog, script, batch=True, restore=restore)
    assert result.by_key == {"k": [
        ("batch", 1, [1, 2]), ("notify", T0 + SEC), ("batch", 2, [3]),
        ("notify", T0 + 2 * SEC), ("batch", 3, [4, 5]), ("batch", 4, [6]),
        ("batch", 1, [7]), ("eof", 1)]}


@RESTORE
def test_batch_logic_order_by_and_late_values(restore):
    time = EventTime("ts")
    script = [Batch([("k", {"id": 1, "ts": T0 + MIN}), ("k", {"id": 2, "ts": T0})]),
              Batch([("k", {"id": 3, "ts": T0 + MIN}), ("k", {"id": 4, "ts": T0})]),  # late
              Batch([("k", {"id": 5, "ts": T0 + 3 * MIN}), ("k", {"id": 6, "ts": T0 + 2 * MIN}),
                     ("k", {"id": 7, "ts": T0})])]
    result = run(BatchLog, script, batch=True, time=time, restore=restore)
    assert result.by_key == {"k": [("batch", 1, [2, 1]), ("batch", 2, [6, 5])]}
    assert result.late == 3


# --- ordering -------------------------------------------------------------------------


@RESTORE
def test_arrival_order_by_default_in_processing_time(restore):
    values = [{"n": 3}, {"n": 1}, {"n": 2}]
    result = run(Echo, [Batch([("k", v) for v in values])], restore=restore)
    assert result.by_key == {"k": values}


@RESTORE
@pytest.mark.parametrize("order_by, expected", [
    ("n", [(None, "e"), (1, "d"), (1, "b"), (2, "a"), (3, "c")]),  # stable on ties
    (["n", "s"], [(None, "e"), (1, "b"), (1, "d"), (2, "a"), (3, "c")]),
    (["s"], [(2, "a"), (1, "b"), (3, "c"), (1, "d"), (None, "e")]),
    (lambda v: -ord(v["s"]), [(None, "e"), (1, "d"), (3, "c"), (1, "b"), (2, "a")]),
])
def test_order_by_sorts_values_within_an_activation(restore, order_by, expected):
    values = [{"n": 2, "s": "a"}, {"n": 1, "s": "d"}, {"n": 3, "s": "c"},
              {"n": None, "s": "e"}, {"n": 1, "s": "b"}]
    result = run(Echo, [Batch([("k", v) for v in values]), Batch([("j", values[0])])],
                 order_by=order_by, restore=restore)
    assert [(v["n"], v["s"]) for v in result.by_key["k"]] == expected
    assert result.by_key["j"] == [values[0]]


def test_order_by_must_name_fields():
    with pytest.raises(ConfigError):
        Runner(Echo, order_by=[])
    with pytest.raises(ConfigError):
        Runner(Echo, order_by=[1])


@RESTORE
def test_order_by_overrides_the_event_time_default(restore):
    time = EventTime("ts")
    values = [{"id": 1, "ts": T0 + MIN, "seq": 0}, {"id": 2, "ts": T0, "seq": 1}]
    assert run(Echo, [Batch([("k", v) for v in values])], time=time,
               restore=restore).by_key == {"k": [values[1], values[0]]}
    assert run(Echo, [Batch([("k", v) for v in values])], time=time, order_by="seq",
               restore=restore).by_key == {"k": values}


@RESTORE
def test_keys_processed_in_sorted_order(restore):
    script = [Batch([("c", r(1)), ("a", r(2)), ("b", r(3)), ("a", r(4))]), Eof()]
    result = run(TransitionRecorder, script, restore=restore)
    assert result.outputs == [
        ("a", item(2)), ("a", item(4)), ("b", item(3)), ("c", item(1)),
        ("a", ("eof", (2, 4), 1)), ("b", ("eof", (3,), 1)), ("c", ("eof", (1,), 1))]


def test_mixed_type_keys_sorted_by_type_name_then_repr():
    result = run(Counter, [Batch([("b", 0), (2, 0), ("a", 0), (1, 0)])])
    assert [k for k, _ in result.outputs] == [1, 2, "a", "b"]


def test_timer_activations_and_data_activations_interleave_in_key_order():
    script = [Batch([("b", r(1, notify=T0 + SEC)), ("d", r(2, notify=T0 + SEC))], now=T0),
              Batch([("c", r(3)), ("a", r(4))], now=T0 + SEC)]
    result = run(TransitionRecorder, script)
    assert result.outputs[2:] == [("a", item(4)), ("b", ("notify", T0 + SEC, 1)),
                                  ("c", item(3)), ("d", ("notify", T0 + SEC, 1))]
