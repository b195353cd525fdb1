"""Bytewax's family offline: stateful_map, stateful_flat_map, the *_final
operators and collect, with exact outputs (and the same outputs as Bytewax
0.21.1 where its result is deterministic)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sparkwax as sw
from sparkwax import recovery
from sparkwax.operators import (collect, count_final, fold_final, max_final, min_final,
                                reduce_final, stateful_flat_map, stateful_map)
from sparkwax.testing import Batch, Crash, Eof, run, run_bounded

from kit import T0, at_second as t

EVENT = sw.EventTime("ts")


def ev(seconds, n=None):
    return {"ts": t(seconds), "n": n}


def running_count(count, _value):
    count = (count or 0) + 1
    return count, count


def reset_at_three(total, value):
    """Running total; the state is discarded when it reaches 3 or more."""
    total = (total or 0) + value
    return (None if total >= 3 else total), total


# -- stateful_map / stateful_flat_map -------------------------------------------


def test_stateful_map_emits_one_value_per_item_and_survives_crashes():
    script = [Batch([("a", "x"), ("b", "y"), ("a", "z")]), Crash(), Batch([("a", "w")]), Eof()]
    result = run(stateful_map(running_count), script)
    assert result.by_key == {"a": [1, 2, 3], "b": [1]}
    assert result.snapshots == {"a": 3, "b": 1}


def test_stateful_map_none_state_discards_the_key():
    result = run(stateful_map(reset_at_three), [Batch([("a", 1), ("a", 2), ("a", 1)]),
                                                Batch([("a", 5), ("a", 1)])])
    # 1, 1+2=3 (discard), 1, 1+5=6 (discard), 1
    assert result.by_key == {"a": [1, 3, 1, 6, 1]}
    assert result.snapshots == {"a": 1}


def test_stateful_map_emits_none_outputs_too():
    result = run(stateful_map(lambda s, v: (1, None)), [Batch([("a", 1), ("a", 2)])])
    assert result.by_key == {"a": [None, None]}


def test_stateful_flat_map_emits_every_output():
    def pairs(seen, value):
        seen = (seen or ()) + (value,)
        return (None if len(seen) == 3 else seen), [(value, n) for n in range(len(seen))]

    result = run(stateful_flat_map(pairs), [Batch([("a", "p"), ("a", "q")]), Crash(),
                                            Batch([("a", "r"), ("a", "s")])])
    assert result.by_key == {"a": [("p", 0), ("q", 0), ("q", 1), ("r", 0), ("r", 1), ("r", 2),
                                   ("s", 0)]}
    assert result.snapshots == {"a": ("s",)}


def test_mapper_must_return_a_pair():
    with pytest.raises(sw.CallbackError, match="2-tuple"):
        run(stateful_map(lambda s, v: v), [Batch([("a", 1)])])
    with pytest.raises(sw.ConfigError, match="callable mapper"):
        stateful_map("not callable")


# -- the *_final family ---------------------------------------------------------

ITEMS = [("a", 3), ("b", 7), ("a", 5), ("a", 5), ("b", 1), ("c", 0)]


def test_final_operators_emit_once_at_eof():
    assert run_bounded(count_final(), ITEMS).by_key == {"a": [3], "b": [2], "c": [1]}
    assert run_bounded(reduce_final(lambda a, b: a * 10 + b), ITEMS).by_key == {
        "a": [355], "b": [71], "c": [0]}
    assert run_bounded(fold_final(list, lambda acc, v: acc + [v]), ITEMS).by_key == {
        "a": [[3, 5, 5]], "b": [[7, 1]], "c": [[0]]}
    assert run_bounded(max_final(), ITEMS).by_key == {"a": [5], "b": [7], "c": [0]}
    assert run_bounded(min_final(), ITEMS).by_key == {"a": [3], "b": [1], "c": [0]}


def test_final_operators_emit_nothing_before_eof_and_keep_state():
    script = [Batch(ITEMS[:3]), Crash(), Batch(ITEMS[3:])]
    result = run(count_final(), script)
    assert result.outputs == []
    assert result.snapshots == {"a": 3, "b": 2, "c": 1}
    done = run(count_final(), script + [Eof()])
    assert done.by_key == {"a": [3], "b": [2], "c": [1]}
    assert done.live_keys == 0


def test_fold_final_keeps_a_none_accumulator():
    keep_none = fold_final(lambda: "start", lambda acc, v: None if v == "clear" else v)
    result = run(keep_none, [Batch([("a", "x"), ("a", "clear")]), Crash(), Eof()])
    assert result.by_key == {"a": [None]}


# Snapshots: the accumulator itself (Bytewax's shape; tests/unit/operators/test_bytewax_family.py
# compares them with Bytewax's recovery store), except None and 1-tuples, which
# are stored as (acc,), the form every accumulator had before.

LAST = {   # each operator's accumulator becomes the key's latest value
    "fold_final": fold_final(lambda: "start", lambda acc, value: value),
    "reduce_final": reduce_final(lambda acc, value: value),
    "max_final": max_final(by=lambda value: 0),      # a tie keeps the earlier: the first
    "min_final": min_final(by=lambda value: 0),
}
ACCUMULATORS = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: st.tuples(inner) | st.tuples(inner, inner) | st.lists(inner, max_size=2),
    max_leaves=6)


def test_final_snapshots_are_the_accumulator_as_in_bytewax():
    script = [Batch(ITEMS)]                  # no Eof: the state stays
    assert run(fold_final(list, lambda acc, v: acc + [v]), script).snapshots == {
        "a": [3, 5, 5], "b": [7, 1], "c": [0]}
    assert run(reduce_final(lambda a, b: a * 10 + b), script).snapshots == {
        "a": 355, "b": 71, "c": 0}
    assert run(max_final(), script).snapshots == {"a": 5, "b": 7, "c": 0}
    assert run(min_final(), script).snapshots == {"a": 3, "b": 1, "c": 0}
    assert run(count_final(), script).snapshots == {"a": 3, "b": 2, "c": 1}


@pytest.mark.parametrize("name", sorted(LAST))
def test_none_and_one_tuple_accumulators_are_stored_boxed(name):
    snapshots = run(LAST[name], [Batch([("none", None), ("one", (7,)), ("two", (7, 8)),
                                        ("boxed", ((7,),))])]).snapshots
    assert snapshots == {"none": (None,), "one": ((7,),), "two": (7, 8), "boxed": (((7,),),)}


@pytest.mark.parametrize("name", sorted(LAST))
@given(acc=ACCUMULATORS)
def test_every_accumulator_survives_a_restore(name, acc):
    result = run(LAST[name], [Batch([("k", acc)]), Crash(), Eof()])
    assert result.by_key == {"k": [acc]}


@pytest.mark.parametrize("name", sorted(LAST))
@given(acc=ACCUMULATORS)
def test_a_snapshot_written_before_restores(name, acc):
    """Earlier sparkwax stored every accumulator as the 1-tuple (acc,)."""
    blob = recovery.encode((acc,), step_id="s", key="k")   # what that version committed
    logic = LAST[name](recovery.decode(blob, step_id="s", key="k"))
    assert logic.on_eof() == ([acc], sw.DISCARD)


def test_an_old_fold_final_snapshot_restores_and_is_rewritten_in_the_new_form():
    builder = fold_final(list, lambda acc, v: acc + [v])
    logic = builder(([1, 2],))                         # written before: (acc,)
    assert logic.on_item(3) == ((), sw.RETAIN)
    assert logic.snapshot() == [1, 2, 3]               # written now: acc, Bytewax's shape
    assert builder(logic.snapshot()).on_eof() == ([[1, 2, 3]], sw.DISCARD)


def test_max_and_min_final_ties_keep_the_earlier_value():
    rows = [("k", {"id": 1, "score": 5}), ("k", {"id": 2, "score": 9}),
            ("k", {"id": 3, "score": 9}), ("k", {"id": 4, "score": 1}),
            ("k", {"id": 5, "score": 1})]
    assert run_bounded(max_final(by="score"), rows).by_key == {"k": [{"id": 2, "score": 9}]}
    assert run_bounded(min_final(by=lambda v: v["score"]), rows).by_key == {
        "k": [{"id": 4, "score": 1}]}


# -- collect ---------------------------------------------------------------------


def test_collect_emits_at_max_size():
    result = run(collect(None, 2), [Batch([("a", 1), ("a", 2), ("a", 3), ("b", 4)]),
                                    Batch([("a", 5)]), Eof()])
    assert result.by_key == {"a": [[1, 2], [3, 5]], "b": [[4]]}
    assert result.live_keys == 0


def test_collect_timeout_restarts_on_every_item():
    op = collect(timedelta(seconds=10), 100)
    script = [Batch([("a", ev(0, 1)), ("a", ev(8, 2))]),   # a's timer: 18 s
              Batch([("x", ev(15))]),                       # watermark 8 s
              Batch([("a", ev(16, 3))]),                    # watermark 15 s: not due; 26 s now
              Batch([("x", ev(25))]),                       # watermark 16 s
              Batch([("x", ev(40))]),                       # watermark 25 s
              Batch([("a", ev(41, 4))]),                    # watermark 40 s: a fires first
              Eof()]
    result = run(op, script, time=EVENT)
    assert [[v["n"] for v in batch] for batch in result.by_key["a"]] == [[1, 2, 3], [4]]
    assert result.live_keys == 0


def test_collect_on_bounded_input_times_out_by_event_time():
    items = [("a", ev(s, s)) for s in (0, 3, 30, 31, 32, 60)]
    result = run_bounded(collect(timedelta(seconds=10), 3), items, time=EVENT)
    assert [[v["n"] for v in batch] for batch in result.by_key["a"]] == [
        [0, 3], [30, 31, 32], [60]]


def test_collect_validates_its_arguments():
    with pytest.raises(sw.ConfigError, match="max_size"):
        collect(timedelta(seconds=1), 0)
    with pytest.raises(sw.ConfigError):
        collect("soon", 3)


# -- the same outputs as Bytewax -------------------------------------------------

bytewax_operators = pytest.importorskip("bytewax.operators")


def bytewax_by_key(build, items):
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSink, TestingSource, run_main

    flow = Dataflow("parity")
    stream = bytewax_operators.input("inp", flow, TestingSource(items))
    out = []
    bytewax_operators.output("out", build(stream), TestingSink(out))
    run_main(flow)
    grouped = {}
    for key, value in out:
        grouped.setdefault(key, []).append(value)
    return grouped


PARITY_ITEMS = [("a", 1), ("b", 4), ("a", 2), ("a", 2), ("b", 1), ("a", 7), ("c", 3)]


@pytest.mark.parametrize("name", ["stateful_map", "stateful_flat_map", "count_final",
                                  "reduce_final", "fold_final", "max_final", "min_final"])
def test_same_outputs_as_bytewax(name):
    def flat(state, value):
        state = (state or 0) + value
        return (None if state > 5 else state), [state] * value

    ours = {
        "stateful_map": lambda: stateful_map(reset_at_three),
        "stateful_flat_map": lambda: stateful_flat_map(flat),
        "count_final": lambda: count_final(),
        "reduce_final": lambda: reduce_final(lambda a, b: a * 10 + b),
        "fold_final": lambda: fold_final(list, lambda acc, v: acc + [v]),
        "max_final": lambda: max_final(),
        "min_final": lambda: min_final(),
    }[name]()
    op = bytewax_operators
    theirs = {
        "stateful_map": lambda s: op.stateful_map("s", s, reset_at_three),
        "stateful_flat_map": lambda s: op.stateful_flat_map("s", s, flat),
        "count_final": lambda s: op.count_final("s", s, lambda kv: kv[0]),
        "reduce_final": lambda s: op.reduce_final("s", s, lambda a, b: a * 10 + b),
        "fold_final": lambda s: op.fold_final("s", s, list, lambda acc, v: acc + [v]),
        "max_final": lambda s: op.max_final("s", s),
        "min_final": lambda s: op.min_final("s", s),
    }[name]
    expected = bytewax_by_key(theirs, PARITY_ITEMS)
    assert run_bounded(ours, PARITY_ITEMS).by_key == expected
    assert run(ours, [Batch(PARITY_ITEMS[:3]), Crash(), Batch(PARITY_ITEMS[3:]),
                      Eof()]).by_key == expected
