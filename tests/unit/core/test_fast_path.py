"""The driver's flattened activation (``Driver._activate_plain``, both
stored and live, and ``activate_keys``, taken by a step without sides when an activation has
no event times, nothing to order and is not EOF) gives what the general
path gives: the same activations, results, warnings and errors. These tests
run each case twice, once with the flattened path turned off, and compare.
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sparkwax import operators as ops
from sparkwax._driver import Clocks, Driver, KeyBatch
from sparkwax.errors import LogicError
from sparkwax.logic import DISCARD, RETAIN, StatefulBatchLogic, StatefulLogic
from sparkwax.step import Step
from sparkwax.testing import Batch, Crash, Tick, run
from sparkwax.testing.reference import Counter, TransitionRecorder
from sparkwax.testing.strategies import START, keyed_items, scripts

from kit import at, plain_keys, recorder_commands

RECORDER_COMMANDS = recorder_commands()

_init = Driver.__init__


def general_only(monkeypatch):
    """Every Driver built from now on takes the general path."""
    def init(self, step):
        _init(self, step)
        self._plain = False
    monkeypatch.setattr(Driver, "__init__", init)


def outcome(call):
    """``("ok", value, warnings)`` or ``("error", type, message, warnings)``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = call()
        except (LogicError, ValueError, TypeError) as error:
            return ("error", type(error), str(error), type(error.__cause__),
                    [str(w.message) for w in caught])
    return ("ok", value, [str(w.message) for w in caught])


def run_result(result):
    return (result.by_key, result.snapshots, result.timers, result.deadlines, result.late,
            result.activations, result.lost_state, result.metrics.deterministic(),
            [m.deterministic() for m in result.batch_metrics])


def both_ways(call):
    """``call()``'s outcome on the flattened path and on the general path."""
    fast = outcome(call)
    with pytest.MonkeyPatch.context() as patch:
        general_only(patch)
        slow = outcome(call)
    return fast, slow




class Lossy(TransitionRecorder):
    """Keeps its timer outside snapshot(): a LostStateWarning."""

    def snapshot(self):
        return {**super().snapshot(), "notify": None}


class Unpicklable:
    def __reduce__(self):
        raise TypeError("not picklable")

    def __repr__(self):
        return "<unpicklable>"


class Wrong(StatefulLogic):
    """A wrong return value, an error or a bad timer, driven by the value."""

    def __init__(self, resume=None):
        self.timer = resume
        self.extra = None

    def on_item(self, value):
        if value == "raise":
            raise RuntimeError("boom")
        if value == "single":
            return 1, RETAIN
        if value == "flag":
            return [1], "no"
        if value == "naive":
            self.timer = START.replace(tzinfo=None)
        if value == "unpicklable":
            self.extra = Unpicklable()
        return [value], value == "drop"

    def notify_at(self):
        return self.timer

    def snapshot(self):
        return self.timer if self.extra is None else (self.timer, self.extra)


@settings(max_examples=80, deadline=None)
@given(script=scripts(items=keyed_items(keys=st.sampled_from(["a", "b", 3, ("t", 1)]),
                                        values=RECORDER_COMMANDS, max_size=12)),
       restore=st.sampled_from(["always", "on_crash"]),
       builder=st.sampled_from([TransitionRecorder, Lossy]),
       options=st.sampled_from([{}, {"ttl": "20 minutes"}, {"max_state_bytes": 400},
                                {"order_by": "id"}]))
def test_a_run_is_the_same_on_both_paths(script, restore, builder, options):
    fast, slow = both_ways(lambda: run_result(run(builder, script, restore=restore,
                                                  **options)))
    assert fast == slow


@settings(max_examples=40, deadline=None)
@given(script=scripts(items=keyed_items(keys=st.sampled_from(["a", "b", None, float("nan")]),
                                        values=st.sampled_from(
                                            ["x", "drop", "raise", "single", "flag", "naive",
                                             "unpicklable"]), max_size=6)),
       restore=st.sampled_from(["always", "on_crash"]))
def test_errors_are_the_same_on_both_paths(script, restore):
    fast, slow = both_ways(lambda: run_result(run(Wrong, script, restore=restore)))
    assert fast == slow


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_a_builder_error_and_a_discard_are_the_same(restore):
    def picky(resume):
        if resume == 2:
            raise KeyError("two")
        return Counter(resume)

    script = [Batch([("k", 1), ("k", 2)]), Crash(), Batch([("k", 3)])]
    fast, slow = both_ways(lambda: run_result(run(picky, script, restore=restore)))
    assert fast == slow and fast[0] == "error" and "builder" in fast[2]

    class Once(Counter):
        def on_item(self, value):
            self.count += 1
            return [self.count], DISCARD if self.count == 2 else RETAIN

    script = [Batch([("k", v) for v in range(5)]), Tick(now=at(1)), Batch([("k", 9)])]
    fast, slow = both_ways(lambda: run_result(run(Once, script, restore=restore)))
    assert fast == slow
    assert fast[1][0] == {"k": [1, 2, 1, 2, 1, 2]}   # DISCARD: builder(None) for the next


