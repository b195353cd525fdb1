"""finish (on_eof from a checkpoint), state show/clear, snapshot evolution, start() checks."""

import json
from datetime import timedelta

import pytest

import sparkwax as sw
from sparkwax.engine.checkpoints.snapshots import read_entries, state_summary
from sparkwax.testing.spark import run_script_on_spark
from sparkwax._ops.snapshot_json import json_value
from sparkwax.testing import Batch, Crash, Eof, run
from sparkwax.testing.reference import Accumulator

from kit import (ACCUMULATOR_INPUT, ACCUMULATOR_OUTPUT, ACCUMULATOR_TIME, SumV1, T0,
                 accumulator_script, each_spark_host, item, state_cli, sum_v1_step)

INPUT, OUTPUT, TIME = ACCUMULATOR_INPUT, ACCUMULATOR_OUTPUT, ACCUMULATOR_TIME
SCRIPT = accumulator_script()


@pytest.fixture(scope="module")
def stream_checkpoint(spark, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("finish")
    online = run_script_on_spark(spark, Accumulator, SCRIPT, input_schema=INPUT,
                                 output_schema=OUTPUT, time=TIME, workdir=str(workdir))
    return workdir / "checkpoint", online


def test_finish_matches_offline_eof(spark, stream_checkpoint):
    checkpoint, online = stream_checkpoint
    before = run(Accumulator, SCRIPT, time=TIME)
    after = run(Accumulator, SCRIPT + [Eof()], time=TIME)
    assert {k: [tuple(v) for v in vs] for k, vs in online.by_key.items()} == before.by_key
    eof_outputs = {k: vs[len(before.by_key.get(k, [])):] for k, vs in after.by_key.items()}
    eof_outputs = {k: vs for k, vs in eof_outputs.items() if vs}
    ends = sw.finish(str(checkpoint), builder=Accumulator, output_schema=OUTPUT, time=TIME)
    got = {}
    for row in ends.collect():
        got.setdefault(row["key"], []).append(tuple(row)[1:])
    assert got == eof_outputs and got  # something really ended


def test_state_entries_and_summary_match_offline_snapshots(spark, stream_checkpoint):
    checkpoint, _ = stream_checkpoint
    offline = run(Accumulator, SCRIPT, time=TIME)
    entries = read_entries(spark, str(checkpoint))
    assert {e.key: e.snapshot for e in entries} == offline.snapshots
    assert {e.key: e.timer for e in entries} == {k: offline.timers.get(k) for k in
                                                 offline.snapshots}
    summary = state_summary(spark, str(checkpoint))
    assert summary["live_keys"] == len(offline.snapshots)
    assert summary["total_bytes"] == sum(e.size for e in entries)


def test_state_show_prints_a_table_and_json(spark, stream_checkpoint, capsys):
    checkpoint, _ = stream_checkpoint
    assert state_cli(["show", str(checkpoint)]) == 0
    table = capsys.readouterr().out
    assert [c.strip() for c in table.splitlines()[0].split(" | ")] == ["key", "snapshot", "bytes",
                                                                      "next timer"]
    assert "live keys" in table.splitlines()[-1] and "largest key" in table
    live = sorted(run(Accumulator, SCRIPT, time=TIME).snapshots)
    assert state_cli(["show", str(checkpoint), "--key", live[0], "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["key"] for line in lines[:-1]] == [live[0]] and "summary" in lines[-1]
    snapshots = run(Accumulator, SCRIPT, time=TIME).snapshots
    assert lines[0]["snapshot"] == json_value(snapshots[live[0]])  # JSON, not a repr
    assert lines[-1]["summary"]["live_keys"] == len(live)


@each_spark_host
def test_state_show_lists_keys_sorted_by_value_on_both_hosts(spark, tmp_path, capsys, host):
    # int keys: sorted as numbers (2, 9, 10, 33), not as texts ("10" < "2")
    keys = [33, 10, 2, 9]
    script = [Batch([(k, {"ts": T0, "value": 1}) for k in keys])]
    assert sorted(run(Accumulator, script, time=TIME).snapshots) == sorted(keys)  # all live
    run_script_on_spark(spark, Accumulator, script, input_schema="key long, ts timestamp, "
                        "value long", output_schema=OUTPUT, time=TIME,
                        workdir=str(tmp_path), host=host)
    checkpoint = str(tmp_path / "checkpoint")
    assert state_cli(["show", checkpoint, "--limit", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [int(line.split(" | ")[0]) for line in lines[2:-1]] == sorted(keys)
    assert lines[-1].startswith("4 live keys (sorted by key)")
    assert state_cli(["show", checkpoint, "--json", "--limit", "3"]) == 0
    shown = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["key"] for line in shown[:-1]] == sorted(shown_key for shown_key in
                                                         [line["key"] for line in shown[:-1]])
    assert len(shown) == 4 and shown[-1]["summary"]["live_keys"] == 4


def test_state_clear_asks_and_refuses_while_in_use(stream_checkpoint, tmp_path, capsys,
                                                   monkeypatch):
    checkpoint, _ = stream_checkpoint
    assert state_cli(["clear", str(checkpoint)]) == 2  # its log was just written
    assert "looks in use" in capsys.readouterr().err
    copy = tmp_path / "copy"
    import shutil
    shutil.copytree(checkpoint, copy)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert state_cli(["clear", str(copy), "--force"]) == 1 and copy.exists()
    assert state_cli(["clear", str(copy), "--force", "--yes"]) == 0 and not copy.exists()


class SumV2(sw.StatefulLogic):
    """v2 keeps a count too; it migrates v1's int snapshots in __init__."""

    def __init__(self, resume=None):
        if isinstance(resume, int):
            resume = {"total": resume, "count": None}
        state = resume or {"total": 0, "count": 0}
        self.total, self.count = state["total"], state["count"]

    def on_item(self, value):
        self.total += value
        self.count = None if self.count is None else self.count + 1
        return [(self.total, 2)], sw.RETAIN

    def snapshot(self):
        return {"total": self.total, "count": self.count}


def test_snapshot_written_by_v1_reaches_v2_builder(spark, tmp_path):
    rows = []
    source = tmp_path / "in"
    source.mkdir()

    def run_with(builder, number, values):
        path = source / f"batch-{number}.json"
        path.write_text("".join(json.dumps({"key": "k", "value": v}) + "\n" for v in values))
        stream = spark.readStream.schema("key string, value long").json(str(source))
        out = sw.stateful(stream, key="key", builder=builder, value="value",
                          output_schema="total long, version long", step_id="sum")
        query = sw.start(out, checkpoint=str(tmp_path / "ck"),
                         foreach_batch=lambda frame, _: rows.extend(frame.collect()))
        query.processAllAvailable()
        query.stop()

    run_with(SumV1, 0, [1, 2])
    run_with(SumV2, 1, [10])
    assert [tuple(r) for r in rows] in ([("k", 1, 1), ("k", 3, 1), ("k", 13, 2)],
                                        [("k", 3, 1), ("k", 13, 2)])
    assert rows[-1]["total"] == 13
    entries = read_entries(spark, str(tmp_path / "ck"))
    assert [e.snapshot for e in entries] == [{"total": 13, "count": None}]


def test_start_refuses_a_changed_output_schema(spark, tmp_path):
    (tmp_path / "in").mkdir()

    def attach(schema):
        return sum_v1_step(spark, tmp_path / "in", schema)

    query = sw.start(attach("total long, version long"), checkpoint=str(tmp_path / "ck"),
                     path=str(tmp_path / "out"))
    query.processAllAvailable()
    query.stop()
    with pytest.raises(sw.ConfigError) as refused:
        sw.start(attach("total long, version long, extra string"),
                 checkpoint=str(tmp_path / "ck"), path=str(tmp_path / "out"))
    message = str(refused.value)
    assert "step 'sum': output changed from 'total bigint, version bigint' to " \
           "'total bigint, version bigint, extra string'" in message


@pytest.mark.parametrize("host, buckets", [("per_key", None), ("packed", 3)])
def test_the_step_description_reaches_start_through_downstream_columns(spark, tmp_path,
                                                                        host, buckets):
    """The description rides in the metadata of the step's output attributes
    (``description.described``): ``sw.start`` finds it through a select of one
    output column, an alias, a new column and a union after the step."""
    from pyspark.sql import functions as F

    from sparkwax.engine.queries.start import step_descriptions

    (tmp_path / "in").mkdir()
    stream = spark.readStream.schema("key string, value long").json(str(tmp_path / "in"))
    out = sw.stateful(stream, key="key", builder=SumV1, value="value", host=host,
                      buckets=buckets, output_schema="total long, version long", step_id="sum")
    [step] = step_descriptions(out)
    assert (step["step_id"], step["output"]) == ("sum", "total bigint, version bigint")
    assert step["state"] == ("per_key/1" if buckets is None else "packed/1 buckets=3")
    assert out.columns == ["key", "total", "version"]  # the metrics column is dropped
    for frame in (out.select("version"), out.select(F.col("total").alias("t")),
                  out.withColumn("twice", F.col("total") * 2), out.unionByName(out)):
        assert step_descriptions(frame) == [step]


def test_a_restart_with_a_changed_watermark_delay_resumes(spark, tmp_path):
    """Spark allows a new delay; sw.start too (docs/guide.md, "Restarting with
    changes"): the state carries on and the record takes the new delay."""
    source, rows = tmp_path / "in", []
    source.mkdir()

    def run_with(delay, number, minutes):
        path = source / f"batch-{number}.json"
        path.write_text("".join(json.dumps({"key": "a", "ts": (T0 + timedelta(minutes=m))
                                            .isoformat(), "value": 1}) + "\n" for m in minutes))
        stream = spark.readStream.schema(INPUT).json(str(source))
        out = sw.stateful(stream, key="key", builder=Accumulator, output_schema=OUTPUT,
                          time=sw.EventTime("ts", watermark=delay), step_id="acc")
        query = sw.start(out, checkpoint=str(tmp_path / "ck"), trigger={"availableNow": True},
                         foreach_batch=lambda frame, _: rows.extend(frame.collect()))
        query.awaitTermination()

    run_with("2 minutes", 0, [0, 1])
    run_with("10 seconds", 1, [2])  # refused before: "event_time changed"
    steps = json.loads((tmp_path / "ck" / "sparkwax-steps.json").read_text())
    assert steps["steps"]["acc"]["event_time"] == "ts - 10000 ms"
    entries = read_entries(spark, str(tmp_path / "ck"))
    offline = run(Accumulator, [Batch([item("a", 0, 1), item("a", 1, 1)]), Crash(),
                                Batch([item("a", 2, 1)])], time=TIME)
    assert [e.snapshot for e in entries] == [offline.snapshots["a"]]  # the state carried on


def test_packed_state_show_and_finish_match_offline(spark, tmp_path):
    online = run_script_on_spark(spark, Accumulator, SCRIPT, input_schema=INPUT,
                                 output_schema=OUTPUT, time=TIME, host="packed", buckets=3,
                                 workdir=str(tmp_path))
    before = run(Accumulator, SCRIPT, time=TIME)
    after = run(Accumulator, SCRIPT + [Eof()], time=TIME)
    assert {k: [tuple(v) for v in vs] for k, vs in online.by_key.items()} == before.by_key
    checkpoint = str(tmp_path / "checkpoint")
    assert {e.key: e.snapshot for e in read_entries(spark, checkpoint)} == before.snapshots
    assert state_summary(spark, checkpoint)["live_keys"] == len(before.snapshots)
    ends = sw.finish(checkpoint, builder=Accumulator, output_schema=OUTPUT, time=TIME,
                     key_schema="key string")
    got = {}
    for row in ends.collect():
        got.setdefault(row["key"], []).append(tuple(row)[1:])
    expected = {k: vs[len(before.by_key.get(k, [])):] for k, vs in after.by_key.items()}
    assert got == {k: vs for k, vs in expected.items() if vs}


def test_a_changed_bucket_count_is_refused_naming_both_counts(spark, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "0.json").write_text('{"key": "a", "value": 1}\n{"key": "b", "value": 2}\n')

    def attach(buckets):
        stream = spark.readStream.schema("key string, value long").json(str(tmp_path / "in"))
        return sw.stateful(stream, key="key", builder=SumV1, value="value", host="packed",
                           buckets=buckets, output_schema="total long, version long",
                           step_id="sum")

    query = sw.start(attach(3), checkpoint=str(tmp_path / "ck"), path=str(tmp_path / "out"))
    query.processAllAvailable()
    query.stop()
    with pytest.raises(sw.ConfigError) as refused:
        sw.start(attach(4), checkpoint=str(tmp_path / "ck"), path=str(tmp_path / "out"))
    assert "step 'sum': state changed from 'packed/1 buckets=3' to 'packed/1 buckets=4'" \
        in str(refused.value)
    # Without sw.start's check, the host itself refuses the checkpoint's buckets.
    (tmp_path / "in" / "1.json").write_text('{"key": "a", "value": 5}\n')
    raw = attach(4).writeStream.format("noop").option(
        "checkpointLocation", str(tmp_path / "ck")).start()
    with pytest.raises(Exception) as failed:
        raw.processAllAvailable()
    raw.stop()
    assert "written with buckets=3, this query uses buckets=4" in str(failed.value)


def test_finish_on_a_packed_state_refuses_a_corrupt_key_and_names_it(spark):
    # A bucket row as Spark's state reader gives it, with one good key and one whose
    # blob is not a sparkwax snapshot: finish must not hand the error to the builder.
    from pyspark.sql import types as T

    from sparkwax._driver import Driver
    from sparkwax.step import Step
    from sparkwax.engine.hosts.bucket import Bucket
    from sparkwax.engine.checkpoints.finish import finish_packed
    from sparkwax.recovery import encode
    from sparkwax.testing.reference import Counter

    bucket = Bucket.empty()
    bucket.put("good", encode(3, step_id="counts", key="good"), None, None)
    bucket.put("bad", b"not a snapshot", None, None)
    blob, _ = bucket.encode()
    frame = spark.createDataFrame(
        [(((blob, 2),), 0)],
        "value struct<groupState: struct<keys: binary, buckets: long>>, partition_id int")
    schema = T.StructType([T.StructField("n", T.LongType())])
    with pytest.raises(sw.SnapshotError, match="step 'counts', key 'bad', decode"):
        finish_packed(spark, "/unused", frame, Driver(Step.of(Counter, step_id="counts")), schema, 0,
                       "key string", "counts")
