"""A same-key chain (``sw.chain``) runs on every host as offline: a dedupe
stage, then an Accumulator with event-time timers, over a stream with a
crash, and over a bounded DataFrame."""

from __future__ import annotations

import pytest

import sparkwax as sw
from sparkwax.engine.spark_version import has_no_data_batch_metrics
from sparkwax.testing import Batch, Crash, run, run_bounded
from sparkwax.testing.reference import Accumulator
from sparkwax.testing.spark import run_script_on_spark

from kit import HOSTS_AND_BUCKETS, each_spark_host_with_buckets, item, per_key

pytestmark = [pytest.mark.spark, pytest.mark.lines]

INPUT = "key string, ts timestamp, value long"
OUTPUT = "kind string, a long, b long"
TIME = sw.EventTime("ts", watermark="2 minutes")


class Dedupe(sw.StatefulLogic):
    """Passes a key's row on unless its value came before (its state: the values)."""

    def __init__(self, resume=None):
        self.seen = set(resume or ())

    def on_item(self, value):
        if value["value"] in self.seen:
            return [], sw.RETAIN
        self.seen.add(value["value"])
        return [value], sw.RETAIN

    def snapshot(self):
        return sorted(self.seen)


CHAIN = sw.chain(sw.Step.of(Dedupe, step_id="dedupe"), sw.Step.of(Accumulator, step_id="acc"))
SCRIPT = [
    Batch([item("a", 0, 1), item("a", 1, 1), item("b", 1, 2), item("a", 2, 3)]),
    Crash(),
    Batch([item("a", 3, 3), item("b", 9, 7), item("c", 10, 4)]),
    Batch([item("a", 30, 6), item("b", 31, 2), item("c", 32, 5)]),
]


@each_spark_host_with_buckets
def test_a_chain_streams_as_offline(spark, tmp_path, host, buckets):
    offline = run(CHAIN, SCRIPT, time=TIME)
    assert offline.metrics.timers_fired > 0  # the second stage's timers fired
    online = run_script_on_spark(spark, CHAIN, SCRIPT, input_schema=INPUT, output_schema=OUTPUT,
                                 time=TIME, host=host, buckets=buckets, workdir=str(tmp_path))
    assert per_key(online) == per_key(offline)
    assert online.step_id == offline.step_id == "stateful:Dedupe>Accumulator"


@each_spark_host_with_buckets
def test_a_chain_over_a_bounded_frame_as_offline(spark, host, buckets):
    rows = [pair for step in SCRIPT if isinstance(step, Batch) for pair in step.items]
    frame = spark.createDataFrame([(key, value["ts"], value["value"]) for key, value in rows],
                                  INPUT)
    got = sw.stateful(frame, key="key", builder=CHAIN, output_schema=OUTPUT, time=TIME,
                      host=host, buckets=buckets).collect()
    by_key = {}
    for row in got:
        by_key.setdefault(row["key"], []).append(tuple(row)[1:])
    offline = run_bounded(CHAIN, rows, time=TIME)
    assert {k: sorted(v) for k, v in by_key.items()} == \
        {k: sorted(tuple(e) for e in v) for k, v in offline.by_key.items()}



@pytest.mark.parametrize("host, buckets", HOSTS_AND_BUCKETS)
def test_each_stage_counts_as_offline(spark, tmp_path, host, buckets):
    """The counts of the chain and of each stage in Spark's progress
    (``sparkwax-stage:<step>/<stage>``) equal the offline run's (summed over
    the run: where Spark runs a no-data batch depends on timing)."""
    offline = run(CHAIN, SCRIPT, time=TIME)
    online = run_script_on_spark(spark, CHAIN, SCRIPT, input_schema=INPUT, output_schema=OUTPUT,
                                 time=TIME, host=host, buckets=buckets, workdir=str(tmp_path))
    stages = offline.stage_metrics
    assert {stage: m.deterministic() for stage, m in stages.items()} == {
        # 3 duplicates dropped; the chain's timers and emits are the second stage's
        "dedupe": {"rows_in": 10, "rows_late": 0, "timers_fired": 0, "keys_created": 3,
                   "keys_discarded": 0, "emits": 7, "processing_timers_fired": 0},
        "acc": {"rows_in": 7, "rows_late": 0, "timers_fired": 2, "keys_created": 3,
                "keys_discarded": 0, "emits": 9, "processing_timers_fired": 0}}
    assert all(len(batch) == 2 for batch in online.batch_stage_metrics)
    # in chain order (each stage's place rides beside its counts: Spark's map keeps none)
    assert all(list(batch) == ["dedupe", "acc"] for batch in online.batch_stage_metrics)
    if not has_no_data_batch_metrics(spark):  # 3.5: a no-data batch has no metrics
        assert {stage: m.rows_in for stage, m in online.stage_metrics.items()} == \
            {stage: m.rows_in for stage, m in stages.items()}
        return
    assert online.metrics.deterministic() == offline.metrics.deterministic()
    assert {stage: m.deterministic() for stage, m in online.stage_metrics.items()} == \
        {stage: m.deterministic() for stage, m in stages.items()}
    assert all(m.callback_us > 0 for m in online.stage_metrics.values())