def test_the_flattened_path_is_taken_for_a_plain_step_only(monkeypatch):
    taken = []
    plain = Driver._plain_steps
    monkeypatch.setattr(Driver, "_plain_steps",
                        lambda self, *a: taken.append(a[0]) or plain(self, *a))
    driver = Driver(Step.of(Counter, step_id="count"))
    first = driver.activate("k", None, ["a", "b"], now_ms=0)
    assert taken == ["k"] and first.emits == [1, 2] and first.created == 1
    driver.activate("k", first.state, ["c"], now_ms=0, eof=True)      # EOF: general path
    driver.activate("k", first.state, ["c", "d"], now_ms=0, order=(["d", "c"],))
    assert taken == ["k"]
    assert Driver(Step.of(ops.count_final(), batch=True))._plain
    assert not Driver(Step.of(lambda resume: Counter(resume), sides=["a", "b"]))._plain


class BatchRecorder(StatefulBatchLogic):
    """A batch logic driven by its values: a timer, DISCARD, a wrong return."""

    def __init__(self, resume=None):
        self.seen, self.timer = resume or (0, None)

    def on_batch(self, values):
        self.seen += len(values)
        if "raise" in values:
            raise RuntimeError("boom")
        if "single" in values:
            return 1, RETAIN
        if "flag" in values:
            return [1], "no"
        for value in values:
            if isinstance(value, int):
                self.timer = at(value)
        return [self.seen, *values], "drop" in values

    def notify_at(self):
        return self.timer

    def on_notify(self):
        self.timer = None
        return ["timer"], self.seen > 3

    def on_eof(self):
        return ["eof"], DISCARD

    def snapshot(self):
        return (self.seen, self.timer)


@settings(max_examples=60, deadline=None)
@given(script=scripts(items=keyed_items(keys=st.sampled_from(["a", "b", 3, None]),
                                        values=st.one_of(st.integers(-5, 60), st.sampled_from(
                                            ["x", "drop", "raise", "single", "flag"])),
                                        max_size=8)),
       restore=st.sampled_from(["always", "on_crash"]),
       options=st.sampled_from([{}, {"max_state_bytes": 60}, {"order_by": "x"}]))
def test_a_batch_step_is_the_same_on_both_paths(script, restore, options):
    fast, slow = both_ways(lambda: run_result(run(BatchRecorder, script, restore=restore,
                                                  batch=True, **options)))
    assert fast == slow


def test_a_batch_step_takes_the_flattened_path(monkeypatch):
    taken = []
    plain = Driver._plain_steps
    monkeypatch.setattr(Driver, "_plain_steps",
                        lambda self, *a: taken.append(a[0]) or plain(self, *a))
    driver = Driver(Step.of(BatchRecorder, step_id="batch", batch=True))
    first = driver.activate("k", None, ["x", "y"], now_ms=0)
    again = driver.activate("k", first.state, ["z"], now_ms=0)
    assert taken == ["k", "k"]
    assert (first.emits, again.emits, again.created) == ([2, "x", "y"], [3, "z"], 0)


def test_the_plain_route_is_picked_per_key(monkeypatch):
    # One call for the batch; the route per key: the first key of a builder
    # function builds the logic that tells whether the step has deadlines.
    taken = []
    plain = Driver._plain_steps
    monkeypatch.setattr(Driver, "_plain_steps",
                        lambda self, *a: taken.append(a[0]) or plain(self, *a))
    learnt = Driver(Step.of(lambda resume: Counter(resume)))
    acts = learnt.activate_keys(KeyBatch(["a", "b"], [[1], [2, 3]]), Clocks(0))
    assert taken == ["b"] and acts.emits == [[1], [1, 2]] and acts.metrics.keys_created == 2
    ordered = learnt.activate_keys(KeyBatch(["a", "b", "c"], [[1], [2, 3], []],
                                            order=[[[0]], [[1, 0]], None], eof=False),
                                   Clocks(0))
    assert taken == ["b", "a", "c"] and ordered.emits == [[1], [1, 2], []]  # b: 2 rows to order
    assert not Driver(Step.of(lambda resume: Counter(resume), sides=["a", "b"]))._plain


