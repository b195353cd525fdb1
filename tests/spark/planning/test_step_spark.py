"""One Step, tested offline (tests/unit/core/test_step.py), runs on Spark as it is
(``sw.stateful(df, key=..., builder=step)``) on both hosts, and its errors and
metrics carry the same step id as offline."""

from __future__ import annotations

import pytest

import sparkwax as sw
from kit import Fussy, each_spark_host_with_buckets
from sparkwax.testing import Batch, run, run_bounded
from sparkwax.testing.spark import run_script_on_spark

INPUT = "key string, v string"


STEP = sw.Step.of(Fussy, output_schema="n long", value="v")
GOOD = [("a", "x"), ("b", "y"), ("a", "z")]


def _by_key(rows):
    found = {}
    for row in rows:
        found.setdefault(row["key"], []).append(row["n"])
    return {key: sorted(values) for key, values in found.items()}


@each_spark_host_with_buckets
def test_one_step_runs_offline_and_on_spark_under_one_step_id(spark, tmp_path, host, buckets):
    offline = run(STEP, [Batch(GOOD)])
    assert offline.step_id == run_bounded(STEP, GOOD).step_id == "stateful:Fussy"

    streamed = run_script_on_spark(spark, STEP, [Batch([(k, {"v": v}) for k, v in GOOD])],
                                   input_schema=INPUT, host=host, buckets=buckets,
                                   workdir=str(tmp_path))
    assert streamed.step_id == offline.step_id  # read from Spark's progress
    assert {k: sorted(v[0] for v in vs) for k, vs in streamed.by_key.items()} == \
        {k: sorted(vs) for k, vs in offline.by_key.items()}
    assert streamed.metrics.deterministic() == offline.metrics.deterministic()

    frame = spark.createDataFrame(GOOD, INPUT)
    bounded = sw.stateful(frame, key="key", builder=STEP, host=host, buckets=buckets)
    assert _by_key(bounded.collect()) == {"a": [1, 2], "b": [1]}

    with pytest.raises(sw.CallbackError) as offline_error:
        run_bounded(STEP, [("a", "boom")])
    failing = sw.stateful(spark.createDataFrame([("a", "boom")], INPUT), key="key",
                          builder=STEP, host=host, buckets=buckets)
    with pytest.raises(sw.CallbackError) as spark_error:
        with sw.task_errors():
            failing.collect()
    for error in (offline_error.value, spark_error.value):
        assert (error.step_id, error.key, error.callback) == ("stateful:Fussy", "a", "on_item")


def test_a_step_takes_no_step_options_on_spark(spark):
    frame = spark.createDataFrame(GOOD, INPUT)
    with pytest.raises(sw.ConfigError, match="a Step carries its options; got output_schema"):
        sw.stateful(frame, key="key", builder=STEP, output_schema="n long")
    with pytest.raises(sw.ConfigError, match="is a StatefulLogic step"):
        sw.stateful_batch(frame, key="key", builder=STEP)
    with pytest.raises(sw.ConfigError, match="output_schema must be a DDL string"):
        sw.stateful(frame, key="key", builder=STEP.but(output_schema=None))
