"""The cross-host cases (tests/cross_host.py) on every offline host, plus the
rules that hold the same on every host: null keys are refused, ``sw.now()`` is
None outside an activation, the metrics count the same rows."""

from __future__ import annotations

import os
import sys

import pytest

import sparkwax as sw
from sparkwax.testing import Batch, Crash, Eof, Runner, check_logic, run, run_bounded

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from cross_host import (BAD_TIMES, CASES, LockedAtEof, Tags, TimerOutsideSnapshot,  # noqa: E402
                        builder_holding_a_lock, row)

BY_NAME = pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])


@BY_NAME
@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_streaming_offline(case, restore):
    result = run(Tags, [Batch(case.items)], restore=restore, **case.options)
    assert result.by_key == case.expected
    assert result.late == result.metrics.rows_late == case.late
    assert result.metrics.rows_in == len(case.items)


@BY_NAME
def test_bounded_offline(case):
    result = run_bounded(Tags, case.items, **case.options)
    assert result.by_key == case.expected
    assert result.late == result.metrics.rows_late == case.late


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_a_null_key_is_refused_in_both_restore_modes(restore):
    with pytest.raises(sw.InputError, match="null or NaN key"):
        run(Tags, [Batch([row("a", "x")]), Crash(), Batch([(None, {"tag": "y"})])],
            restore=restore)
    with pytest.raises(sw.InputError, match="null or NaN key"):
        run_bounded(Tags, [(float("nan"), {"tag": "y"})])


def test_now_is_none_after_a_run_and_current_clock_inside():
    seen = []

    class Sees(Tags):
        def on_item(self, value):
            seen.append(sw.current_clock())
            return [], sw.RETAIN

    run(Sees, [Batch([row("a", "x")], now=sw.timers.from_epoch_ms(5_000))])
    assert seen == [sw.Clock(5_000, "processing")]
    assert sw.now() is None and sw.current_clock() is None


def test_a_callable_order_by_is_offline_only_and_its_errors_name_the_key():
    result = run(Tags, [Batch([row("a", "b", 2), row("a", "a", 1)])],
                 order_by=lambda value: value["seq"])
    assert result.by_key == {"a": ["a", "b"]}
    with pytest.raises(sw.InputError, match="key 'a'.*order_by"):
        run(Tags, [Batch([row("a", "b", 2), row("a", "a", 1)])],
            order_by=lambda value: value["missing"])


def test_incomparable_order_by_values_are_an_input_error():
    with pytest.raises(sw.InputError, match="order_by values cannot be compared"):
        run(Tags, [Batch([row("a", "b", 2), ("a", {"seq": "x", "tag": "c"})])], order_by="seq")


# --- every check runs on every offline entry point (the Step's) ---

OFFLINE_ENTRIES = {
    "run": lambda builder, **o: run(builder, [Batch([row("a", "x")])], **o),
    "run_on_crash": lambda builder, **o: run(builder, [Batch([row("a", "x")])],
                                             restore="on_crash", **o),
    "run_bounded": lambda builder, **o: run_bounded(builder, [row("a", "x")], **o),
    "Runner": lambda builder, **o: Runner(builder, **o),
    "check_logic": lambda builder, **o: check_logic(builder, max_examples=2, **o),
}
ENTRIES = pytest.mark.parametrize("entry", sorted(OFFLINE_ENTRIES))


@ENTRIES
@pytest.mark.parametrize("time", BAD_TIMES, ids=repr)
def test_a_bad_time_mode_is_refused_by_every_entry_point(entry, time):
    # run_bounded used to skip this check (Runner had it)
    with pytest.raises(sw.ConfigError, match="time must be ProcessingTime"):
        OFFLINE_ENTRIES[entry](Tags, time=time)


@ENTRIES
def test_a_builder_spark_could_not_ship_is_refused_by_every_entry_point(entry):
    with pytest.raises(sw.BuilderError, match="cannot be pickled"):
        OFFLINE_ENTRIES[entry](builder_holding_a_lock())


@pytest.mark.parametrize("how", ["streaming", "bounded"])
def test_an_unpicklable_snapshot_fails_in_bounded_mode_as_in_a_stream(how):
    # bounded mode used to commit nothing for a key that discards at EOF
    with pytest.raises(sw.SnapshotError, match="cannot be pickled") as info:
        if how == "streaming":
            run(LockedAtEof, [Batch([row("a", "x")]), Eof()])
        else:
            run_bounded(LockedAtEof, [row("a", "x")])
    assert info.value.key == "a"


@pytest.mark.parametrize("restore", ["always", "on_crash"])
def test_eof_after_a_restore_warns_of_lost_state_offline(restore):
    script = [Batch([row("a", "x")]), Crash(), Eof()]
    with pytest.warns(sw.LostStateWarning):
        result = run(TimerOutsideSnapshot, script, restore=restore,
                     time=sw.EventTime("ts"))
    assert result.by_key == {"a": [1]}
