"""Bytewax 0.21.1's operator family on a bounded Spark run: the same cases as
tests/unit/operators/test_bytewax_family.py (see tests/bytewax_family.py), each through
``sw.stateful`` / ``sw.connect`` on DataFrames (arrival order replayed with
``order_by="seq"``), compared per key with Bytewax's own ``run_main``."""

from __future__ import annotations


import pytest
from pyspark.sql import Row

pytest.importorskip("bytewax.operators")

import sparkwax as sw  # noqa: E402
import sparkwax.operators as ops  # noqa: E402

import bytewax_family  # noqa: E402
from bytewax_family import (  # noqa: E402
    VALUE_STRUCT, WAIT, bytewax_result, family_cases, side_rows, sorted_windows)
from pyspark import cloudpickle  # noqa: E402

from kit import plain_row_value  # noqa: E402

cloudpickle.register_pickle_by_value(bytewax_family)   # workers cannot import tests/

CASES = {case.name: case for case in family_cases()}
INPUT = "key string, ts timestamp, x long, seq long"
TIME = sw.EventTime("ts", watermark=WAIT)


def pair(value):
    """A join's (left, right) from its struct (None for a missing side)."""
    return (plain_row_value(value["left"]), plain_row_value(value["right"]))


@pytest.fixture(scope="module")
def frames(spark):
    def frame(side=None):
        return spark.createDataFrame(side_rows(side), INPUT).cache()
    return {"all": frame(), "left": frame("left"), "right": frame("right")}


def spark_result(case, frames):
    time = TIME if case.windowed else None
    if case.joined:
        schema = case.schema or f"left {VALUE_STRUCT}, right {VALUE_STRUCT}"
        out = sw.connect(frames["left"], frames["right"], key="key", builder=case.builder,
                          names=["left", "right"], output_schema=schema, time=time,
                          order_by="seq")
    else:
        out = sw.stateful(frames["all"], key="key", builder=case.builder,
                          output_schema=case.schema, time=time, order_by="seq")
    got = {}
    for row in out.collect():   # a key's rows come from one group, in emission order
        if not case.windowed:
            fields = {k: v for k, v in row.asDict().items() if k != "key"}
            value = pair(row) if case.joined else plain_row_value(
                fields["value"] if list(fields) == ["value"] else Row(**fields))
        else:
            value = (row["window_id"], plain_row_value(row["open_time"]), plain_row_value(row["close_time"]),
                     pair(row["value"]) if case.joined else plain_row_value(row["value"]))
        got.setdefault(row["key"], []).append(value)
    if case.windowed:
        got = {k: sorted_windows(vs) for k, vs in got.items()}
    return got


@pytest.mark.parametrize("name", sorted(CASES))
def test_bounded_spark_matches_bytewax(frames, name):
    assert spark_result(CASES[name], frames) == bytewax_result(name)
