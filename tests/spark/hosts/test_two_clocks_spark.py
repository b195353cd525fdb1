"""Both timer kinds in one step on Spark (issue 22): offline vs Spark, both
hosts, streaming with a restart from the same checkpoint and a stalled
source where only the processing-time deadline can fire; bounded input."""

import json
import os
import sys
import time
from datetime import timedelta

import pytest

import sparkwax as sw
from sparkwax.engine.queries.start import step_descriptions
from sparkwax.metrics import StepMetrics, by_batch
from sparkwax.operators import SessionWindower, count_window, with_max_wait
from sparkwax.testing import Batch, Crash, Eof, Tick, run, run_bounded
from sparkwax.testing.reference import Counter, IdleAlarm
from sparkwax.testing.checkpoint_replay import replay

from kit import MIN, NOON as T0, REPO

HOUR_MS = 3_600_000
SCHEMA = "key string, ts timestamp, idle_ms long, alarm_discard boolean"
OUTPUT = "kind string, n long"
STEP = "alarm"


def row(ts, idle_ms=None, alarm_discard=False):
    return {"ts": ts, "idle_ms": idle_ms, "alarm_discard": alarm_discard}


# three data batches; a restart before the third; then the source stalls
BATCHES = [
    [("a", row(T0, HOUR_MS)), ("b", row(T0, HOUR_MS)), ("c", row(T0))],
    [("a", row(T0 + 11 * MIN, HOUR_MS))],
    [("b", row(T0 + 12 * MIN, 1500)), ("c", row(T0 + 13 * MIN, 1500, True)),
     ("a", row(T0 + 5 * MIN))],                                   # late: dropped
]


def _write(source, number, items):
    staging = os.path.join(os.path.dirname(source), f"staging-{number}.json")
    with open(staging, "w") as handle:
        for key, value in items:
            handle.write(json.dumps({"key": key, **value}, default=str) + "\n")
    os.replace(staging, os.path.join(source, f"batch-{number:03d}.json"))


def _wait(query, what, test, limit=120.0):
    """Poll the query's progress (never a wall-clock assert: the limit only
    ends a hung test)."""
    give_up = time.monotonic() + limit
    while time.monotonic() < give_up:
        error = query.exception()
        if error is not None:
            raise AssertionError(f"the query failed: {error}")
        if test(query.recentProgress):
            return
        time.sleep(0.1)
    raise AssertionError(f"{what}: not reached after {limit:.0f} s; "
                         f"progress {[p.get('batchId') for p in query.recentProgress]}")


def _rows_read(progresses):
    return sum(p["numInputRows"] for p in {p["batchId"]: p for p in progresses}.values())


def _spark_run(spark, tmp_path, host):
    source = tmp_path / "in"
    source.mkdir()
    collected = []
    metrics = {}

    def sink(frame, batch_id):
        collected.extend((batch_id, r["key"], (r["kind"], r["n"])) for r in frame.collect())

    def start():
        stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1) \
            .json(str(source))
        out = sw.stateful(stream, key="key", builder=IdleAlarm, time=sw.EventTime("ts"),
                          output_schema=OUTPUT, step_id=STEP, host=host, buckets=3)
        assert step_descriptions(out)[0]["state"].endswith("two-clock")
        return (out.writeStream.foreachBatch(sink)
                .trigger(processingTime="300 milliseconds")
                .option("checkpointLocation", str(tmp_path / "checkpoint")).start())

    query = start()
    try:
        for number in (0, 1):
            _write(str(source), number, BATCHES[number])
            wanted = sum(len(b) for b in BATCHES[:number + 1])
            _wait(query, f"batch {number} read", lambda ps: _rows_read(ps) >= wanted)
        # and the no-data batch that closes the windows the watermark passed
        _wait(query, "windows closed", lambda ps: sum(
            m.event_timers_fired for m in by_batch(ps, STEP).values()) >= 3)
        metrics.update(by_batch(query.recentProgress, STEP))
        query.stop()
        query = start()                                   # restart, same checkpoint
        _write(str(source), 2, BATCHES[2])
        _wait(query, "batch 2 read", lambda ps: _rows_read(ps) >= len(BATCHES[2]))
        # the source stalls: no data, no watermark movement; only deadlines can fire
        _wait(query, "idle alarms", lambda ps: sum(
            m.processing_timers_fired for m in by_batch(ps, STEP).values()) >= 2)
        metrics.update(by_batch(query.recentProgress, STEP))
    finally:
        query.stop()
    by_key = {}
    for _, key, value in sorted(collected, key=lambda entry: entry[0]):
        by_key.setdefault(key, []).append(value)
    return by_key, sum(metrics.values(), StepMetrics())


def _script():
    return [Batch(BATCHES[0], now=T0), Batch(BATCHES[1], now=T0), Crash(),
            Batch(BATCHES[2], now=T0), Tick(now=T0 + timedelta(seconds=2))]


def _offline():
    return run(IdleAlarm, _script(), time=sw.EventTime("ts"), step_id=STEP)


