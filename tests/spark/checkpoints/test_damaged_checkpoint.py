"""Named failures (issue 21): real checkpoints, written by streaming queries on the
shared session, damaged the ways disks and copies damage them; the restart
(``sw.start``) and ``sparkwax state show`` name the step, the file and the two
ways out, and a damaged steps file is refused, never overwritten. Also: sparkwax
errors raised in tasks reach the caller of ``sw.start``'s query as themselves,
and a snapshot too large for the session is a SnapshotError naming key and size.

Each store's checkpoint is written once (module fixtures) the way a long-running
query leaves it: Spark's maintenance took snapshots (or RocksDB zips) and
cleaned up the older files (``minBatchesToRetain=1``), then one more batch
added a delta (changelog) after them. Each test damages its own copy."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException

import sparkwax as sw
from sparkwax.engine.checkpoints.format.files import load_chains, state_file_name
from sparkwax.engine.checkpoints.snapshots import read_entries
from sparkwax.engine.deploy.session_confs import STATE_STORES

from spark_confs import confs

from kit import Count, each_spark_host, state_cli

KEYS = "abcdef"
ROCKSDB = {"spark.sql.streaming.stateStore.providerClass": STATE_STORES["rocksdb"],
           "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"}
HDFS = {"spark.sql.streaming.stateStore.providerClass": STATE_STORES["hdfs"]}
SNAPSHOTTING = {"spark.sql.streaming.stateStore.minDeltasForSnapshot": "1",
                "spark.sql.streaming.stateStore.maintenanceInterval": "100ms",
                "spark.sql.streaming.minBatchesToRetain": "1",
                # stopping the maintenance (restart_maintenance) waits for its threads;
                # RocksDB's may wait for minutes on an upload of a query that stopped
                "spark.sql.streaming.stateStore.maintenanceShutdownTimeout": "2s",
                "spark.sql.streaming.stateStore.maintenanceForceShutdownTimeout": "2s"}


def restart_maintenance(spark):
    """Spark starts its state store maintenance once per JVM, with the interval
    of the query that starts it; stopping it makes the next query start it
    again with the session's current setting (Spark's internal API)."""
    spark.sparkContext._jvm.org.apache.spark.sql.execution.streaming.state.StateStore \
        .stopMaintenanceTask()


def write_batch(folder: Path, number: int) -> None:
    path = folder / f"batch-{number:03d}.json"
    path.write_text("".join(json.dumps({"key": k, "value": str(number)}) + "\n" for k in KEYS))
    os.utime(path, (1_600_000_000 + number,) * 2)


def start(spark, source: Path, checkpoint: Path, *, host="per_key", **options):
    stream = spark.readStream.schema("key string, value string") \
        .option("maxFilesPerTrigger", 1).json(str(source))
    out = sw.stateful(stream, key="key", builder=Count, value="value", output_schema="n long",
                      step_id="counts", host=host, **({"buckets": 2} if host == "packed" else {}))
    return sw.start(out, checkpoint=str(checkpoint), path=str(checkpoint.parent / "out"),
                    stop_on_signal=False, **options)


def partition_files(folder: Path):
    return {state_file_name(p.name): p for p in folder.iterdir() if state_file_name(p.name)}


def loadable(folder: Path, version: int) -> list:
    """The chains of files that load ``version`` of a partition and all exist."""
    files = partition_files(folder)
    return [chain for chain in load_chains(files, version) if all(p in files for p in chain)]


def write_checkpoint(spark, workdir: Path, store: dict):
    source, checkpoint = workdir / "in", workdir / "ck"
    source.mkdir()
    for number in range(4):
        write_batch(source, number)
    restart_maintenance(spark)
    with confs(spark, {**store, **SNAPSHOTTING}):
        query = start(spark, source, checkpoint)
        query.processAllAvailable()
        deadline = time.monotonic() + 30  # maintenance snapshots and cleans up every 100 ms
        partitions = [checkpoint / "state/0/0", checkpoint / "state/0/1"]
        while time.monotonic() < deadline and not all(
                loadable(p, 4) and not any(c[0][1] in ("delta", "changelog")
                                           for c in loadable(p, 4)) for p in partitions):
            time.sleep(0.1)
        query.stop()
    for partition in partitions:  # only snapshots can load the state now
        chains = loadable(partition, 4)
        assert chains and all(c[0][1] in ("snapshot", "zip") for c in chains), \
            f"Spark's maintenance did not snapshot and clean {partition}: {sorted(os.listdir(partition))}"
    restart_maintenance(spark)  # back to the session's interval: no snapshot of the next batch
    write_batch(source, 4)
    with confs(spark, store):
        query = start(spark, source, checkpoint, trigger={"availableNow": True})
        query.awaitTermination()
    write_batch(source, 5)  # what each restart will read
    return source, checkpoint


@pytest.fixture(scope="module")
def written(spark, tmp_path_factory):
    made = {}

    def get(name):
        if name not in made:
            made[name] = write_checkpoint(spark, tmp_path_factory.mktemp(name),
                                          {"hdfs": HDFS, "rocksdb": ROCKSDB}[name])
        return made[name]
    yield get
    restart_maintenance(spark)


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncate":
        data = data[:len(data) // 2]
    else:  # flip 8 bytes a third of the way in
        middle = len(data) // 3
        data = data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + 8]) + data[middle + 8:]
    path.write_bytes(data)
    checksum = path.parent / f".{path.name}.crc"
    if how != "flip+crc" and checksum.exists():  # as on a store without .crc files (S3, ADLS)
        checksum.unlink()


def newest(folder: Path, kind: str) -> Path:
    return max((p for p in folder.iterdir() if (state_file_name(p.name) or (0, ""))[1] == kind),
               key=lambda p: state_file_name(p.name)[0])


CASES = [  # (store, what is damaged, how): the eight kinds of the issue, and a checksum
    ("hdfs", "delta", "flip"),
    ("hdfs", "delta", "truncate"),
    ("hdfs", "delta", "flip+crc"),    # Hadoop's own .crc catches it
    ("hdfs", "snapshot", "flip"),
    ("rocksdb", "changelog", "truncate"),
    ("rocksdb", "zip", "flip"),
    ("hdfs", "commits", "truncate"),
    ("hdfs", "commits", "flip"),
    ("hdfs", "offsets", "truncate"),
    ("hdfs", "offsets", "flip"),
]


@pytest.mark.parametrize("store, part, how", CASES)
def test_a_damaged_checkpoint_is_named_by_the_restart_and_state_show(
        spark, written, tmp_path, capsys, store, part, how):
    source, pristine = written(store)
    checkpoint = tmp_path / "ck"
    shutil.copytree(pristine, checkpoint)
    if part in ("commits", "offsets"):
        targets = [newest_log(checkpoint / part)]
    elif part in ("delta", "changelog"):  # the change after the snapshot: every way needs it
        targets = [newest(checkpoint / "state/0/0", part)]
    else:  # every snapshot Spark can load from: it falls back to an older one and its
        # deltas when the newest cannot be read (cleanup left no deltas from the start)
        partition = checkpoint / "state/0/1"
        targets = [partition_files(partition)[chain[0]] for chain in loadable(partition, 5)]
    for target in targets:
        damage(target, how)
    named = str(targets[0].relative_to(checkpoint))

    with confs(spark, ROCKSDB if store == "rocksdb" else HDFS):
        with pytest.raises(sw.CheckpointError) as restart:
            query = start(spark, source, checkpoint, trigger={"availableNow": True})
            query.awaitTermination()
    error = restart.value
    message = str(error)
    for expected in ("step 'counts'", f"checkpoint {checkpoint}", named, "restore the folder",
                     f"sparkwax state clear {checkpoint}"):
        assert expected in message, f"{expected!r} missing from:\n{message}"
    assert error.step_id == "counts" and error.path.endswith(named)
    assert isinstance(error, sw.ConfigError)
    if part in ("commits", "offsets"):
        assert f"{'offset' if part == 'offsets' else 'commit'} log file {named}" in message
        assert not spark.streams.active  # refused before Spark started the query
    else:
        assert "Spark cannot load its state" in message
        assert isinstance(error.__cause__, StreamingQueryException)  # Spark's, kept

    assert state_cli(["show", str(checkpoint)]) == 2
    shown = capsys.readouterr().err
    assert shown.startswith("sparkwax state: ") and named in shown and "state clear" in shown
    with pytest.raises(sw.CheckpointError, match=named.replace(".", r"\.")):
        read_entries(spark, str(checkpoint))


def _later_log_offset(text: str) -> str:
    lines = text.split("\n")
    offset = json.loads(lines[2])["logOffset"]
    return "\n".join(lines[:2] + [json.dumps({"logOffset": offset + 5})] + lines[3:])


STRING_DAMAGE = {  # issue 32: one character changed inside a JSON string of offsets/N
    "state_format": lambda text: text.replace(
        '"spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion":"2"',
        '"spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion":"1"'),
    "codec": lambda text: text.replace('"lz4"', '"lz5"'),
    "provider": lambda text: text.replace('StateStoreProvider"', 'StateStoreProvidex"'),
    "watermark_policy": lambda text: text.replace('"min"', '"mix"'),
    "source_offset": _later_log_offset,
}


@pytest.mark.parametrize("how", sorted(STRING_DAMAGE))
def test_an_offsets_file_damaged_inside_a_json_string_is_named(spark, written, tmp_path, capsys,
                                                               how):
    # still valid JSON: Spark failed later with STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE,
    # a bare class name or "batches (...) don't exist", and `state show` exited 0
    source, pristine = written("hdfs")
    checkpoint = tmp_path / "ck"
    shutil.copytree(pristine, checkpoint)
    target = newest_log(checkpoint / "offsets")
    text = target.read_text()
    damaged = STRING_DAMAGE[how](text)
    assert damaged != text and json.loads(damaged.split("\n")[1])
    target.write_text(damaged)
    (target.parent / f".{target.name}.crc").unlink(missing_ok=True)
    named = f"offsets/{target.name}"
    with confs(spark, HDFS):
        with pytest.raises(sw.CheckpointError) as restart:
            start(spark, source, checkpoint, trigger={"availableNow": True})
    message = str(restart.value)
    for expected in ("step 'counts'", f"offset log file {named}", "restore the folder",
                     f"sparkwax state clear {checkpoint}"):
        assert expected in message, f"{expected!r} missing from:\n{message}"
    assert restart.value.path.endswith(named) and not spark.streams.active
    assert state_cli(["show", str(checkpoint)]) == 2
    shown = capsys.readouterr().err
    assert named in shown and "state clear" in shown


def newest_log(folder: Path) -> Path:
    return max((p for p in folder.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))


@pytest.mark.parametrize("damaged", [
    "",                                   # emptied
    "TRUNCATE",                           # cut in half
    "\u0000\u00ff garbage",               # not JSON
    '{"steps": ["counts"], "confs": {}}',  # the wrong shape
])
def test_a_damaged_steps_file_is_refused_and_kept(spark, written, tmp_path, damaged):
    source, pristine = written("hdfs")
    checkpoint = tmp_path / "ck"
    shutil.copytree(pristine, checkpoint)
    steps = checkpoint / "sparkwax-steps.json"
    text = steps.read_text()
    steps.write_text(text[:len(text) // 2] if damaged == "TRUNCATE" else damaged)
    (checkpoint / ".sparkwax-steps.json.crc").unlink(missing_ok=True)
    before = steps.read_bytes()
    with confs(spark, HDFS):
        with pytest.raises(sw.ConfigError) as refused:
            start(spark, source, checkpoint, trigger={"availableNow": True})
    assert isinstance(refused.value, sw.CheckpointError)
    message = str(refused.value)
    assert str(steps) in message and "does not overwrite it" in message
    assert "Restore the file" in message and "delete the file" in message
    assert steps.read_bytes() == before and not spark.streams.active


def test_finish_of_a_packed_step_refuses_a_damaged_steps_file(spark, tmp_path):
    source, checkpoint = tmp_path / "in", tmp_path / "ck"
    source.mkdir()
    write_batch(source, 0)
    start(spark, source, checkpoint, host="packed",
          trigger={"availableNow": True}).awaitTermination()
    assert [row["n"] for row in sw.finish(str(checkpoint), builder=Count,
                                          output_schema="n long").collect()] == []
    (checkpoint / "sparkwax-steps.json").write_text("")
    with pytest.raises(sw.CheckpointError, match="sparkwax-steps.json is empty"):
        sw.finish(str(checkpoint), builder=Count, output_schema="n long")


class Boom(Count):
    def on_item(self, value):
        if value == "1":
            raise ValueError(f"cannot count {value!r}")
        return super().on_item(value)


class BadEmit(Count):
    def on_item(self, value):
        return [{"n": "not a number"}], sw.RETAIN


def start_logic(spark, tmp_path, builder, **options):
    source = tmp_path / "in"
    source.mkdir(parents=True)
    write_batch(source, 0)
    write_batch(source, 1)
    stream = spark.readStream.schema("key string, value string") \
        .option("maxFilesPerTrigger", 1).json(str(source))
    out = sw.stateful(stream, key="key", builder=builder, value="value", output_schema="n long",
                      step_id="counts", **options)
    return sw.start(out, checkpoint=str(tmp_path / "ck"), path=str(tmp_path / "out"),
                    stop_on_signal=False)


def test_errors_raised_in_tasks_reach_the_caller_as_themselves(spark, tmp_path):
    query = start_logic(spark, tmp_path / "boom", Boom)
    with pytest.raises(sw.CallbackError) as caught:
        query.processAllAvailable()
    error = caught.value
    assert (error.step_id, error.callback, error.value) == ("counts", "on_item", "1")
    assert error.key in KEYS and "ValueError" in error.reason
    assert isinstance(error.__cause__, StreamingQueryException)
    assert type(query.exception()) is sw.CallbackError

    query = start_logic(spark, tmp_path / "emit", BadEmit)
    try:
        query.awaitTermination()
    except sw.SchemaError as schema_error:   # what a user writes
        assert schema_error.step_id == "counts" and schema_error.key in KEYS
        assert schema_error.callback == "output field 'n'"
        assert schema_error.value == "not a number"
    else:
        pytest.fail("the SchemaError did not reach the caller")

    frame = spark.createDataFrame([("k", "v")], "key string, value string")
    with pytest.raises(sw.SchemaError, match="step 'counts', key 'k'"):
        with sw.task_errors():
            sw.stateful(frame, key="key", builder=BadEmit, value="value",
                        output_schema="n long", step_id="counts").collect()


class Large(Count):
    def snapshot(self):
        return "x" * 5000


@each_spark_host
def test_a_snapshot_over_the_limit_names_the_key_and_its_size(spark, tmp_path, host):
    with confs(spark, {"spark.sparkwax.maxSnapshotBytes": "4k"}):
        query = start_logic(spark, tmp_path, Large, host=host,
                            **({"buckets": 2} if host == "packed" else {}))
        with pytest.raises(sw.SnapshotError) as caught:
            query.processAllAvailable()
    error = caught.value
    assert error.step_id == "counts" and error.key in KEYS and error.callback == "snapshot"
    assert "over the 4,096 bytes a state row may have" in str(error)
    assert "spark.sparkwax.maxSnapshotBytes" in str(error)
    size = int(str(error).split(" is ", 1)[1].split(" bytes encoded")[0].replace(",", ""))
    assert size > 4096