class TimerKeptOutside(StatefulLogic):
    """Arms a timer it leaves out of snapshot(): rebuilt, it has none."""

    def __init__(self, resume=None):
        self.count = resume or 0
        self.timer = None

    def on_item(self, value):
        self.count += 1
        self.timer = at(60)
        return [self.count], RETAIN

    def notify_at(self):
        return self.timer

    def on_notify(self):
        return ["fired"], DISCARD

    def snapshot(self):
        return self.count


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_a_timer_lost_at_a_rebuild_warns_on_both_paths(restore):
    script = [Batch([("k", 1)], now=at(0)), Crash(), Batch([("k", 2)], now=at(1))]
    fast, slow = both_ways(lambda: run_result(run(TimerKeptOutside, script, restore=restore)))
    assert fast == slow
    assert fast[0] == "ok" and len(fast[2]) == 1 and "TimerKeptOutside rebuilt" in fast[2][0]


def each_key(driver, batches):
    """Per batch, every key's general ``activate`` in key order: its emits,
    state, timer and armed timeout, and the batch's counts."""
    from sparkwax.errors import NO_VALUE

    stored, committed, seen = {}, {}, []
    for now_ms, runs in batches:
        results, counts = [], [0, 0, 0, 0]
        for key, values in runs:
            act = driver.activate(key, stored.get(key), values, now_ms,
                                  committed_timer=committed.get(key, NO_VALUE))
            results.append((act.emits, act.state, act.timer, act.armed))
            for index, field in enumerate(("rows", "fired", "created", "discarded")):
                counts[index] += getattr(act, field)
            stored[key], committed[key] = act.state, act.timer
        seen.append((results, counts))
    return seen


def many_keys(driver, batches):
    """``each_key`` with each batch's keys in one ``activate_keys``."""
    from sparkwax.errors import NO_VALUE

    stored, committed, seen = {}, {}, []
    for now_ms, runs in batches:
        keys = [key for key, _ in runs]
        acts = plain_keys(driver, keys, [stored.get(k) for k in keys],
                          [values for _, values in runs],
                          [committed.get(k, NO_VALUE) for k in keys], now_ms)
        counts = acts.metrics
        seen.append((list(zip(acts.emits, acts.states, acts.timers, acts.armed)),
                     [counts.rows_in, counts.timers_fired, counts.keys_created,
                      counts.keys_discarded]))
        stored.update(zip(keys, acts.states))
        committed.update(zip(keys, acts.timers))
    return seen


BATCHES = st.lists(st.tuples(
    st.integers(0, 90).map(lambda minutes: int(at(minutes).timestamp() * 1000)),
    st.dictionaries(st.sampled_from(["a", "b", 3, ("t", 1), None]),
                    st.lists(st.one_of(st.integers(-5, 60), st.sampled_from(
                        ["x"] * 8 + ["drop"] * 4 + ["raise", "single", "flag", "naive"])),
                             max_size=4),
                    max_size=4).map(lambda runs: sorted(runs.items(), key=repr))),
    max_size=4)


def _ms(minutes):
    return int(at(minutes).timestamp() * 1000)


# The cases a random draw rarely reaches, every time: a stored key discarded
# by an item and one by its timer, two timers fired in one call, a restored
# state that matters (BatchRecorder counts on from it), a key created and
# discarded at once, a key with nothing to do.
RESTORED = [(_ms(0), [("a", ["x", 5]), ("b", ["x"]), ("c", ["x", "x", "x", 6]),
                      ("d", ["drop"])]),
            (_ms(10), [("a", []), ("b", ["drop"]), ("c", []), ("e", [])]),
            (_ms(20), [("a", ["x"]), ("b", ["x"])])]


@settings(max_examples=150, deadline=None)
@given(batches=BATCHES, logic=st.sampled_from([(Wrong, False), (BatchRecorder, True)]))
@example(batches=RESTORED, logic=(BatchRecorder, True))
def test_many_keys_in_one_call_are_each_key_activated(batches, logic):
    # The packed host runs a bucket's keys in one activate_keys call:
    # the same results, counts, warnings and first error as one general
    # activation per key, in the same order.
    builder, batch = logic
    fast = outcome(lambda: many_keys(Driver(Step.of(builder, batch=batch)), batches))
    with pytest.MonkeyPatch.context() as patch:
        general_only(patch)
        slow = outcome(lambda: each_key(Driver(Step.of(builder, batch=batch)), batches))
    assert fast == slow
