"""The cross-host cases (tests/cross_host.py) on Spark: the per-key and packed
hosts, streaming (one micro-batch, metrics from Spark's progress) and bounded,
give what every offline host gives."""

from __future__ import annotations

import pytest
from pyspark import cloudpickle

import sparkwax as sw
from sparkwax.testing import Batch, run
from sparkwax.testing.reference import Counter
from sparkwax.testing.spark import run_script_on_spark

import cross_host
from cross_host import (BAD_EMITS, BAD_TIMES, CASES, GOOD_EMITS, GOOD_ITEMS,
                        GOOD_SCHEMA, INPUT, STREAMED, Emits, LockedAtEof, Tags,
                        TimerOutsideSnapshot, builder_holding_a_lock, normalized_rows, row)

pytestmark = pytest.mark.lines  # the tier run on every Spark line (docs/testing.md)


cloudpickle.register_pickle_by_value(cross_host)   # workers cannot import tests/

BY_NAME = pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
HOSTS = pytest.mark.parametrize("host, buckets", [("per_key", None), ("packed", 2)])


@pytest.mark.lines(every=True)  # the differential core: every case, every line
@BY_NAME
@HOSTS
def test_streaming_on_spark(spark, tmp_path, case, host, buckets):
    result = run_script_on_spark(spark, Tags, [Batch(case.items)], input_schema=INPUT,
                                 output_schema="tag string", host=host, buckets=buckets,
                                 workdir=str(tmp_path), **case.options)
    assert {k: [v[0] for v in vs] for k, vs in result.by_key.items()} == case.expected
    assert (result.metrics.rows_in, result.metrics.rows_late) == (len(case.items), case.late)


@pytest.mark.lines(every=True)
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


# --- every check runs on every Spark entry point (the Step's) ---

SPARK_ENTRIES = {
    "stateful/per_key": lambda frame, builder, **o: sw.stateful(
        frame, key="key", builder=builder, output_schema="tag string", **o),
    "stateful/packed": lambda frame, builder, **o: sw.stateful(
        frame, key="key", builder=builder, output_schema="tag string", host="packed",
        buckets=2, **o),
    "stateful_batch": lambda frame, builder, **o: sw.stateful_batch(
        frame, key="key", builder=builder, output_schema="tag string", **o),
    "connect": lambda frame, builder, **o: sw.connect(
        frame, frame, key="key", builder=builder, output_schema="tag string", **o),
    "finish": lambda frame, builder, **o: sw.finish(
        "/no/checkpoint/needed", builder=builder, output_schema="tag string", spark=frame.sparkSession,
        **o),
}
ENTRIES = pytest.mark.parametrize("entry", sorted(SPARK_ENTRIES))


@ENTRIES
@pytest.mark.parametrize("time", BAD_TIMES, ids=repr)
def test_a_bad_time_mode_is_refused_on_spark(spark, entry, time):
    frame = spark.createDataFrame([("a", None, 1, "x")], INPUT)
    with pytest.raises(sw.ConfigError, match="time must be ProcessingTime"):
        SPARK_ENTRIES[entry](frame, Tags, time=time)


@ENTRIES
def test_a_builder_that_cannot_be_shipped_is_refused_before_spark_runs(spark, entry):
    frame = spark.createDataFrame([("a", None, 1, "x")], INPUT)
    with pytest.raises(sw.BuilderError, match="cannot be pickled"):
        SPARK_ENTRIES[entry](frame, builder_holding_a_lock())


@HOSTS
def test_an_unpicklable_snapshot_fails_bounded_mode_on_spark(spark, host, buckets):
    # bounded mode used to commit nothing for a key that discards at EOF, so a
    # logic tested there failed on its first streaming commit
    frame = spark.createDataFrame([("a", None, 1, "x")], INPUT)
    out = sw.stateful(frame, key="key", builder=LockedAtEof, output_schema="n long", host=host,
                      buckets=buckets)
    with pytest.raises(Exception, match="SnapshotError") as info:
        out.collect()
    assert "cannot be pickled" in str(info.value)


def _int_keyed_checkpoint(spark, tmp_path, host, buckets):
    script = [Batch([(7, {"ts": None, "seq": 1, "tag": "x"}),
                     (8, {"ts": None, "seq": 2, "tag": "y"})])]
    run_script_on_spark(spark, Counter, script, input_schema=INT_INPUT,
                        output_schema="n long", host=host, buckets=buckets,
                        workdir=str(tmp_path))
    return str(tmp_path / "checkpoint")


INT_INPUT = "key long, ts timestamp, seq long, tag string"


@HOSTS
def test_state_show_key_is_typed_on_both_hosts(spark, tmp_path, host, buckets):
    # packed compared str() values, per-key typed ones: "07" found key 7 on one host only
    from sparkwax.engine.checkpoints.snapshots import read_entries

    from sparkwax.engine.spark_version import has_statestore_reader

    checkpoint = _int_keyed_checkpoint(spark, tmp_path, host, buckets)
    if not has_statestore_reader(spark):  # 3.5: the named refusal (docs/deploy.md)
        with pytest.raises(sw.ConfigError, match=r"needs Spark 4\.0 or newer"):
            read_entries(spark, checkpoint, key="7")
        return
    for wanted in ("7", "07", 7):
        assert [e.key for e in read_entries(spark, checkpoint, key=wanted)] == [7], wanted
    assert read_entries(spark, checkpoint, key="9") == []


