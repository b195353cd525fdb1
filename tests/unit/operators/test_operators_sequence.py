"""sequence (pattern detection) and the Timers helper offline: exact outputs,
expiry by timer, bounded state, a brute-force reference, the demo's fraud data
and check_logic."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings, strategies as st

import sparkwax as sw
import sparkwax.operators as ops
from sparkwax.cli.demo import clickstream
from sparkwax.testing import Batch, Crash, Eof, Runner, Tick, check_logic, run, run_bounded
from sparkwax.testing.strategies import timestamped_items

from kit import T0, at as t

EVENT = sw.EventTime("ts")


def login(minutes, outcome):
    return {"ts": t(minutes), "outcome": outcome}


def failed(event):
    return event["outcome"] == "failed"


def succeeded(event):
    return event["outcome"] == "ok"


BREAK_IN = [failed, failed, failed, succeeded]


def attempts(*pairs, key="ann"):
    return [(key, login(m, o)) for m, o in pairs]


def minutes(result, key="ann"):
    return [[(v["ts"] - T0) // timedelta(minutes=1) for v in match]
            for match in result.by_key.get(key, [])]


# -- matching ------------------------------------------------------------------------


def test_three_failures_then_a_success():
    items = attempts((0, "failed"), (1, "failed"), (2, "failed"), (3, "failed"), (4, "ok"),
                     (5, "failed"), (6, "ok"))
    result = run_bounded(ops.sequence(BREAK_IN, within="5 minutes"), items, time=EVENT)
    assert minutes(result) == [[1, 2, 3, 4]]        # the three failures right before it
    assert result.by_key["ann"][0][-1] == login(4, "ok")
    assert result.live_keys == 0


def test_strict_and_relaxed_contiguity():
    items = attempts((0, "failed"), (1, "failed"), (2, "mfa"), (3, "failed"), (4, "ok"))
    strict = run_bounded(ops.sequence(BREAK_IN, within="5 minutes"), items, time=EVENT)
    relaxed = run_bounded(ops.sequence(BREAK_IN, within="5 minutes", contiguity="relaxed"),
                          items, time=EVENT)
    assert minutes(strict) == []                      # the "mfa" event breaks the run
    assert minutes(relaxed) == [[0, 1, 3, 4]]         # skipped


def test_within_is_measured_from_the_first_value():
    items = attempts((0, "failed"), (1, "failed"), (2, "failed"), (5, "ok"),
                     (6, "failed"), (7, "failed"), (8, "failed"), (10, "ok"))
    result = run_bounded(ops.sequence(BREAK_IN, within="5 minutes"), items, time=EVENT)
    assert minutes(result) == [[6, 7, 8, 10]]         # 0..5 is 5 minutes: not within


def test_overlapping_matches():
    items = attempts((0, "failed"), (1, "failed"), (2, "ok"), (3, "failed"), (4, "ok"))
    two_then_ok = [failed, failed, succeeded]
    after = run_bounded(ops.sequence(two_then_ok, within="10 minutes", contiguity="relaxed"),
                        items, time=EVENT)
    overlapping = run_bounded(ops.sequence(two_then_ok, within="10 minutes",
                                           contiguity="relaxed", overlapping=True),
                              items, time=EVENT)
    assert minutes(after) == [[0, 1, 2]]              # 3 alone cannot start over with 1
    assert minutes(overlapping) == [[0, 1, 2], [1, 3, 4]]


def test_one_step_patterns_emit_every_matching_value():
    items = attempts((0, "failed"), (1, "ok"), (2, "failed"))
    result = run_bounded(ops.sequence([failed], within="1 minute"), items, time=EVENT)
    assert minutes(result) == [[0], [2]] and result.live_keys == 0


def test_partial_matches_expire_by_timer_and_the_key_goes():
    runner = Runner(ops.sequence(BREAK_IN, within="5 minutes"), time=EVENT)
    runner.play(Batch(attempts((0, "failed"), (1, "failed"))))
    snapshot = runner.process_all_available().snapshots["ann"]
    assert [len(values) for _, values in snapshot[1]] == [2, 1]   # two partial matches
    assert runner.process_all_available().timers["ann"] == t(5)                  # the earliest expiry
    runner.play(Batch(attempts((5, "failed"), key="bob")))        # watermark 5: 0's expires
    result = runner.process_all_available()
    assert [[v["ts"] for v in values] for _, values in result.snapshots["ann"][1]] == [[t(1)]]
    runner.play(Batch(attempts((30, "ok"), key="bob")))           # watermark 30
    result = runner.process_all_available()
    assert "ann" not in result.snapshots and result.outputs == []


def test_a_value_past_within_finds_the_partial_match_expired():
    # all in one micro-batch: no timer fires in between, the value's time decides
    items = attempts((0, "failed"), (1, "failed"), (2, "failed"), (9, "ok"))
    result = run(ops.sequence(BREAK_IN, within="5 minutes", contiguity="relaxed"),
                 [Batch(items)], time=EVENT)
    assert result.outputs == [] and result.live_keys == 0


def test_matches_across_micro_batches_and_crashes():
    script = [Batch(attempts((0, "failed"))), Crash(),
              Batch(attempts((1, "failed")) + attempts((0, "failed"), (1, "failed"), key="bob")),
              Batch(attempts((2, "failed"))), Crash(),
              Batch(attempts((3, "ok")) + attempts((2, "ok"), key="bob"))]
    result = run(ops.sequence(BREAK_IN, within="5 minutes"), script,
                 time=sw.EventTime("ts", watermark="10 minutes"))
    assert minutes(result) == [[0, 1, 2, 3]]
    assert result.by_key.get("bob") is None           # bob: two failures only
    assert sorted(result.snapshots) == []             # ann matched; bob's "ok" broke his run


def test_state_stays_bounded():
    # 200 failures within the window: relaxed keeps one partial match per step only
    items = attempts(*[(m / 100, "failed") for m in range(200)])
    runner = Runner(ops.sequence(BREAK_IN, within="1 hour", contiguity="relaxed"),
                    time=EVENT)
    runner.play(Batch(items))
    (next_id, partials, timers) = runner.process_all_available().snapshots["ann"]
    assert [len(values) for _, values in partials] == [3, 2, 1]
    assert len(timers) == 3 and next_id == 200
    runner.play(Batch(attempts((3, "ok"))))
    result = runner.process_all_available()
    assert [[v["ts"] for v in match] for match in result.by_key["ann"]] == [
        [t(1.97), t(1.98), t(1.99), t(3)]]            # the latest, tightest match


def test_emits_fit_an_array_schema_on_spark():
    items = attempts((0, "failed"), (1, "failed"), (2, "failed"), (3, "ok"))
    (match,) = run_bounded(ops.sequence(BREAK_IN, within="5 minutes"), items,
                           time=EVENT).by_key["ann"]
    assert type(match) is list and len(match) == 4


@pytest.mark.parametrize("call, message", [
    (lambda: ops.sequence([], within="1 minute"), "at least one step"),
    (lambda: ops.sequence([failed, "ok"], within="1 minute"), "step 1 must be a predicate"),
    (lambda: ops.sequence([failed], within=None), "needs within="),
    (lambda: ops.sequence([failed], within="0 seconds"), "positive"),
    (lambda: ops.sequence([failed], within="1 minute", contiguity="loose"), "contiguity"),
])
def test_config_errors(call, message):
    with pytest.raises(sw.ConfigError, match=message):
        call()


# -- a brute-force reference for strict contiguity ---------------------------------------


def strict_reference(values, steps, within):
    """Strict, non-overlapping matches of in-order values: the steps on
    consecutive values after the last match, spanning less than ``within``."""
    matches, free_from = [], 0
    n = len(steps)
    for end in range(n - 1, len(values)):
        start = end - n + 1
        run_ = values[start:end + 1]
        if start >= free_from and all(step(v) for step, v in zip(steps, run_)) and \
                run_[-1]["ts"] - run_[0]["ts"] < within:
            matches.append(run_)
            free_from = end + 1
    return matches


LOW, HIGH = (lambda v: v["value"] < 2), (lambda v: v["value"] >= 2)


@settings(max_examples=150, deadline=None)
@given(gaps=st.lists(st.integers(0, 240), max_size=40),
       numbers=st.lists(st.integers(0, 3), min_size=40, max_size=40),
       cuts=st.lists(st.integers(0, 40), max_size=5))
def test_strict_matches_equal_a_brute_force_reference(gaps, numbers, cuts):
    clock, values = T0, []
    for gap, number in zip(gaps, numbers):
        clock += timedelta(seconds=gap)
        values.append({"ts": clock, "value": number})
    steps = [LOW, LOW, HIGH]
    within = timedelta(minutes=5)
    expected = strict_reference(values, steps, within)
    # Cut only where time moves on: a value at the previous batch's latest time is
    # late (the watermark has no delay here), which the reference does not model.
    bounds = [0, *sorted(c for c in set(cuts) if 0 < c < len(values)
                         and values[c]["ts"] > values[c - 1]["ts"]), len(values)]
    script = [Batch([("k", v) for v in values[a:b]]) for a, b in zip(bounds, bounds[1:])]
    got = run(ops.sequence(steps, within), script, time=EVENT).by_key.get("k", [])
    assert got == expected


# -- the demo's fraud data -------------------------------------------------------------------


def test_card_testing_in_the_demo_clickstream():
    stream = clickstream.generate(20_000, seed=7)
    purchases = [(e["card_id"], e) for e in stream.events if e["event_type"] == "purchase"]
    test_charge = (lambda p: p["amount"] < 2)
    time = sw.EventTime("ts", watermark="5 minutes")
    matches = run_bounded(ops.sequence([test_charge] * 3, within="1 minute"), purchases,
                          time=time)
    testing = {b.card_id for b in stream.bursts if b.kind == "card-testing"}
    assert sorted(matches.by_key) == sorted(testing) == ["c-000214"]
    # two bursts of 11 and 12 test charges, three charges per match
    assert len(matches.by_key["c-000214"]) == 11 // 3 + 12 // 3
    velocity = run_bounded(ops.sequence([lambda p: True] * 6, within="2 minutes"), purchases,
                           time=time)
    assert sorted(velocity.by_key) == stream.fraud_cards
    assert velocity.live_keys == 0


# -- Timers ----------------------------------------------------------------------------------


def test_timers_basics():
    timers = ops.Timers()
    assert timers.notify_at() is None and timers.pop_due(t(100)) == [] and not timers
    timers.set("b", t(5))
    timers.set("a", t(5))
    timers.set("c", t(1))
    timers.set("d", t(9))
    timers.set("c", t(2))                        # moved
    timers.cancel("nothing")
    assert timers.notify_at() == t(2) and timers.get("c") == t(2) and "d" in timers
    assert timers.pop_due(t(5)) == [("c", t(2)), ("b", t(5)), ("a", t(5))]  # ties: set order
    assert list(timers) == ["d"] and len(timers) == 1
    again = pickle.loads(pickle.dumps(timers))
    assert again == timers and ops.Timers(timers.snapshot()) == timers
    assert ops.Timers(timers) == timers and ops.Timers(timers) is not timers
    assert timers.snapshot() == (("d", t(9)),)
    assert "d" in repr(timers)
    timers.clear()
    assert timers.snapshot() == ()


def test_timers_refuse_naive_datetimes():
    with pytest.raises(sw.ConfigError, match="aware"):
        ops.Timers().set("x", datetime(2024, 1, 1))


class Reminders(sw.StatefulLogic):
    """Each value asks for a reminder ``after`` minutes; a key with no
    reminder left is discarded."""

    def __init__(self, resume=None):
        self.timers = ops.Timers(resume)

    def on_item(self, value):
        self.timers.set(value["id"], value["ts"] + timedelta(minutes=value["after"]))
        return [], sw.RETAIN

    def notify_at(self):
        return self.timers.notify_at()

    def on_notify(self):
        due = [(name, (at - T0) // timedelta(minutes=1)) for name, at in self.timers.pop_due()]
        return due, not self.timers

    def on_eof(self):
        return [(name, "eof") for name in self.timers], sw.DISCARD

    def snapshot(self):
        return self.timers.snapshot()


def reminder(minutes, ident, after):
    return {"ts": t(minutes), "id": ident, "after": after}


def test_timers_in_a_logic_fire_everything_due_at_once():
    script = [Batch([("k", reminder(0, "a", 10)), ("k", reminder(1, "b", 3)),
                     ("k", reminder(2, "c", 30)), ("k", reminder(3, "d", 4))]),
              Batch([("clock", reminder(15, "x", 100))]),     # watermark 15 min
              Crash(), Tick(), Eof()]
    result = run(Reminders, script, time=EVENT)
    # k's timer (4 min) fires at watermark 15: b, d and a are all due, in deadline order
    assert result.by_key["k"] == [("b", 4), ("d", 7), ("a", 10), ("c", "eof")]
    assert result.live_keys == 0


def test_timers_without_a_clock_pop_the_earliest():
    result = run_bounded(Reminders, [("k", reminder(0, "a", 5)), ("k", reminder(0, "b", 5))])
    assert result.by_key == {"k": [("a", "eof"), ("b", "eof")]}   # no clock: EOF only
    logic = Reminders()
    logic.on_item(reminder(0, "a", 5))
    logic.on_item(reminder(0, "b", 6))
    assert logic.on_notify() == ([("a", 5)], False)    # outside an activation: the earliest


# -- check_logic ------------------------------------------------------------------------------

ITEMS = timestamped_items(keys=st.sampled_from(["a", "b"]), values=st.integers(0, 3),
                          max_size=25)
TIME = sw.EventTime("ts", watermark="2 minutes")


@pytest.mark.parametrize("contiguity", ["strict", "relaxed"])
@pytest.mark.parametrize("overlapping", [False, True])
def test_check_logic_sequence(contiguity, overlapping):
    check_logic(ops.sequence([LOW, LOW, HIGH], within="5 minutes", contiguity=contiguity,
                             overlapping=overlapping), time=TIME, items=ITEMS, max_examples=60)


def test_check_logic_timers():
    items = timestamped_items(keys=st.sampled_from(["a", "b"]),
                              values=st.integers(0, 9), max_size=20).map(
        lambda pairs: [(k, {"ts": v["ts"], "id": v["value"] % 4, "after": v["value"]})
                       for k, v in pairs])
    check_logic(Reminders, time=TIME, items=items, max_examples=60)
