"""What a user porting from Bytewax meets: dataclass events and ts getters
for EventTime, and the pinned, documented differences (docs/semantics.md,
"Moving from Bytewax")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

import sparkwax as sw
import sparkwax.operators as ops
from sparkwax.errors import ConfigError, InputError
from sparkwax.testing import Batch, Eof, run, run_bounded
from sparkwax.timers import EPOCH

from kit import T0


@dataclass(frozen=True)
class Reading:
    ts: datetime
    celsius: float


def readings():
    return [("m1", Reading(T0 + timedelta(minutes=m), c)) for m, c in ((2, 20.0), (0, 21.0),
                                                                       (15, 22.0))]


def test_event_time_reads_a_dataclass_attribute():
    op = ops.count_window(ops.TumblingWindower("10 minutes", align_to=T0),
                          ts=lambda r: r.ts)
    result = run(op, [Batch(readings()), Eof()], time=sw.EventTime("ts"))
    assert [(w.window_id, w.value) for w in result.by_key["m1"]] == [(0, 2), (1, 1)]
    bounded = run_bounded(op, readings(), time=sw.EventTime("ts", watermark="1 hour"))
    assert bounded.by_key == result.by_key


def test_event_time_takes_a_ts_getter_offline():
    first = ops.stateful_map(lambda state, r: (1, r.celsius))
    by_getter = run(first, [Batch(readings())], time=sw.EventTime(lambda r: r.ts))
    assert by_getter.by_key == {"m1": [21.0, 20.0, 22.0]}   # ordered by the getter's time


def test_event_time_errors_name_what_is_missing():
    with pytest.raises(InputError, match="needs each value to have a 'when' field"):
        run(ops.count_final(), [Batch(readings())], time=sw.EventTime("when"))
    with pytest.raises(InputError, match="callable .* raised"):
        run(ops.count_final(), [Batch(readings())], time=sw.EventTime(lambda r: r.nope))
    with pytest.raises(ConfigError, match="column name"):
        sw.EventTime(42)


# -- pinned differences (each explained in docs/semantics.md) --------------------------


class Clocks(sw.StatefulLogic):
    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        return [("item", sw.now())], sw.RETAIN

    def on_eof(self):
        return [("eof", sw.now())], sw.DISCARD

    def snapshot(self):
        return None


def test_now_in_on_eof_is_the_watermark_and_the_epoch_before_any_data():
    at = lambda m: {"ts": T0 + timedelta(minutes=m)}  # noqa: E731
    result = run(Clocks, [Batch([("k", at(0))]), Batch([("k", at(30))]), Eof()],
                 time=sw.EventTime("ts", watermark="5 minutes"))
    # Bytewax: the minimum datetime before data, the end of time in on_eof
    assert result.by_key["k"] == [("item", EPOCH), ("item", T0 - timedelta(minutes=5)),
                                  ("eof", T0 + timedelta(minutes=25))]


def test_fold_final_snapshot_is_the_accumulator_as_in_bytewax():
    result = run(ops.fold_final(list, lambda acc, v: acc + [v]), [Batch([("k", 1), ("k", 2)])])
    assert result.snapshots == {"k": [1, 2]}      # Bytewax: the bare accumulator [1, 2]
    # ...except None and 1-tuples, stored as (acc,) (see sparkwax/operators/final.py)
    result = run(ops.fold_final(tuple, lambda acc, v: acc + (v,)), [Batch([("k", 1)])])
    assert result.snapshots == {"k": ((1,),)}     # Bytewax: (1,)


def test_a_failing_callback_is_a_runtime_error_in_both():
    bytewax_operators = pytest.importorskip("bytewax.operators")
    from bytewax.dataflow import Dataflow
    from bytewax.testing import TestingSink, TestingSource, run_main

    def broken(state, value):
        return {}["missing"]

    flow = Dataflow("porting_errors")
    stream = bytewax_operators.input("in", flow, TestingSource([("k", 1)]))
    bytewax_operators.output("out", bytewax_operators.stateful_map("m", stream, broken),
                             TestingSink([]))
    with pytest.raises(RuntimeError):
        run_main(flow)
    with pytest.raises(RuntimeError, match="key 'k', on_item"):
        run(ops.stateful_map(broken), [Batch([("k", 1)])])
