"""Offline: a watermark per side of a connected step, then the minimum
(Spark's ``multipleWatermarkPolicy=min``), streaming and bounded."""

from __future__ import annotations

import dataclasses
import threading
from datetime import datetime, timedelta, timezone

import pytest

import sparkwax as sw
from sparkwax import DISCARD, RETAIN, EventTime, SnapshotError, StatefulBatchLogic, now
from sparkwax.errors import ConfigError, InputError, LogicError, NotifyAtError
from sparkwax.operators import Tagged, count_window, joiner, join_window, stateful_map, tag
from sparkwax.operators import TumblingWindower
from sparkwax.testing import Batch, Eof, run, run_bounded
from sparkwax.timers import Watermark

from sparkwax.recovery import decode
from sparkwax.sides import Tagged

from kit import T0, event as at
from test_driver_steps import driver
from test_fast_path_cases import at as start_at, ms
from test_two_clocks import Deadlined

TIME = sw.EventTime("ts", watermark="1 minute")


def ahead_script():
    """Side "fast" jumps 10 minutes ahead; "slow" keeps sending 0-4 minutes."""
    return [Batch(tag("slow", [("k", at(0)), ("k", at(1))]) + tag("fast", [("k", at(10))])),
            Batch(tag("slow", [("k", at(2)), ("k", at(3)), ("k", at(4))])), Eof()]


def test_a_side_far_ahead_does_not_make_the_other_sides_rows_late():
    result = run(joiner(["slow", "fast"], emit_mode="running"), ahead_script(), time=TIME)
    assert result.late == 0
    assert [pair[0]["ts"] for pair in result.by_key["k"] if pair[0]][-3:] == \
        [at(m)["ts"] for m in (2, 3, 4)]


def test_the_watermark_is_the_slowest_sides():
    seen = stateful_map(lambda state, item: (None, sw.now()))
    script = [Batch(tag("slow", [("k", at(0))]) + tag("fast", [("k", at(10))])),
              Batch(tag("slow", [("k", at(5))])),
              Batch(tag("fast", [("k", at(11))]))]
    result = run(seen, script, time=TIME, sides=["slow", "fast"])
    # batch 1 at 0 (the epoch), batch 2 at min(0, 10) - 1 min, batch 3 at min(5, 10) - 1
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    assert result.by_key["k"] == [epoch, epoch, at(-1)["ts"], at(4)["ts"]]


def test_a_side_without_data_holds_the_watermark_at_zero():
    seen = stateful_map(lambda state, item: (None, sw.now()))
    script = [Batch(tag("a", [("k", at(30))])), Batch(tag("a", [("k", at(40))]))]
    with_silent_side = run(seen, script, time=TIME, sides=["a", "b"])
    assert [m.minute for m in with_silent_side.by_key["k"]] == [0, 0]
    alone = run(seen, script, time=TIME, sides=["a"])
    assert [m.minute for m in alone.by_key["k"]] == [0, 29]


def test_join_window_carries_its_sides():
    windows = join_window(TumblingWindower("5 minutes", align_to=T0), ["slow", "fast"])
    result = run(windows, ahead_script(), time=TIME)
    assert result.late == 0
    assert len(result.by_key["k"]) == 2          # window [0, 5) with all five readings


def test_bounded_input_keeps_a_watermark_per_side_too():
    items = [(k, v) for step in ahead_script()[:2] for k, v in step.items]
    seq = {id(v): n for n, (_, v) in enumerate(items)}
    arrival = lambda item: seq[id(item)]  # noqa: E731
    result = run_bounded(joiner(["slow", "fast"], emit_mode="running"), items, time=TIME,
                         order_by=arrival)
    assert result.late == 0 and len(result.by_key["k"]) == 6


def test_tagged_values_without_known_sides_are_refused_in_event_time():
    counting = count_window(TumblingWindower("5 minutes"))
    with pytest.raises(ConfigError, match="sides="):
        run(counting, ahead_script(), time=TIME)
    with pytest.raises(ConfigError, match="sides="):
        run_bounded(counting, ahead_script()[0].items, time=TIME)
    # processing time has no watermark: nothing to know
    assert run(stateful_map(lambda s, v: (None, 1)), ahead_script()).by_key == {"k": [1] * 6}


