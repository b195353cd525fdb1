"""Offline: several steps of one query (``run_flow``) and a seeded step
(``run(..., seed=)``), the rules docs/semantics.md states ("Re-keyed steps in
one query", "Seeding a step")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings, strategies as st

import sparkwax as sw
from sparkwax.testing import Batch, Crash, Eof, Tick, run, run_flow
from sparkwax.testing.reference import Accumulator, Counter, TransitionRecorder
from sparkwax.testing.strategies import keyed_items, scripts, timestamped_items

from kit import PassThrough, at, recorder_commands

TIME = sw.EventTime("ts", watermark="2 minutes")
RECORDS = scripts(items=keyed_items(keys=st.sampled_from(["a", "b", 3]),
                                    values=recorder_commands(), max_size=10))


def same(left, right):
    assert left.by_key == right.by_key
    assert left.timers == right.timers and left.snapshots == right.snapshots


@settings(max_examples=60, deadline=None)
@given(script=RECORDS, restore=st.sampled_from(["always", "on_crash"]))
def test_a_step_after_a_pass_through_runs_as_alone(script, restore):
    first, second = run_flow(script, PassThrough, lambda key, value: (key, value),
                             TransitionRecorder, restore=restore)
    same(second, run(TransitionRecorder, script, restore=restore))
    assert first.by_key == {key: [value for value in values]
                            for key, values in _items_by_key(script).items()}


@settings(max_examples=60, deadline=None)
@given(script=RECORDS)
def test_a_pass_through_after_a_step_emits_its_emits(script):
    first, second = run_flow(script, TransitionRecorder, lambda key, emit: (key, emit),
                             PassThrough)
    assert second.by_key == first.by_key == run(TransitionRecorder, script).by_key


@settings(max_examples=40, deadline=None)
@given(script=scripts(items=timestamped_items(keys=st.sampled_from(["a", "b"]),
                                              values=st.integers(0, 30)), time=TIME))
def test_an_event_time_step_after_a_pass_through_keeps_its_watermark(script):
    step = sw.Step.of(Accumulator, time=TIME)
    first, second = run_flow(script, sw.Step.of(PassThrough, time=TIME),
                             lambda key, value: (key, value), step)
    alone = run(step, script)
    same(second, alone)
    # the first step drops the late rows (its watermark is the same); none reach the second
    assert (first.late, second.late) == (alone.late, 0)
    assert second.metrics.timers_fired == alone.metrics.timers_fired


def test_rekeyed_counts_and_a_dropped_row():
    script = [Batch([("u1", "eu"), ("u2", "eu"), ("u3", "us")]), Crash(),
              Batch([("u1", "eu"), ("u4", "skip")])]
    visits, regions = run_flow(script, Counter,
                               lambda user, n: None if n > 1 else ("region-of-" + user, n),
                               Counter)
    assert visits.by_key == {"u1": [1, 2], "u2": [1], "u3": [1], "u4": [1]}
    assert regions.by_key == {"region-of-u1": [1], "region-of-u2": [1], "region-of-u3": [1],
                              "region-of-u4": [1]}


def test_at_eof_the_next_step_gets_the_on_eof_emits_then_its_own_eof():
    class EofEcho(sw.StatefulLogic):
        def __init__(self, resume=None):
            self.seen = resume or 0
        def on_item(self, value):
            self.seen += 1
            return [], sw.RETAIN
        def on_eof(self):
            return [("eof", self.seen)], sw.RETAIN
        def snapshot(self):
            return self.seen

    _, second = run_flow([Batch([("a", 1), ("a", 2)]), Eof()], EofEcho,
                         lambda key, emit: ("all", emit), EofEcho)
    assert second.by_key == {"all": [("eof", 1)]}  # a's eof emit, then its own on_eof


def test_the_arguments_after_the_first_step_come_in_pairs():
    with pytest.raises(sw.ConfigError, match="run_flow takes a first step, then"):
        run_flow([], Counter, lambda key, value: (key, value))
    with pytest.raises(sw.ConfigError, match="stands where a rekey function"):
        run_flow([], Counter, Counter, Counter)


# -- seeds ------------------------------------------------------------------------------------


class Alarm(sw.StatefulLogic):
    """Its snapshot is its timer; emits the items, and an alarm at the timer."""

    def __init__(self, resume=None):
        self.at = resume

    def on_item(self, value):
        return [("item", value)], sw.RETAIN

    def notify_at(self):
        return self.at

    def on_notify(self):
        return [("alarm", self.at)], sw.DISCARD

    def snapshot(self):
        return self.at


def test_a_seeded_timer_already_due_fires_in_the_first_batch():
    now = at(10)
    result = run(Alarm, [Tick(now=now), Tick(now=now + timedelta(seconds=5)),
                         Batch([("c", 1)], now=now + timedelta(seconds=6))],
                 seed={"a": now - timedelta(minutes=1), "b": now + timedelta(seconds=3)})
    assert result.batch_metrics[0].timers_fired == 1  # a, due at the seed
    assert result.batch_metrics[1].timers_fired == 1  # b, 3 s later
    assert result.by_key == {"a": [("alarm", now - timedelta(minutes=1))],
                             "b": [("alarm", now + timedelta(seconds=3))],
                             "c": [("item", 1)]}
    assert result.snapshots == {"c": None}


def test_a_seed_is_a_restart_from_that_state():
    first = [Batch([("a", 1), ("b", 2)]), Batch([("a", 3)])]
    rest = [Batch([("a", 4), ("c", 5)]), Batch([("b", 6)])]
    whole = run(Counter, [*first, Crash(), *rest])
    seeded = run(Counter, rest, seed=run(Counter, first).snapshots)
    assert seeded.by_key == {key: values[len(run(Counter, first).by_key.get(key, [])):]
                             for key, values in whole.by_key.items()
                             if len(values) > len(run(Counter, first).by_key.get(key, []))}
    assert seeded.snapshots == whole.snapshots


def test_an_unpicklable_seed_names_its_key():
    with pytest.raises(sw.SnapshotError, match="'a'"):
        run(Counter, [Batch([])], seed={"a": __import__("threading").Lock()})


def _items_by_key(script):
    grouped = {}
    for step in script:
        if isinstance(step, Batch):
            for key, value in step.items:
                grouped.setdefault(key, []).append(value)
    return grouped
