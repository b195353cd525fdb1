"""Every count and restore case of the driver's plain activations, reached
deterministically: ``activate_keys`` (the packed host's call),
``activate`` and ``activate_live`` on the flattened path, each checked
against expected values and against the general path (one ``activate`` per
key, the flattened path turned off). The logic's state matters: a key that
restarted from nothing would count from 1 again.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

import sparkwax as sw
from sparkwax._driver import Driver, sorted_keys
from sparkwax.errors import NO_VALUE
from sparkwax.logic import DISCARD, RETAIN, StatefulBatchLogic, StatefulLogic
from sparkwax.metrics import StepMetrics
from sparkwax.recovery import decode
from sparkwax.step import Step
from sparkwax.testing.strategies import START

from kit import plain_keys

_init = Driver.__init__


def at(minutes):
    return START + timedelta(minutes=minutes)


def ms(minutes):
    return int(at(minutes).timestamp() * 1000)


class _Counted:
    """What ``Tally`` and ``BatchTally`` share: the count and the timer (the
    snapshot), and a fired timer that discards a key counted 3 or more."""

    def __init__(self, resume=None):
        self.count, self.timer = resume or (0, None)

    def notify_at(self):
        return self.timer

    def on_notify(self):
        self.timer = None
        return [("fired", self.count)], DISCARD if self.count >= 3 else RETAIN

    def snapshot(self):
        return (self.count, self.timer)


class Tally(_Counted, StatefulLogic):
    """Counts its items; an int arms a timer at that minute; "drop"
    discards; "now" emits the activation clock; a fired timer discards the
    key once it has counted 3 items or more."""

    def on_item(self, value):
        self.count += 1
        if value == "now":
            return [sw.now()], RETAIN
        if isinstance(value, int):
            self.timer = at(value)
        return [self.count], DISCARD if value == "drop" else RETAIN


class BatchTally(_Counted, StatefulBatchLogic):
    """``Tally`` for a batch step: one ``on_batch`` per activation."""

    def on_batch(self, values):
        self.count += len(values)
        for value in values:
            if isinstance(value, int):
                self.timer = at(value)
        if "now" in values:
            return [sw.now()], RETAIN
        return [self.count], DISCARD if "drop" in values else RETAIN


# Three micro-batches, keys in the order a host runs them. Batch 1 creates
# a, b, d, f and creates-and-discards c; batch 2 fires the due timers of a
# (kept) and d (discarded), discards the stored b and runs e with nothing;
# batch 3 restores a (its count goes on from 3) and reads the clock in f.
BATCHES = [
    (ms(0), [("a", ["x", 5]), ("b", ["x"]), ("c", ["drop"]), ("d", ["x", "x", 6]),
             ("f", ["x"])]),
    (ms(10), [("a", []), ("b", ["drop"]), ("d", []), ("e", [])]),
    (ms(20), [("a", ["x"]), ("f", ["now"])]),
]

ITEM_EXPECTED = [
    # per batch: {key: (emits, snapshot or None)}, (rows, fired, created, discarded, emits)
    ({"a": ([1, 2], (2, at(5))), "b": ([1], (1, None)), "c": ([1], None),
      "d": ([1, 2, 3], (3, at(6))), "f": ([1], (1, None))}, (8, 0, 4, 0, 8)),
    ({"a": ([("fired", 2)], (2, None)), "b": ([2], None), "d": ([("fired", 3)], None),
      "e": ([], None)}, (1, 2, 0, 2, 3)),
    ({"a": ([3], (3, None)), "f": ([at(20)], (2, None))}, (2, 0, 0, 0, 2)),
]

BATCH_EXPECTED = [
    ({"a": ([2], (2, at(5))), "b": ([1], (1, None)), "c": ([1], None),
      "d": ([3], (3, at(6))), "f": ([1], (1, None))}, (8, 0, 4, 0, 5)),
    ({"a": ([("fired", 2)], (2, None)), "b": ([2], None), "d": ([("fired", 3)], None),
      "e": ([], None)}, (1, 2, 0, 2, 3)),
    ({"a": ([3], (3, None)), "f": ([at(20)], (2, None))}, (2, 0, 0, 0, 2)),
]

CASES = [(Tally, False, ITEM_EXPECTED), (BatchTally, True, BATCH_EXPECTED)]


def general_driver(builder, batch, step_id="tally"):
    """A Driver that takes the general path (``_plain`` off)."""
    driver = Driver(Step.of(builder, step_id=step_id, batch=batch))
    driver._plain = False
    return driver


def snapshot_of(state):
    return None if state is None else decode(state, step_id="tally", key="?")


def many_keys(driver):
    """Each batch through one ``activate_keys``: per key ``(emits,
    snapshot, timer, armed)`` and the batch's counts."""
    stored, committed, seen = {}, {}, []
    for now_ms, runs in BATCHES:
        keys = [key for key, _ in runs]
        acts = plain_keys(driver, keys, [stored.get(k) for k in keys],
                          [values for _, values in runs],
                          [committed.get(k, NO_VALUE) for k in keys], now_ms)
        assert len(acts.emits) == len(acts.states) == len(acts.timers) == len(acts.armed) \
            == len(keys)
        seen.append(({key: (emits, snapshot_of(state), timer, armed) for key, emits, state,
                      timer, armed in zip(keys, acts.emits, acts.states, acts.timers,
                                          acts.armed)},
                     acts.metrics.deterministic()))
        stored.update(zip(keys, acts.states))
        committed.update(zip(keys, acts.timers))
    return seen


