"""Checkpoints, sources and sinks on a distributed file system Python cannot open.

A ViewFS mount (``viewfs://<table>/data`` -> a local temp folder) stands in
for HDFS/S3/ADLS: Spark reaches it through Hadoop, Python's ``os`` does not,
so every sparkwax read or write next to a checkpoint must go through Spark's
file system for these tests to pass. The test side looks at the mapped local
folder only to check what landed there.
"""

import json
import os
import uuid

import pytest

import sparkwax as sw
from sparkwax.engine.checkpoints.snapshots import clear, read_entries, state_summary
from sparkwax.engine.checkpoints.storage import HadoopStorage, SparkStorage, storage_for
from sparkwax.testing import Eof, run
from sparkwax.testing.reference import Accumulator
from sparkwax.testing.spark import run_script_on_spark

import test_finish
from pyspark import cloudpickle
from test_finish import INPUT, OUTPUT, SCRIPT, TIME

from kit import SumV1, state_cli

cloudpickle.register_pickle_by_value(test_finish)  # workers cannot import test modules


def mount_conf(table: str, folder) -> dict:
    """The Spark setting that mounts ``folder`` at ``viewfs://<table>/data``."""
    return {f"spark.hadoop.fs.viewfs.mounttable.{table}.link./data": f"file://{folder}"}


@pytest.fixture
def viewfs(spark, tmp_path):
    """``(uri of the mount, local folder behind it)``, mounted on the shared session."""
    table = f"sw{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "mounted"
    folder.mkdir()
    conf = mount_conf(table, folder)
    for name, value in conf.items():  # on a running session: Hadoop's own key
        spark.conf.set(name[len("spark.hadoop."):], value)
    yield f"viewfs://{table}/data", folder, conf
    for name in conf:
        spark.conf.unset(name[len("spark.hadoop."):])


def test_python_cannot_open_the_mount_but_spark_can(spark, viewfs):
    uri, folder, _ = viewfs
    (folder / "hello.txt").write_text("hi\n")
    assert not os.path.exists(f"{uri}/hello.txt")
    assert [r.value for r in spark.read.text(f"{uri}/hello.txt").collect()] == ["hi"]


@pytest.mark.parametrize("kind", [HadoopStorage, SparkStorage])
def test_storage_reads_writes_lists_and_deletes_on_the_mount(spark, viewfs, kind):
    uri, folder, _ = viewfs
    store = kind(spark)
    assert not store.exists(f"{uri}/ck") and store.read_text(f"{uri}/ck/notes.json") is None
    store.write_text(f"{uri}/ck/notes.json", '{"a": 1}')
    assert json.loads(store.read_text(f"{uri}/ck/notes.json")) == {"a": 1}
    store.write_text(f"{uri}/ck/notes.json", '{"a": 2}')  # replaces
    assert json.loads(store.read_text(f"{uri}/ck/notes.json")) == {"a": 2}
    (folder / "ck" / "offsets").mkdir(parents=True)
    for name in ("0", "1", ".1.crc"):
        (folder / "ck" / "offsets" / name).write_text("v1\n{}\n")
    assert [e.name for e in store.list(f"{uri}/ck/offsets")] == ["0", "1"]
    assert all(e.modified_ms > 0 for e in store.list(f"{uri}/ck/offsets"))
    assert store.list(f"{uri}/ck/nothing") == []
    store.delete(f"{uri}/ck")
    assert not (folder / "ck" / "offsets").exists()


