"""join and connected streams offline: exact outputs for every insert and emit
mode, tagged values, and the row adapter the Spark ``connect`` uses."""

from __future__ import annotations

import pickle
from datetime import timedelta

import pytest

import sparkwax as sw
from sparkwax.operators import Tagged, TumblingWindower, count_window, joiner, stateful_map, tag
from sparkwax.sides import SIDE_COLUMN, Sides
from sparkwax.step import Step
from sparkwax.logic import overrides_notify_at
from sparkwax.testing import Batch, Crash, Eof, run, run_bounded

from kit import T0


def script():
    """k1: L1, R1, L2, R2 ; k2: R3 only ; k3: L3 only."""
    return [Batch(tag(0, [("k1", "L1")]) + tag(1, [("k1", "R1"), ("k2", "R3")])),
            Crash(),
            Batch(tag(0, [("k1", "L2"), ("k3", "L3")]) + tag(1, [("k1", "R2")])),
            Eof()]


@pytest.mark.parametrize("insert_mode,emit_mode,expected", [
    # complete: emit once every side has a value, then discard (k1 starts over)
    ("last", "complete", {"k1": [("L1", "R1"), ("L2", "R2")]}),
    ("first", "complete", {"k1": [("L1", "R1"), ("L2", "R2")]}),
    ("product", "complete", {"k1": [("L1", "R1"), ("L2", "R2")]}),
    # final: emit at EOF, None for a missing side
    ("last", "final", {"k1": [("L2", "R2")], "k2": [(None, "R3")], "k3": [("L3", None)]}),
    ("first", "final", {"k1": [("L1", "R1")], "k2": [(None, "R3")], "k3": [("L3", None)]}),
    ("product", "final", {"k1": [("L1", "R1"), ("L1", "R2"), ("L2", "R1"), ("L2", "R2")],
                          "k2": [(None, "R3")], "k3": [("L3", None)]}),
    # running: emit after every item, keep the state
    ("last", "running", {"k1": [("L1", None), ("L1", "R1"), ("L2", "R1"), ("L2", "R2")],
                         "k2": [(None, "R3")], "k3": [("L3", None)]}),
    ("first", "running", {"k1": [("L1", None), ("L1", "R1"), ("L1", "R1"), ("L1", "R1")],
                          "k2": [(None, "R3")], "k3": [("L3", None)]}),
    ("product", "running", {"k1": [("L1", None), ("L1", "R1"), ("L1", "R1"), ("L2", "R1"),
                                   ("L1", "R1"), ("L1", "R2"), ("L2", "R1"), ("L2", "R2")],
                            "k2": [(None, "R3")], "k3": [("L3", None)]}),
])
def test_join_modes(insert_mode, emit_mode, expected):
    result = run(joiner(2, insert_mode=insert_mode, emit_mode=emit_mode), script())
    assert result.by_key == expected


def test_join_state_after_each_mode():
    assert run(joiner(2), script()).live_keys == 2            # complete: k2, k3 wait
    assert run(joiner(2, emit_mode="final"), script()).live_keys == 0
    assert run(joiner(2, emit_mode="running"), script()).snapshots == {
        "k1": [["L2"], ["R2"]], "k2": [[], ["R3"]], "k3": [["L3"], []]}


def test_join_with_named_sides_and_three_inputs():
    items = (tag("orders", [("k", {"id": 1})]) + tag("users", [("k", {"name": "ann"})])
             + tag("payments", [("k", {"paid": 9.5})]))
    result = run_bounded(joiner(["orders", "users", "payments"]), items)
    assert result.by_key == {"k": [({"id": 1}, {"name": "ann"}, {"paid": 9.5})]}


def test_join_against_bytewax():
    bytewax_operators = pytest.importorskip("bytewax.operators")
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSink, TestingSource, run_main

    left = [("a", 1), ("b", 2), ("a", 3)]
    right = [("a", 10), ("c", 30), ("a", 20)]
    for insert_mode in ("first", "last", "product"):
        flow = Dataflow("j")
        sides = [bytewax_operators.input(f"in{i}", flow, TestingSource(items))
                 for i, items in enumerate([left, right])]
        out = []
        joined = bytewax_operators.join("j", *sides, insert_mode=insert_mode,
                                        emit_mode="final")
        bytewax_operators.output("out", joined, TestingSink(out))
        run_main(flow)
        theirs = {}
        for key, value in out:
            theirs.setdefault(key, []).append(value)
        ours = run_bounded(joiner(2, insert_mode=insert_mode, emit_mode="final"),
                           tag(0, left) + tag(1, right)).by_key
        assert {k: sorted(v, key=repr) for k, v in ours.items()} == \
            {k: sorted(v, key=repr) for k, v in theirs.items()}


def test_join_errors():
    with pytest.raises(sw.ConfigError, match="insert mode"):
        joiner(2, insert_mode="middle")
    with pytest.raises(sw.ConfigError, match="emit mode"):
        joiner(2, emit_mode="sometimes")
    with pytest.raises(sw.CallbackError, match="unknown join side"):
        run(joiner(2), [Batch(tag(5, [("k", 1)]))])
    with pytest.raises(sw.CallbackError, match="pair"):
        run(joiner(2), [Batch([("k", 1)])])


# -- Tagged and the Spark row adapter ----------------------------------------------


def test_tagged_is_a_pair_that_reads_fields():
    item = Tagged("left", {"ts": 1, "n": 2})
    side, value = item
    assert (side, value, item.side, item.value, item["n"]) == ("left", {"ts": 1, "n": 2},
                                                               "left", {"ts": 1, "n": 2}, 2)
    assert item == ("left", {"ts": 1, "n": 2}) and item[0] == "left"
    assert pickle.loads(pickle.dumps(item)) == item
    assert type(pickle.loads(pickle.dumps(item))) is Tagged


def test_tagged_values_run_in_event_time_offline():
    at = lambda m: {"ts": T0 + timedelta(minutes=m)}  # noqa: E731
    script = [Batch(tag("l", [("k", at(3))]) + tag("r", [("k", at(1))])), Eof()]
    result = run(joiner(["l", "r"], emit_mode="running"), script, time=sw.EventTime("ts"))
    # ordered by event time: r (1 min) first
    assert result.by_key == {"k": [(None, at(1)), (at(3), at(1))]}


UNION = Sides(("orders", "users"), layout=((("id", "__sw0_id"), ("ts", "__sw0_ts")),
                                            (("name", "__sw1_name"),)))


def row(side, **columns):
    base = {SIDE_COLUMN: side, "ts": None, "__sw0_id": None, "__sw0_ts": None,
            "__sw1_name": None}
    base.update(columns)
    return base


def test_the_driver_turns_union_rows_into_tagged_values():
    seen = stateful_map(lambda state, item: (1, item))
    step = Step.of(seen, sides=UNION)
    result = run(step, [Batch([("k", row(0, __sw0_id=7, __sw0_ts=1)),
                               ("k", row(1, __sw1_name="ann"))])])
    assert result.by_key == {"k": [("orders", {"id": 7, "ts": 1}), ("users", {"name": "ann"})]}
    assert all(type(v) is Tagged for v in result.by_key["k"])
    assert step.step_id == "stateful:stateful_map"


def test_a_connected_step_keeps_timers_only_when_the_logic_has_them():
    plain = Step.of(stateful_map(lambda s, v: (1, v)), sides=UNION)
    timed = Step.of(count_window(TumblingWindower("1 minute")), sides=UNION)
    assert not plain.uses_timers() and timed.uses_timers()
    assert not overrides_notify_at(type(plain.logic_builder()(None)))