def each_key(driver, live=False):
    """The same batches, one ``activate`` (``live``: ``activate_live``) per key."""
    stored, logics, committed, seen = {}, {}, {}, []
    for now_ms, runs in BATCHES:
        results, counts = {}, StepMetrics()
        for key, values in runs:
            if live:
                act, logic = driver.activate_live(key, logics.pop(key, None), None, values,
                                                  now_ms)
                if logic is not None:
                    logics[key] = logic
                # a live logic is kept, not encoded: no state, the snapshot left unread
                assert act.state is None and (act.snapshot is None) is (logic is None)
                snapshot = None if logic is None else logic.snapshot()
            else:
                act = driver.activate(key, stored.get(key), values, now_ms,
                                      committed_timer=committed.get(key, NO_VALUE))
                snapshot = snapshot_of(act.state)
                assert act.snapshot in (snapshot, None) or repr(act.snapshot) == \
                    "<unchanged snapshot>"
            results[key] = (act.emits, snapshot, act.timer, act.armed)
            counts += act.metrics()
            stored[key], committed[key] = act.state, act.timer
        seen.append((results, counts.deterministic()))
    return seen


def expected_counts(counts):
    rows, fired, created, discarded, emits = counts
    return StepMetrics(rows, 0, fired, created, discarded, emits).deterministic()


@pytest.mark.parametrize("builder, batch, expected", CASES)
def test_many_keys_reach_every_count_and_restore_case(builder, batch, expected):
    seen = many_keys(Driver(Step.of(builder, step_id="tally", batch=batch)))
    for (results, counts), (want, want_counts) in zip(seen, expected):
        assert {k: r[:2] for k, r in results.items()} == want
        assert counts == expected_counts(want_counts)
    # a's timer (minute 5, armed at the batch's now) and d's (minute 6)
    assert seen[0][0]["a"][2] == ms(5) and seen[0][0]["d"][2] == ms(6)
    assert seen[0][0]["a"][3] is not None and seen[1][0]["a"][2:] == (None, None)
    # the general path, one activate per key, agrees field by field
    assert seen == each_key(general_driver(builder, batch))


@pytest.mark.parametrize("builder, batch, expected", CASES)
@pytest.mark.parametrize("flat", [True, False])
def test_one_key_at_a_time_reaches_every_case(builder, batch, expected, flat):
    driver = Driver(Step.of(builder, step_id="tally", batch=batch)) if flat \
        else general_driver(builder, batch)
    seen = each_key(driver)
    for (results, counts), (want, want_counts) in zip(seen, expected):
        assert {k: r[:2] for k, r in results.items()} == want
        assert counts == expected_counts(want_counts)
    assert seen == many_keys(Driver(Step.of(builder, step_id="tally", batch=batch)))


@pytest.mark.parametrize("builder, batch, expected", CASES)
@pytest.mark.parametrize("flat", [True, False])
def test_live_logics_reach_every_case(builder, batch, expected, flat):
    driver = Driver(Step.of(builder, step_id="tally", batch=batch)) if flat \
        else general_driver(builder, batch)
    seen = each_key(driver, live=True)
    for (results, counts), (want, want_counts) in zip(seen, expected):
        assert {k: r[:2] for k, r in results.items()} == want
        assert counts == expected_counts(want_counts)


def test_the_plain_keys_run_at_their_clock_and_restore_their_state():
    # Batch 3 alone, from batch 2's state: f reads the bucket's clock, a goes on counting.
    driver = Driver(Step.of(Tally, step_id="tally"))
    first = plain_keys(driver, ["a", "f"], [None, None], [["x", "x"], ["x"]],
                       [NO_VALUE, NO_VALUE], ms(0))
    acts = plain_keys(driver, ["a", "f"], first.states, [["x"], ["now"]], first.timers,
                      ms(20))
    assert acts.emits == [[3], [at(20)]]
    assert [snapshot_of(s) for s in acts.states] == [(3, None), (2, None)]
    assert acts.metrics.deterministic() == StepMetrics(2, 0, 0, 0, 0, 2).deterministic()


def test_an_untouched_key_keeps_its_stored_bytes():
    # A restored key with no rows and no due timer: no callback ran, the stored
    # blob is committed as it is, its timer re-read and armed.
    driver = Driver(Step.of(Tally, step_id="tally"))
    first = driver.activate("a", None, [30], ms(0))
    for act in (driver.activate("a", first.state, [], ms(10)),
                general_driver(Tally, False).activate("a", first.state, [], ms(10))):
        assert act.state is first.state and act.timer == ms(30) and act.armed is not None
        assert (act.emits, act.fired, act.created, act.discarded, act.rows) == ([], 0, 0, 0, 0)
        assert repr(act.snapshot) == "<unchanged snapshot>"



def test_hosts_run_keys_sorted_and_unique():
    assert sorted_keys([10, 9, 10]) == [9, 10]
    assert sorted_keys(["b", 1, "a"]) == [1, "a", "b"]  # not comparable: type name, repr