def test_start_show_finish_and_clear_on_the_mount(spark, viewfs, capsys):
    uri, folder, _ = viewfs
    online = run_script_on_spark(spark, Accumulator, SCRIPT, input_schema=INPUT,
                                 output_schema=OUTPUT, time=TIME, workdir=str(folder), uri=uri)
    offline = run(Accumulator, SCRIPT, time=TIME)
    assert {k: [tuple(v) for v in vs] for k, vs in online.by_key.items()} == offline.by_key
    checkpoint = f"{uri}/checkpoint"
    assert (folder / "checkpoint" / "offsets").is_dir() and not os.path.exists("viewfs:")

    entries = read_entries(spark, checkpoint)
    assert {e.key: e.snapshot for e in entries} == offline.snapshots
    assert state_summary(spark, checkpoint)["live_keys"] == len(offline.snapshots)
    # The CLI mounts the folder itself, under a table the session does not know.
    cli_table = f"cli{uuid.uuid4().hex[:8]}"
    confs = [arg for name, value in mount_conf(cli_table, folder).items()
             for arg in ("--conf", f"{name}={value}")]
    checkpoint = f"viewfs://{cli_table}/data/checkpoint"
    assert state_cli(["show", checkpoint, *confs]) == 0
    assert "live keys" in capsys.readouterr().out
    assert state_cli(["show", checkpoint, "--json", *confs]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(line["key"] for line in lines[:-1]) == sorted(offline.snapshots)

    ends = sw.finish(checkpoint, builder=Accumulator, output_schema=OUTPUT, time=TIME)
    after = run(Accumulator, SCRIPT + [Eof()], time=TIME)
    expected = {k: vs[len(offline.by_key.get(k, [])):] for k, vs in after.by_key.items()}
    got = {}
    for row in ends.collect():
        got.setdefault(row["key"], []).append(tuple(row)[1:])
    assert got == {k: vs for k, vs in expected.items() if vs} and got

    assert state_cli(["clear", checkpoint, "--yes", *confs]) == 2  # just written: in use
    assert "more)" in capsys.readouterr().err
    clear(checkpoint, force=True, spark=spark)
    assert not (folder / "checkpoint").exists()
    with pytest.raises(sw.ConfigError, match="is not a streaming checkpoint"):
        read_entries(spark, checkpoint)


def test_start_records_steps_on_the_mount_and_refuses_a_changed_output(spark, viewfs):
    uri, folder, _ = viewfs
    (folder / "in").mkdir()
    (folder / "in" / "0.json").write_text('{"key": "a", "value": 1}\n')

    def attach(schema):
        stream = spark.readStream.schema("key string, value long").json(f"{uri}/in")
        return sw.stateful(stream, key="key", builder=SumV1, value="value",
                           output_schema=schema, step_id="sum")

    query = sw.start(attach("total long, version long"), checkpoint=f"{uri}/ck",
                     path=f"{uri}/out")
    query.processAllAvailable()
    query.stop()
    assert json.loads((folder / "ck" / "sparkwax-steps.json").read_text())["steps"]["sum"]
    assert [tuple(r) for r in spark.read.parquet(f"{uri}/out").collect()] == [("a", 1, 1)]
    with pytest.raises(sw.ConfigError) as refused:
        sw.start(attach("total long, version long, extra string"), checkpoint=f"{uri}/ck",
                 path=f"{uri}/out")
    assert "step 'sum': output changed from 'total bigint, version bigint' to " \
           "'total bigint, version bigint, extra string'" in str(refused.value)


def test_a_file_uri_checkpoint_is_the_folder_it_names(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "0.json").write_text('{"key": "a", "value": 1}\n')
    stream = spark.readStream.schema("key string, value long").json(str(tmp_path / "in"))
    out = sw.stateful(stream, key="key", builder=SumV1, value="value",
                      output_schema="total long, version long", step_id="sum")
    query = sw.start(out, checkpoint=f"file://{tmp_path}/ck", path=f"file://{tmp_path}/out")
    query.processAllAvailable()
    query.stop()
    assert (tmp_path / "ck" / "sparkwax-steps.json").is_file()
    assert not (tmp_path / "file:").exists()
    assert [e.snapshot for e in read_entries(spark, f"file://{tmp_path}/ck")] == [1]


@pytest.mark.parametrize("path, named, hint", [
    ("s3a://bucket/ck", "'s3a'", "hadoop-aws"),
    ("abfss://c@account.dfs.core.windows.net/ck", "'abfss'", "hadoop-azure"),
    ("nosuchfs://host/ck", "'nosuchfs'", "fs.nosuchfs.impl"),
])
def test_a_scheme_spark_cannot_write_is_a_config_error_naming_it(spark, path, named, hint):
    for store in (HadoopStorage(spark), SparkStorage(spark)):
        with pytest.raises(sw.ConfigError) as refused:
            store.exists(f"{path}/offsets")
        assert named in str(refused.value) and hint in str(refused.value), str(refused.value)
    with pytest.raises(sw.ConfigError, match=hint):
        read_entries(spark, path)
    assert isinstance(storage_for(spark), HadoopStorage)
