"""sw.read_state: a step's state as a DataFrame decoded on the executors, on
both hosts; SQL on it; a past batch; the change feed (RocksDB) and its named
error elsewhere; state show on top of it; 100k keys decoded on executors."""

import json
import os
from datetime import timezone

import pytest

import sparkwax as sw
from sparkwax import recovery
from sparkwax.engine.checkpoints.snapshots import read_entries
from sparkwax.engine.deploy.session_confs import STATE_STORES
from sparkwax._ops.snapshot_json import json_value
from sparkwax.testing import Batch, run
from sparkwax.testing.reference import Accumulator
from sparkwax.testing.spark import run_script_on_spark

from spark_confs import confs

from kit import T0, each_spark_host, item

INPUT = "key string, ts timestamp, value long"
OUTPUT = "kind string, a long, b long"
TIME = sw.EventTime("ts", watermark="2 minutes")
ROCKSDB = {"spark.sql.streaming.stateStore.providerClass": STATE_STORES["rocksdb"],
           "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"}


SCRIPT = [Batch([item("a", 0, 1), item("b", 1, 2), item("c", 2, 3), item("d", 2, 4)]),
          Batch([item("a", 1, 5), item("e", 2, 6)])]


class Count(sw.StatefulLogic):
    """No timers (so one file is one micro-batch); a negative value discards."""

    def __init__(self, resume=None):
        self.n = resume or 0

    def on_item(self, value):
        self.n += 1
        return [self.n], sw.DISCARD if value < 0 else sw.RETAIN

    def snapshot(self):
        return self.n


@pytest.fixture(scope="module")
def checkpoints(spark, tmp_path_factory):
    made = {}
    for host in ("per_key", "packed"):
        workdir = tmp_path_factory.mktemp(f"state-{host}")
        run_script_on_spark(spark, Accumulator, SCRIPT, input_schema=INPUT, output_schema=OUTPUT,
                            time=TIME, workdir=str(workdir), host=host, step_id="acc")
        made[host] = str(workdir / "checkpoint")
    return made


@each_spark_host
def test_decoded_state_equals_read_entries_per_key(spark, checkpoints, host):
    checkpoint = checkpoints[host]
    entries = {e.key: e for e in read_entries(spark, checkpoint)}
    assert len(entries) >= 3 and any(e.timer for e in entries.values())
    state = sw.read_state(spark, checkpoint)
    assert state.columns == ["key", "snapshot", "timer", "deadline", "bytes", "partition",
                             "error"]
    rows = {r["key"]: r for r in state.collect()}
    assert sorted(rows) == sorted(entries)
    for key, entry in entries.items():
        row = rows[key]
        assert json.loads(row["snapshot"]) == json_value(entry.snapshot)  # show --json's
        assert row["bytes"] == entry.size and row["partition"] == entry.partition
        timer = row["timer"] and row["timer"].replace(tzinfo=timezone.utc)  # the session: UTC
        assert timer == entry.timer
        assert row["deadline"] is None and row["error"] is None


@each_spark_host
def test_typed_snapshots_sql_filter_and_join(spark, checkpoints, host):
    offline = run(Accumulator, SCRIPT, time=TIME).snapshots
    state = sw.read_state(spark, checkpoints[host], schema="total long, count long",
                          decode=lambda s: {"total": s[0], "count": s[1]})
    state.createOrReplaceTempView("acc_state")
    big = spark.sql("SELECT key, snapshot.total AS total FROM acc_state "
                    "WHERE snapshot.total >= 3 ORDER BY key").collect()
    assert [(r["key"], r["total"]) for r in big] == sorted(
        (k, s[0]) for k, s in offline.items() if s[0] >= 3)
    spark.createDataFrame([("a", "alice"), ("c", "carol")], "key string, name string") \
        .createOrReplaceTempView("acc_users")
    joined = spark.sql("SELECT u.name, s.snapshot.count AS n FROM acc_state s "
                       "JOIN acc_users u ON s.key = u.key ORDER BY u.name").collect()
    assert [(r["name"], r["n"]) for r in joined] == [
        (name, offline[k][1]) for k, name in (("a", "alice"), ("c", "carol"))]
    # with no decode the snapshot itself fills the struct (a tuple, field by field)
    plain = sw.read_state(spark, checkpoints[host],
                          schema="total long, count long, first timestamp, last timestamp")
    assert {r["key"]: r["snapshot"]["total"] for r in plain.collect()} == {
        k: s[0] for k, s in offline.items()}


