"""The cross-host cases (tests/cross_host.py) on every offline host, plus the
rules that hold the same on every host: null keys are refused, ``sw.now()`` is
None outside an activation, the metrics count the same rows."""

from __future__ import annotations

import os
import sys

import pytest

import sparkwax as sw
from sparkwax.testing import Batch, Crash, run, run_bounded

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from cross_host import CASES, Tags, row  # noqa: E402

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
