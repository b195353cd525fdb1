"""The cross-host cases (tests/cross_host.py) on Spark: the per-key and packed
hosts, streaming (one micro-batch, metrics from Spark's progress) and bounded,
give what every offline host gives."""

from __future__ import annotations

import os
import sys

import pytest
from pyspark import cloudpickle

import sparkwax as sw
from sparkwax.testing import Batch
from sparkwax.testing.spark import run_script_on_spark

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
import cross_host  # noqa: E402
from cross_host import CASES, INPUT, Tags  # noqa: E402

cloudpickle.register_pickle_by_value(cross_host)   # workers cannot import tests/

BY_NAME = pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
HOSTS = pytest.mark.parametrize("host, buckets", [("per_key", None), ("packed", 2)])


@BY_NAME
@HOSTS
def test_streaming_on_spark(spark, tmp_path, case, host, buckets):
    result = run_script_on_spark(spark, Tags, [Batch(case.items)], input_schema=INPUT,
                                 output_schema="tag string", host=host, buckets=buckets,
                                 workdir=str(tmp_path), **case.options)
    assert {k: [v[0] for v in vs] for k, vs in result.by_key.items()} == case.expected
    assert (result.metrics.rows_in, result.metrics.rows_late) == (len(case.items), case.late)


@BY_NAME
@HOSTS
def test_bounded_on_spark(spark, case, host, buckets):
    rows = [(key, value["ts"], value["seq"], value["tag"]) for key, value in case.items]
    frame = spark.createDataFrame(rows, INPUT)
    out = sw.stateful(frame, key="key", builder=Tags, output_schema="tag string", host=host,
                      buckets=buckets, **case.options)
    got = {}
    for found in out.collect():
        got.setdefault(found["key"], []).append(found["tag"])
    # bounded output rows of one key keep the order they were emitted in
    assert got == case.expected


def test_a_callable_order_by_is_refused_on_spark(spark):
    frame = spark.createDataFrame([("a", None, 1, "x")], INPUT)
    with pytest.raises(sw.ConfigError, match="order_by must name columns"):
        sw.stateful(frame, key="key", builder=Tags, output_schema="tag string",
                    order_by=lambda value: value["seq"])
