"""Bytewax 0.21.1's operator family, side by side: every operator (stateful_map,
stateful_flat_map, collect, the *_final family, join in every mode, every
windower with every window operator, out-of-order items) through Bytewax's
``run_main`` and through sparkwax's offline runner, compared per key, window
ids and open/close metadata included, and the snapshots each key holds before
EOF (read from Bytewax's recovery store). The bounded Spark run of the same
cases is tests/spark/operators/test_bytewax_family_spark.py."""

from __future__ import annotations

import pytest

pytest.importorskip("bytewax.operators")

import sparkwax as sw  # noqa: E402
from sparkwax.testing import Batch, Crash, Eof, run  # noqa: E402

from bytewax_family import (  # noqa: E402
    WAIT, bytewax_result, bytewax_snapshots, family_cases, offline_items,
    sparkwax_shape)

CASES = {case.name: case for case in family_cases()}
TIME = sw.EventTime("ts", watermark=WAIT)


def offline(case, *, crash_every=None):
    pairs = offline_items(case)
    script = []
    for number, pair in enumerate(pairs):       # one item per batch, like batch_size=1
        script.append(Batch([pair]))
        if crash_every and number % crash_every == crash_every - 1:
            script.append(Crash())
    script.append(Eof())
    time = TIME if case.windowed else None
    return sparkwax_shape(case, run(case.builder, script, time=time).by_key)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_outputs_per_key_as_bytewax(name):
    expected = bytewax_result(name)
    assert expected, "the case must produce something"
    assert offline(CASES[name]) == expected


@pytest.mark.parametrize("name", ["collect_window-session", "join-first-running",
                                  "fold_window-sliding", "count_window-session"])
def test_same_outputs_with_crashes(name):
    assert offline(CASES[name], crash_every=3) == bytewax_result(name)


@pytest.mark.parametrize("name", sorted(n for n, case in CASES.items() if case.snapshots))
def test_same_snapshots_per_key_as_bytewax(name, tmp_path):
    """After every item and before EOF, each key's snapshot is Bytewax's."""
    case = CASES[name]
    expected = bytewax_snapshots(case, tmp_path)
    assert expected, "the case must leave some state"
    script = [Batch([pair]) for pair in offline_items(case)]   # no Eof: state stays
    got = run(case.builder, script).snapshots
    bytewax_view, sparkwax_view = case.snapshots
    assert {k: sparkwax_view(s) for k, s in got.items()} == {
        k: bytewax_view(s) for k, s in expected.items()}


def test_snapshots_are_compared_for_the_whole_one_input_family():
    assert {name for name, case in CASES.items() if case.snapshots} == {
        "stateful_map", "stateful_flat_map", "collect", "fold_final", "reduce_final",
        "count_final", "max_final", "min_final"}


def test_the_cases_cover_the_family_and_out_of_order_windows():
    names = set(CASES)
    for operator in ("stateful_map", "stateful_flat_map", "collect", "fold_final",
                     "reduce_final", "count_final", "max_final", "min_final"):
        assert operator in names
    assert {f"join-{i}-{e}" for i in ("first", "last", "product")
            for e in ("complete", "final", "running")} <= names
    for windower in ("tumbling", "sliding", "session"):
        for operator in ("collect_window", "count_window", "fold_window", "reduce_window",
                         "max_window", "min_window"):
            assert f"{operator}-{windower}" in names
    # out of order inside a window: Bytewax's ordered collect sorts by time
    collected = bytewax_result("collect_window-tumbling")["a"][0][3]
    assert [v["x"] for v in collected] == [2, 3, 1]
    sessions = bytewax_result("count_window-session")["a"]
    assert [row[0] for row in sessions] == list(range(len(sessions)))