def test_a_snapshot_that_cannot_be_decoded_is_a_row_with_its_error(spark, checkpoints):
    def picky(snapshot):
        if snapshot[1] == 2:  # only "a" has had two items
            raise ValueError("two is not welcome")
        return snapshot

    rows = {r["key"]: r for r in sw.read_state(spark, checkpoints["packed"],
                                               decode=picky).collect()}
    assert rows["a"]["snapshot"] is None and rows["a"]["bytes"] > 0
    assert rows["a"]["error"] == "ValueError: two is not welcome"
    assert all(r["error"] is None and r["snapshot"] for k, r in rows.items() if k != "a")
    unfit = sw.read_state(spark, checkpoints["per_key"], schema="total string, count long")
    assert all(r["snapshot"] is None and "does not fit the schema" in r["error"]
               for r in unfit.collect())


@each_spark_host
def test_a_past_batch(spark, checkpoints, host):
    first = run(Accumulator, SCRIPT[:1], time=TIME).snapshots
    rows = sw.read_state(spark, checkpoints[host], batch_id=0).collect()
    assert {r["key"]: json.loads(r["snapshot"]) for r in rows} == {
        k: json_value(s) for k, s in first.items()}


def _count_checkpoint(spark, workdir, host, store):
    script = [Batch([("a", 1), ("b", 1), ("c", 1)]), Batch([("a", 1), ("b", -1)]),
              Batch([("c", 1), ("d", 1)])]
    with confs(spark, store):
        run_script_on_spark(spark, Count, script, input_schema="key string, value long",
                            output_schema="n long", workdir=str(workdir), host=host, value="value",
                            # one bucket: every batch changes it, unchanged keys included
                            **({"buckets": 1} if host == "packed" else {}))
    return str(workdir / "checkpoint")


@each_spark_host
def test_the_change_feed_per_key_on_rocksdb(spark, tmp_path, host):
    checkpoint = _count_checkpoint(spark, tmp_path, host, ROCKSDB)
    changes = sw.read_state(spark, checkpoint, changes=(1, 2))
    assert changes.columns[:3] == ["batch_id", "change_type", "key"]
    got = sorted((r["batch_id"], r["change_type"], r["key"], r["snapshot"])
                 for r in changes.collect())
    # a packed bucket holds several keys: only the keys a batch changed are reported
    assert got == [(1, "delete", "b", None), (1, "update", "a", "2"),
                   (2, "update", "c", "2"), (2, "update", "d", "1")]
    first = sw.read_state(spark, checkpoint, changes=(0, 0)).collect()
    assert sorted((r["change_type"], r["key"]) for r in first) == [
        ("update", "a"), ("update", "b"), ("update", "c")]


def test_the_change_feed_on_the_hdfs_store_is_a_named_error(spark, tmp_path):
    checkpoint = _count_checkpoint(spark, tmp_path, "per_key",
                                   {"spark.sql.streaming.stateStore.providerClass":
                                    STATE_STORES["hdfs"]})
    with pytest.raises(sw.ConfigError, match="HDFSBackedStateStoreProvider") as refused:
        sw.read_state(spark, checkpoint, changes=(0, None))
    assert "RocksDB" in str(refused.value) and "batch_id=" in str(refused.value)
    with pytest.raises(sw.ConfigError, match="start <= end"):
        sw.read_state(spark, checkpoint, changes=(2, 1))


@pytest.mark.slow
def test_100k_keys_are_decoded_on_the_executors(spark, tmp_path, monkeypatch):
    keys = 100_000
    workdir = tmp_path / "big"
    (workdir / "input").mkdir(parents=True)
    with open(workdir / "input" / "batch-00000.json", "w") as handle:
        handle.writelines(f'{{"key": "k{n}", "value": 1}}\n' for n in range(keys))
    run_script_on_spark(spark, Count, [], input_schema="key string, value long",
                        output_schema="n long", workdir=str(workdir), host="packed",
                        value="value")
    checkpoint = str(workdir / "checkpoint")
    decoded_here = []
    real_decode = recovery.decode
    monkeypatch.setattr(recovery, "decode",
                        lambda *a, **k: decoded_here.append(1) or real_decode(*a, **k))

    def where(snapshot):  # runs where the snapshot is decoded
        from pyspark import TaskContext

        return {"n": snapshot, "task": TaskContext.get().partitionId(), "pid": os.getpid()}

    state = sw.read_state(spark, checkpoint, schema="n long, task int, pid int", decode=where)
    totals = state.selectExpr("count(*) AS keys", "sum(snapshot.n) AS n",
                              "count(error) AS errors",
                              "count(DISTINCT snapshot.task) AS tasks",
                              f"max(snapshot.pid = {os.getpid()}) AS on_driver").collect()[0]
    assert (totals["keys"], totals["n"], totals["errors"]) == (keys, keys, 0)
    assert totals["tasks"] >= 1 and not totals["on_driver"]  # no TaskContext on the driver
    assert decoded_here == []  # the driver's codec never ran

