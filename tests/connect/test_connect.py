"""sparkwax over a real Spark Connect server whose Python cannot import sparkwax
(the server and the session come from this folder's conftest)."""

import argparse
import json
import os
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sparkwax as sw
from sparkwax import operators as ops
from sparkwax.engine.checkpoints.snapshots import clear
from sparkwax.engine.checkpoints.storage import SparkStorage, storage_for
from sparkwax.cli.commands.state import state_command
from sparkwax.testing import Batch, Crash, Eof, run, run_bounded
from sparkwax.testing.reference import Accumulator
from sparkwax.testing.spark import run_script_on_spark
from sparkwax.testing.strategies import micro_batches, timestamped_items

from kit import (ACCUMULATOR_INPUT, ACCUMULATOR_OUTPUT, ACCUMULATOR_TIME, at,
                 accumulator_script, each_spark_host_with_buckets, item, per_key, sum_v1_step)

INPUT, OUTPUT, TIME = ACCUMULATOR_INPUT, ACCUMULATOR_OUTPUT, ACCUMULATOR_TIME
SCRIPT = accumulator_script()


def _rows_by_key(frame):
    got = {}
    for row in frame.collect():
        got.setdefault(row[0], []).append(tuple(row)[1:])
    return got


def test_without_shipping_the_server_cannot_import_sparkwax(remote, connect_url):
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    bare = ConnectSession.builder.remote(connect_url).create()
    try:
        bare.conf.set("spark.sparkwax.ship", "false")
        frame = bare.createDataFrame([("a", at(1), 1)], INPUT)
        with pytest.raises(Exception, match="No module named 'sparkwax'"):
            sw.stateful(frame, key="key", builder=Accumulator, output_schema=OUTPUT,
                        time=TIME).collect()
    finally:
        bare.stop()


@pytest.mark.lines(since="4.0")  # 3.5's pip package has no Connect server
@each_spark_host_with_buckets
def test_streaming_with_a_restart_matches_offline(remote, tmp_path, host, buckets):
    online = run_script_on_spark(remote, Accumulator, SCRIPT, input_schema=INPUT,
                                 output_schema=OUTPUT, time=TIME, host=host, buckets=buckets,
                                 workdir=str(tmp_path))
    assert per_key(online) == per_key(run(Accumulator, SCRIPT, time=TIME))
    assert online.outputs


items = timestamped_items(keys=st.sampled_from(["a", "b", "c"]), min_size=1, max_size=10,
                          steps=st.integers(1, 400).map(lambda s: timedelta(seconds=s)))


@st.composite
def scripts_with_a_restart(draw):
    batches = draw(micro_batches(items=items, max_batches=3))
    return [Batch(batches[0]), Crash(), *[Batch(batch) for batch in batches[1:]]]


@each_spark_host_with_buckets
@settings(settings.get_profile("spark"))
@given(script=scripts_with_a_restart())
def test_differential_with_a_restart(remote, tmp_path_factory, host, buckets, script):
    online = run_script_on_spark(remote, Accumulator, script, input_schema=INPUT,
                                 output_schema=OUTPUT, time=TIME, host=host, buckets=buckets,
                                 workdir=str(tmp_path_factory.mktemp("diff")))
    assert per_key(online) == per_key(run(Accumulator, script, time=TIME))


@pytest.mark.lines(since="4.0")  # 3.5's pip package has no Connect server
@each_spark_host_with_buckets
def test_bounded_matches_offline(remote, host, buckets):
    items = [item for step in SCRIPT if hasattr(step, "items") for item in step.items]
    frame = remote.createDataFrame([(k, v["ts"], v["value"]) for k, v in items], INPUT)
    online = sw.stateful(frame, key="key", builder=Accumulator, output_schema=OUTPUT,
                         time=TIME, host=host, buckets=buckets)
    assert _rows_by_key(online) == per_key(run_bounded(Accumulator, items, time=TIME))