@HOSTS
def test_finish_warns_of_lost_state_on_both_hosts(spark, tmp_path, host, buckets):
    # per-key finish did not pass the committed timer: the warning came on packed only
    import pandas as pd

    from sparkwax._driver import Driver
    from sparkwax.engine.checkpoints.finish import FinishHost, finish_packed
    from sparkwax.engine.spark_version import from_ddl
    from sparkwax.step import Step

    time = sw.EventTime("ts")
    step = Step.of(TimerOutsideSnapshot, step_id="lost", time=time)
    first = Driver(step).activate("a", None, [row("a", "x", minute=1)[1]], 0,
                                  event_times=[60_000_000])
    assert first.timer is not None
    driver = Driver(step)
    with pytest.warns(sw.LostStateWarning, match="step 'lost': TimerOutsideSnapshot"):
        if host == "packed":
            from sparkwax.engine.hosts.bucket import Bucket

            bucket = Bucket.empty()
            bucket.put("a", first.state, first.timer, first.armed)
            blob, _ = bucket.encode()
            frame = spark.createDataFrame(
                [(((blob, 1),), 0)],
                "value struct<groupState: struct<keys: binary, buckets: long>>, "
                "partition_id int")
            finish_packed(spark, "/unused", frame, driver, from_ddl("n long"),
                           0, "key string", "lost")
        else:
            from sparkwax.engine.hosts.outputs import OutputBuilder

            ends = FinishHost(driver, OutputBuilder(["key"], from_ddl("n long"),
                                                    "lost"), ["key"], 0)
            part = pd.DataFrame({"key": ["a"], "__sw_snapshot": [first.state],
                                 "__sw_timer": [first.timer]})
            list(ends(iter([part])))


@HOSTS
@pytest.mark.parametrize("streaming", [False, True], ids=["bounded", "streaming"])
def test_a_null_key_is_refused_on_both_hosts(spark, tmp_path, host, buckets, streaming):
    if streaming:
        with pytest.raises(Exception, match="null or NaN key"):
            run_script_on_spark(spark, Tags, [Batch([(None, {"ts": None, "seq": 1,
                                                            "tag": "x"})])],
                                input_schema=INPUT, output_schema="tag string", host=host,
                                buckets=buckets, workdir=str(tmp_path))
        return
    frame = spark.createDataFrame([("a", None, 1, "x"), (None, None, 2, "y")], INPUT)
    out = sw.stateful(frame, key="key", builder=Tags, output_schema="tag string", host=host,
                      buckets=buckets, step_id="keyed")
    with pytest.raises(Exception, match="null or NaN key") as info:
        out.collect()
    assert "step 'keyed'" in str(info.value)


# --- output schemas: the same checker as offline (issue 21) ---

EMIT_CASES = pytest.mark.parametrize("case", BAD_EMITS, ids=[case.name for case in BAD_EMITS])


def _offline_error(case) -> sw.SchemaError:
    with pytest.raises(sw.SchemaError) as caught:
        run(Emits, [Batch(case.items())], output_schema=case.schema, step_id="emits")
    return caught.value


def _same_error_as_offline(case, text: str) -> None:
    """The Spark failure (a PythonException or StreamingQueryException) holds
    the offline SchemaError: class, step, key, field path, reason, value."""
    offline = _offline_error(case)
    assert (offline.key, offline.field) == ("b", case.field)
    assert f"SchemaError: {offline}" in text, (str(offline), text[-3000:])


def _frame(spark, items):
    rows = [(key, value["ts"], value["seq"], value["tag"]) for key, value in items]
    return spark.createDataFrame(rows, INPUT)


@EMIT_CASES
@HOSTS
def test_a_bad_emit_is_the_offline_schema_error_on_spark_bounded(spark, case, host, buckets):
    out = sw.stateful(_frame(spark, case.items()), key="key", builder=Emits,
                      output_schema=case.schema, step_id="emits", host=host, buckets=buckets)
    with pytest.raises(Exception) as caught:
        out.collect()
    _same_error_as_offline(case, str(caught.value))


@pytest.mark.parametrize("case", [c for c in BAD_EMITS if c.name in STREAMED],
                         ids=[c.name for c in BAD_EMITS if c.name in STREAMED])
@HOSTS
def test_a_bad_emit_is_the_offline_schema_error_on_spark_streaming(spark, tmp_path, case, host,
                                                                   buckets):
    # the harness waits with sw.task_errors: the task's SchemaError comes back as itself
    with pytest.raises(sw.SchemaError) as caught:
        run_script_on_spark(spark, Emits, [Batch(case.items())], input_schema=INPUT,
                            output_schema=case.schema, step_id="emits", host=host,
                            buckets=buckets, workdir=str(tmp_path))
    assert caught.value.__cause__ is not None  # Spark's exception, kept as the cause
    _same_error_as_offline(case, f"SchemaError: {caught.value}")


@pytest.mark.lines(every=True)  # Arrow's types differ between lines
@HOSTS
@pytest.mark.parametrize("streaming", [False, True], ids=["bounded", "streaming"])
def test_good_emits_of_every_type_round_trip_as_offline(spark, tmp_path, host, buckets,
                                                        streaming):
    offline = run(Emits, [Batch(GOOD_ITEMS)], output_schema=GOOD_SCHEMA)
    expected = normalized_rows(GOOD_SCHEMA, offline.outputs)
    assert offline.by_key == {key: [emit, emit] for key, emit in GOOD_EMITS.items()}
    if streaming:
        result = run_script_on_spark(spark, Emits, [Batch(GOOD_ITEMS)], input_schema=INPUT,
                                     output_schema=GOOD_SCHEMA, host=host, buckets=buckets,
                                     workdir=str(tmp_path))
        rows = result.outputs
    else:
        out = sw.stateful(_frame(spark, GOOD_ITEMS), key="key", builder=Emits,
                          output_schema=GOOD_SCHEMA, host=host, buckets=buckets)
        rows = [(found[0], tuple(found[1:])) for found in out.collect()]
    assert normalized_rows(GOOD_SCHEMA, rows) == expected
