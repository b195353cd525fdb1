"""Per-step metrics in Spark's progress equal the offline runner's, on both hosts."""

from datetime import timedelta

import pytest

import sparkwax as sw
from sparkwax.engine.spark_version import has_no_data_batch_metrics
from sparkwax.metrics import StepMetrics
from sparkwax.engine.queries.progress import progress_line
from sparkwax.testing import Batch, Crash, run
from sparkwax.testing.reference import Counter, SessionTracker
from sparkwax.testing.spark import run_script_on_spark

from kit import T0, each_spark_host_with_buckets

INPUT = "key string, ts timestamp, value long"
SESSION_OUT = "start timestamp, `end` timestamp, events long"
TIME = sw.EventTime("ts", watermark="2 minutes")


def at(key, minute):
    return (key, {"ts": T0 + timedelta(minutes=minute), "value": minute})


# Batch 3's rows at minutes 10 and 1 are behind the watermark (48): late. Sessions
# close 30 minutes after their last event: b's in batch 3, a's in the no-data batch
# Spark runs when the watermark moves to 98.
SCRIPT = [Batch([at("a", 0), at("a", 1), at("b", 2)]),
          Batch([at("a", 40), at("b", 3), at("c", 50)]),
          Crash(),
          Batch([at("a", 10), at("b", 1), at("c", 100)])]


@pytest.mark.lines
@each_spark_host_with_buckets
def test_progress_metrics_equal_the_offline_runners(spark, tmp_path, host, buckets):
    offline = run(SessionTracker, SCRIPT, time=TIME, step_id="sessions")
    online = run_script_on_spark(spark, SessionTracker, SCRIPT, input_schema=INPUT,
                                 output_schema=SESSION_OUT, time=TIME, host=host,
                                 buckets=buckets, step_id="sessions", workdir=str(tmp_path))
    expected = offline.metrics.deterministic()
    assert expected == {"rows_in": 9, "rows_late": 2, "timers_fired": 2, "keys_created": 3,
                        "keys_discarded": 2, "emits": 4, "processing_timers_fired": 0}
    if not has_no_data_batch_metrics(spark):
        # 3.5's progress has no metrics for a no-data batch: the timers a's and b's
        # sessions close by (the watermark's batch) are not counted there; the rows are
        counted = {"rows_in": 9, "rows_late": 2, "keys_created": 3}
        assert {name: online.metrics.deterministic()[name] for name in counted} == counted
        assert online.metrics.timers_fired < expected["timers_fired"]
        assert sum(len(outs) for outs in online.by_key.values()) == expected["emits"]
        return
    assert online.metrics.deterministic() == expected
    assert online.metrics.callback_us > 0
    # Per micro-batch the split may differ: whether Spark runs a no-data batch between
    # two files (firing b's timer there, not with batch 3's rows) depends on timing.
    assert len(online.batch_metrics) >= len(SCRIPT) - 1


def test_last_progress_carries_the_step_and_the_progress_line_counts_its_late_rows(
        spark, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    (source / "1.json").write_text('{"key": "a", "ts": "2024-01-01T00:50:00Z", "value": 1}\n')
    stream = spark.readStream.schema(INPUT).json(str(source))
    out = sw.stateful(stream, key="key", builder=SessionTracker, output_schema=SESSION_OUT,
                      time=TIME, step_id="late-demo")
    query = out.writeStream.format("memory").queryName("late_demo") \
        .option("checkpointLocation", str(tmp_path / "ck")).start()
    try:
        query.processAllAvailable()
        (source / "2.json").write_text(
            '{"key": "a", "ts": "2024-01-01T00:01:00Z", "value": 2}\n'
            '{"key": "b", "ts": "2024-01-01T00:02:00Z", "value": 3}\n')
        query.processAllAvailable()
        progress = [p for p in query.recentProgress if p["numInputRows"] == 2][-1]
    finally:
        query.stop()
    metrics = StepMetrics.from_progress(progress, "late-demo")
    assert metrics is not None and (metrics.rows_in, metrics.rows_late) == (2, 2)
    # The step's own event-time column reaches Spark blanked: Spark's late filter
    # drops nothing, the driver drops (and counts) every late row, and the step
    # needs no count of its input rows (no observe before the shuffle).
    assert progress["stateOperators"][0]["numRowsDroppedByWatermark"] == 0
    assert "sparkwax:late-demo#in" not in progress["observedMetrics"]
    assert " late 2 " in progress_line("q", progress)


class CounterWithTimer(Counter):
    """A Counter that may ask for timers (so the step runs under EventTimeTimeout)."""

    def notify_at(self):
        return None


@pytest.mark.parametrize("host, dropped_by_spark", [("per_key", 2), ("packed", 0)])
def test_rows_spark_drops_behind_a_watermarked_key_count_as_late(spark, tmp_path, host,
                                                                 dropped_by_spark):
    # An event-time step keyed by its own event-time column: on the per-key host
    # that column reaches Spark with its watermark, and under EventTimeTimeout Spark
    # drops the rows behind it before the host sees them. The step counts its input
    # rows, so they are in rows_in and rows_late all the same. The packed host packs
    # its rows before the shuffle (engine/hosts/prepack.py): Spark drops none, the driver
    # drops and counts them, and nothing is counted on the way in.
    source = tmp_path / "in"
    source.mkdir()
    stream = spark.readStream.schema(INPUT).option("maxFilesPerTrigger", 1).json(str(source))
    out = sw.stateful(stream, key=["key", "ts"], builder=CounterWithTimer,
                      output_schema="n long", time=TIME, step_id="key-wm", host=host)
    query = out.writeStream.format("memory").queryName(f"key_wm_{host}") \
        .option("checkpointLocation", str(tmp_path / "ck")).start()
    rows = ['{"key": "a", "ts": "2024-01-01T00:50:00Z", "value": 1}\n',
            '{"key": "a", "ts": "2024-01-01T00:51:00Z", "value": 2}\n',
            '{"key": "a", "ts": "2024-01-01T00:01:00Z", "value": 3}\n'
            '{"key": "b", "ts": "2024-01-01T00:02:00Z", "value": 4}\n']
    try:
        for number, text in enumerate(rows):
            (source / f"{number}.json").write_text(text)
            query.processAllAvailable()
        progress = [p for p in query.recentProgress if p["numInputRows"] == 2][-1]
    finally:
        query.stop()
    assert progress["stateOperators"][0]["numRowsDroppedByWatermark"] == dropped_by_spark
    assert ("sparkwax:key-wm#in" in progress["observedMetrics"]) == bool(dropped_by_spark)
    metrics = StepMetrics.from_progress(progress, "key-wm")
    assert metrics is not None and (metrics.rows_in, metrics.rows_late) == (2, 2)
    assert " late 2 " in progress_line("q", progress)