@pytest.mark.lines(since="4.0")  # 3.5's pip package has no Connect server
def test_start_finish_show_and_clear_over_connect(remote, connect_url, tmp_path, capsys):
    online = run_script_on_spark(remote, Accumulator, SCRIPT, input_schema=INPUT,
                                 output_schema=OUTPUT, time=TIME, workdir=str(tmp_path / "run"))
    before = run(Accumulator, SCRIPT, time=TIME)
    assert per_key(online) == per_key(before)
    checkpoint = str(tmp_path / "run" / "checkpoint")
    assert isinstance(storage_for(remote), SparkStorage)

    after = run(Accumulator, SCRIPT + [Eof()], time=TIME)
    expected = {k: vs[len(before.by_key.get(k, [])):] for k, vs in after.by_key.items()}
    ends = sw.finish(checkpoint, builder=Accumulator, output_schema=OUTPUT, time=TIME,
                     spark=remote)
    assert _rows_by_key(ends) == {k: vs for k, vs in expected.items() if vs}

    parser = argparse.ArgumentParser()
    handler = state_command(parser)
    assert handler(parser.parse_args(["show", checkpoint, "--json", "--remote",
                                      connect_url])) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(line["key"] for line in lines[:-1]) == sorted(before.snapshots)

    with pytest.raises(sw.RescaleError, match="needs a classic SparkSession"):
        sw.rescale(checkpoint, 3, spark=remote)

    clear(checkpoint, force=True, spark=remote)
    left = os.listdir(checkpoint)  # Connect has no delete: a marker folder remains
    assert "offsets" not in left and any(name.startswith("part-") for name in left)
    with pytest.raises(sw.ConfigError, match="is not a streaming checkpoint"):
        sw.finish(checkpoint, builder=Accumulator, output_schema=OUTPUT, time=TIME,
                  spark=remote)


def test_start_records_steps_and_refuses_a_changed_output(remote, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "0.json").write_text('{"key": "a", "value": 1}\n')

    def attach(schema):
        return sum_v1_step(remote, tmp_path / "in", schema)

    query = sw.start(attach("total long, version long"), checkpoint=str(tmp_path / "ck"),
                     path=str(tmp_path / "out"))
    query.processAllAvailable()
    query.stop()
    assert [tuple(r) for r in remote.read.parquet(str(tmp_path / "out")).collect()] == \
        [("a", 1, 1)]
    with pytest.raises(sw.ConfigError, match="output changed from"):
        sw.start(attach("total long, version long, extra string"),
                 checkpoint=str(tmp_path / "ck"), path=str(tmp_path / "out"))


def test_operator_helpers_over_connect(remote):
    orders = remote.createDataFrame([("o1", at(1), 30.0), ("o2", at(2), 12.5)],
                                    "order_id string, ts timestamp, total double")
    payments = remote.createDataFrame([("o1", at(5), 20), ("o1", at(6), 10), ("o2", at(4), 13)],
                                      "order_id string, ts timestamp, paid long")
    joined = sw.join(orders, payments, key="order_id", names=["orders", "payments"],
                      time=sw.EventTime("ts", watermark="1 hour"))
    assert sorted((r.order_id, r.orders.total, r.payments.paid) for r in joined.collect()) == \
        [("o1", 30.0, 20), ("o2", 12.5, 13)]
    rules = ops.rules_from(remote.createDataFrame([("large", 20.0)], "rule string, bound double"),
                           key="rule")
    assert rules.get() == {"large": {"rule": "large", "bound": 20.0}}


@pytest.mark.lines(since="4.0")  # 3.5's pip package has no Connect server
def test_a_second_step_on_a_stream_is_refused_over_connect(remote, tmp_path):
    (tmp_path / "in").mkdir()
    first = sum_v1_step(remote, tmp_path / "in", "total long, version long", step_id="first")
    with pytest.raises(sw.ConfigError, match="'second': its input stream already runs "
                                             "stateful step 'first'"):
        sw.stateful(first.select("key", "total"), key="key", builder=Accumulator,
                    value="total", output_schema=OUTPUT, step_id="second")


def test_demo_over_connect(remote, connect_url, tmp_path, capsys):
    from sparkwax.cli import main

    output = tmp_path / "demo"
    code = main(["demo", "--events", "2000", "--batches", "2", "--output", str(output),
                 "--remote", connect_url])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "via Spark Connect" in printed and "sparkwax demo: summary" in printed
    assert remote.read.parquet(str(output / "sessions")).count() > 0
    assert remote.range(2).count() == 2  # the test's session is still usable