def test_unknown_or_untagged_values_of_a_step_with_sides():
    with pytest.raises(InputError, match="unknown side 'other'"):
        run(stateful_map(lambda s, v: (None, v)), [Batch(tag("other", [("k", at(1))]))],
            time=TIME, sides=["slow", "fast"])
    with pytest.raises(InputError, match="needs Tagged values"):
        run(stateful_map(lambda s, v: (None, v)), [Batch([("k", at(1))])], time=TIME,
            sides=["slow", "fast"])
    with pytest.raises(ConfigError, match="distinct"):
        run(joiner(2), [], time=TIME, sides=["a", "a"])


def test_watermark_rules():
    clock = Watermark(delay_ms=0, inputs=3)
    clock.see(5_000, 0)
    clock.see(9_000, 2)
    assert clock.advance() == 0 and clock.seen
    clock.see(7_000, 1)
    assert clock.advance() == 5
    twin = clock.copy()
    twin.see(50_000, 0)
    assert clock.maxima[0] == 5 and twin.advance() == 7
    with pytest.raises(ValueError):
        Watermark(inputs=0)
    assert not Watermark().seen and Tagged("a", 1).side == "a"


def test_check_logic_takes_the_sides():
    from hypothesis import strategies as st

    from sparkwax.testing import check_logic

    value = st.builds(lambda m: {"ts": T0 + timedelta(minutes=m)}, st.integers(0, 30))
    items = st.lists(st.tuples(st.sampled_from("ab"),
                               st.builds(Tagged, st.sampled_from(["l", "r"]), value)))
    seen = stateful_map(lambda state, item: ((state or 0) + 1, item.side))
    check_logic(seen, items=items, time=TIME, sides=["l", "r"], max_examples=10)
    with pytest.raises(ConfigError, match="sides="):
        check_logic(seen, items=items.filter(bool), time=TIME, max_examples=10)


# -- the driver's bounded activation: every count, every error's key ------------

class Ends(Deadlined):
    """``Deadlined`` (tests/unit/core/test_two_clocks.py) with an ``on_eof``
    that raises, discards or breaks the snapshot (``eof``: "raise",
    "discard", "bad"), an ``on_item`` that raises (``raise``) and an
    ``on_notify`` that does (``bad`` "on_notify"); a Tagged item's value."""

    def on_item(self, value):
        if isinstance(value, Tagged):
            value = value[1]
        if "raise" in value:
            raise ValueError("no item")
        return super().on_item(value)

    def on_notify(self):
        if self.state.get("bad") == "on_notify":
            raise ValueError("no notify")
        self.state.pop("timer")
        return [("fired", now())], RETAIN

    def on_eof(self):
        how = self.state.get("eof")
        if how == "raise":
            raise ValueError("no end")
        if how == "bad":
            self.state["bad"] = "snapshot"
        return [("eof", sorted(self.state))], DISCARD if how == "discard" else RETAIN


def us(minutes):
    return ms(minutes) * 1000


def test_a_bounded_activation_counts_its_timers_and_its_key():
    step = driver(Ends, time=EventTime("ts"))
    values = [{"timer": start_at(1), "deadline": start_at(30)}, {}, {"timer": start_at(5.5)},
              {"timer": start_at(6.5)}]
    act = step.activate_bounded("k", values, event_times=[us(0), us(5), us(6), us(7)])
    assert act.emits == [values[0], {}, ("fired", start_at(5)), values[2], ("fired", start_at(6)),
                         values[3], ("fired", start_at(7)), ("eof", ["deadline"])]
    assert (act.fired, act.rows, act.late, act.created, act.discarded) == (3, 4, 0, 1, 0)
    assert (act.timer, act.armed, act.deadline) == (None, None, ms(30))
    assert decode(act.state, step_id="s", key="k") == {"deadline": start_at(30)}
    gone = step.activate_bounded("k", [{"eof": "discard"}], event_times=[us(0)])
    assert (gone.state, gone.created, gone.discarded, gone.emits[-1]) == \
        (None, 0, 0, ("eof", ["eof"]))