@pytest.mark.parametrize("host", ["per_key", "packed"])
def test_both_timer_kinds_offline_equals_spark_with_restart_and_stall(spark, tmp_path, host):
    expected = _offline()
    assert expected.by_key == {"a": [("window", 2)],
                               "b": [("window", 1), ("idle", 2)],
                               "c": [("window", 1), ("idle", 2)]}
    assert expected.snapshots["a"][3] is not None          # a's hour-long alarm waits
    by_key, metrics = _spark_run(spark, tmp_path, host)
    assert by_key == expected.by_key
    # replay: the batches Spark ran, their batchTimestampMs as the processing clock
    replayed = replay(str(tmp_path / "checkpoint"), IdleAlarm, key="key", output_schema=OUTPUT,
                      source_format="json", source_schema=SCHEMA, time=sw.EventTime("ts"),
                      step_id=STEP)
    assert replayed.error is None and not replayed.watermark_mismatches
    assert replayed.run.by_key == by_key
    # finish (no processing clock: on_eof only) reads the two-clock state
    ends = sw.finish(str(tmp_path / "checkpoint"), builder=IdleAlarm, output_schema=OUTPUT,
                     time=sw.EventTime("ts"), step_id=STEP, key_schema="key string")
    eof = run(IdleAlarm, [*_script(), Eof()], time=sw.EventTime("ts"), step_id=STEP)
    expected_ends = {k: v[len(expected.by_key.get(k, [])):] for k, v in eof.by_key.items()
                     if v[len(expected.by_key.get(k, [])):]}
    assert expected_ends == {"a": [("eof", 2)], "b": [("eof", 2)]}
    assert {r["key"]: [(r["kind"], r["n"])] for r in ends.collect()} == expected_ends
    assert metrics.processing_timers_fired == expected.metrics.processing_timers_fired == 2
    assert metrics.event_timers_fired == expected.metrics.event_timers_fired == 3
    assert metrics.rows_late == expected.metrics.rows_late == 1
    assert metrics.keys_discarded == expected.metrics.keys_discarded == 1   # c's alarm


@pytest.mark.parametrize("host", ["per_key", "packed"])
def test_bounded_input_has_no_processing_clock(spark, host):
    items = [(k, v) for batch in BATCHES for k, v in batch]
    expected = run_bounded(IdleAlarm, items, time=sw.EventTime("ts"))
    frame = spark.createDataFrame([{"key": k, **v} for k, v in items], SCHEMA)
    out = sw.stateful(frame, key="key", builder=IdleAlarm, time=sw.EventTime("ts"),
                      output_schema=OUTPUT, host=host, buckets=3)
    got = {}
    for r in out.collect():
        got.setdefault(r["key"], []).append((r["kind"], r["n"]))
    assert got == expected.by_key
    assert not any(v[0] == "idle" for vs in got.values() for v in vs)


def test_one_kind_steps_keep_their_plan(spark, tmp_path):
    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    for builder, two in ((Counter, False), (IdleAlarm, True),
                         (with_max_wait(count_window(SessionWindower(gap=MIN)), "1 hour"),
                          True)):
        for host in ("per_key", "packed"):
            out = sw.stateful(stream, key="key", builder=builder, time=sw.EventTime("ts"),
                              output_schema="n long" if builder is Counter else OUTPUT,
                              host=host, buckets=2)
            [step] = step_descriptions(out)
            assert ("two-clock" in step["state"]) is two
            assert ("deadlines" in step) is two


def test_the_fraud_example_on_spark(spark):
    import importlib.util

    path = REPO / "examples" / "fraud_alarm.py"
    spec = importlib.util.spec_from_file_location("fraud_alarm_spark", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(module)
    assert module.on_spark(spark) == module.offline()


class NaiveDeadline(IdleAlarm):
    def processing_notify_at(self):
        return None if self.deadline is None else self.deadline.replace(tzinfo=None)


@pytest.mark.parametrize("host", ["per_key", "packed"])
def test_a_naive_deadline_is_the_offline_error_on_spark(spark, tmp_path, host):
    from sparkwax.errors import NotifyAtError
    from sparkwax.testing.spark import run_script_on_spark

    script = [Batch([("k", row(T0, HOUR_MS))])]
    with pytest.raises(NotifyAtError) as offline:
        run(NaiveDeadline, script, time=sw.EventTime("ts"), step_id=STEP)
    with pytest.raises(NotifyAtError) as on_spark:
        run_script_on_spark(spark, NaiveDeadline, script, input_schema=SCHEMA,
                            output_schema=OUTPUT, time=sw.EventTime("ts"), step_id=STEP,
                            host=host, workdir=str(tmp_path))
    for info in (offline, on_spark):
        assert "processing_notify_at" in str(info.value) and "'k'" in str(info.value)


def test_a_processing_time_step_refuses_deadlines_on_spark(spark, tmp_path):
    from sparkwax.errors import ConfigError

    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    for builder in (IdleAlarm, lambda resume: IdleAlarm(resume)):
        with pytest.raises(ConfigError, match="processing_notify_at"):
            sw.stateful(stream, key="key", builder=builder, time=sw.ProcessingTime(),
                        output_schema=OUTPUT)