def test_a_bounded_snapshot_is_taken_before_on_eof():
    # as a stream's last commit would: a snapshot that cannot be stored fails
    # although on_eof then discards the key
    with pytest.raises(SnapshotError):
        driver(Ends, time=EventTime("ts")).activate_bounded(
            "k", [{"lock": threading.Lock(), "eof": "discard"}], event_times=[us(0)])


def test_a_bounded_watermark_is_the_slowest_sides():
    # a's timer at minute 1 is due once b, at minute 5, is the slower side: before
    # a's item at minute 7 (before the one at minute 6, b's minute 0 held it back)
    values = [v for _, v in tag("a", [("k", {"timer": start_at(1)})]) + tag("b", [("k", {})]) +
              tag("a", [("k", {}), ("k", {})])]
    act = driver(Ends, time=EventTime("ts"), sides=["a", "b"]).activate_bounded(
        "k", values, event_times=[us(0), us(5), us(6), us(7)])
    assert (act.fired, act.timer) == (1, None)
    assert act.emits[3] == ("fired", start_at(5))


BOUNDED_ERRORS = {  # values (at minutes 0, 5, 6, ...), then the callback named
    "on_item": ([{"raise": 1}], "on_item"),
    "notify_at, last": ([{"bad": "notify_at"}], "notify_at"),
    "notify_at, between items": ([{}, {"bad": "notify_at"}, {}], "notify_at"),
    "on_notify": ([{"timer": start_at(1), "bad": "on_notify"}, {}, {}], "on_notify"),
    "on_eof": ([{"eof": "raise"}], "on_eof"),
    "snapshot after on_eof": ([{"eof": "bad"}], "snapshot"),
}


@pytest.mark.parametrize("case", sorted(BOUNDED_ERRORS))
def test_a_bounded_activations_errors_name_the_step_and_key(case):
    values, callback = BOUNDED_ERRORS[case]
    times = [us(m) for m in (0, 5, 6)[:len(values)]]
    with pytest.raises(LogicError) as caught:
        driver(Ends, time=EventTime("ts")).activate_bounded("k", values, event_times=times)
    assert (caught.value.step_id, caught.value.key, caught.value.callback) == \
        ("s", "k", callback)
    assert ("(got " in str(caught.value)) is (callback == "on_item")  # no value shown


def test_bounded_input_errors_name_the_step_and_key():
    with pytest.raises(InputError) as caught:  # order_by values, no event times
        driver().activate_bounded("k", [{}, {}], order=[[1, "x"]])
    assert (caught.value.step_id, caught.value.key) == ("s", "k")
    unknown = [v for _, v in tag("c", [("k", {})])]
    with pytest.raises(InputError) as caught:  # a side the step does not have
        driver(Ends, time=EventTime("ts"), sides=["a", "b"]).activate_bounded(
            "k", unknown, event_times=[us(0)])
    assert (caught.value.step_id, caught.value.key) == ("s", "k")


def test_an_event_time_callable_and_its_errors():
    times, _ = driver(time=EventTime(lambda v: v["when"])).read_columns(
        "k", [{"when": start_at(0)}, {"when": None}])
    assert times == [us(0), None]

    def broken(value):
        raise ValueError("no time")

    with pytest.raises(InputError) as caught:
        driver(time=EventTime(broken)).read_columns("k", [{"n": 1}])
    assert (caught.value.step_id, caught.value.key, caught.value.callback,
            caught.value.value, caught.value.reason) == \
        ("s", "k", "event time", {"n": 1}, f"the EventTime callable {broken!r} raised "
                                           f"ValueError('no time')")
    with pytest.raises(InputError) as caught:  # a naive datetime
        driver(time=EventTime("ts")).read_columns("k", [{"ts": datetime(2024, 1, 1)}])
    assert (caught.value.key, caught.value.reason) == \
        ("k", "the event time column 'ts' must hold aware datetimes: naive datetime; use an "
              "aware one, e.g. tzinfo=timezone.utc")
    with pytest.raises(InputError) as caught:  # a field, missing
        driver(time=EventTime("ts")).read_columns("k", [{"n": 1}])
    assert (caught.value.step_id, caught.value.key, caught.value.callback,
            caught.value.value, caught.value.reason) == \
        ("s", "k", "event time", {"n": 1}, "EventTime('ts') needs each value to have a 'ts' "
                                           "field (a mapping key or an attribute)")


def test_side_errors_name_the_step_and_key():
    with pytest.raises(ConfigError, match="^step 's': a Tagged value from side 'a'"):
        driver(time=EventTime("ts")).side_of("k", Tagged("a", {}))
    with pytest.raises(InputError) as caught:
        driver(time=EventTime("ts"), sides=["a", "b"]).side_of("k", Tagged("c", {}))
    assert (caught.value.step_id, caught.value.key) == ("s", "k")


class Renotify(StatefulBatchLogic):
    """A batch logic: its first batch sets a timer at minute 1, its
    ``on_notify`` a naive one."""

    def __init__(self, resume=None):
        self.timer = resume

    def on_batch(self, values):
        self.timer = self.timer or start_at(1)
        return [len(values)], RETAIN

    def notify_at(self):
        return self.timer

    def on_notify(self):
        self.timer = start_at(1).replace(tzinfo=None)
        return [], RETAIN

    def snapshot(self):
        return self.timer


@pytest.mark.parametrize("first", ["a", "b"])
def test_a_bounded_batch_run_ends_at_its_sides_watermark(first):
    # in order_by order, the first two items hold the watermark at minute 0
    # (the slower side's): the third, at minute 0 too, is late, in a run of its own
    other = "b" if first == "a" else "a"
    values = [v for _, v in tag(first, [("k", {})]) + tag(other, [("k", {}), ("k", {})])]
    act = driver(Renotify, time=EventTime("ts"), sides=["a", "b"], batch=True) \
        .activate_bounded("k", values, event_times=[us(0), us(5), us(0)], order=[[0, 1, 2]])
    assert (act.late, act.emits) == (1, [2])


def test_a_bounded_batch_runs_timer_error_names_the_key():
    # in order_by order, the third item is late: a run of its own; the timer
    # fires before it, and the run's end reads the naive timer on_notify set
    with pytest.raises(NotifyAtError) as caught:
        driver(Renotify, time=EventTime("ts"), batch=True).activate_bounded(
            "k", [{}, {}, {}], event_times=[us(0), us(5), us(1)], order=[[0, 1, 2]])
    assert (caught.value.step_id, caught.value.key) == ("s", "k")


@dataclasses.dataclass
class Event:
    ts: datetime
    n: int


def test_a_dataclass_events_fields_and_the_event_times_length():
    times, order = driver(time=EventTime("ts"), order_by="n").read_columns(
        "k", [Event(start_at(0), 2), Event(start_at(1), 1)])
    assert (times, order) == ([us(0), us(1)], ([2, 1],))
    with pytest.raises(ValueError, match="^1 event times for 2 values$"):
        driver(time=EventTime("ts")).activate("k", None, [{}, {}], 0, event_times=[0])


class RaisesOnBatch(StatefulBatchLogic):
    def __init__(self, resume=None):
        pass

    def on_batch(self, values):
        raise ValueError("no batch")

    def snapshot(self):
        return None


def test_a_batch_callbacks_error_shows_its_values():
    with pytest.raises(LogicError) as caught:
        driver(RaisesOnBatch, batch=True).activate("k", None, [1, 2], 0)
    assert (caught.value.callback, caught.value.value) == ("on_batch", [1, 2])
    assert str(caught.value).endswith("(got [1, 2])")
