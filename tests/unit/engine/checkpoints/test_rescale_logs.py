"""The log entries of a rescale batch (``sparkwax.engine.checkpoints.state.batch_logs``):
the offset entry's partition count, and the file sink's log entry for a batch
that wrote nothing, plain or compacted as Spark compacts it. An in-memory
store stands for Spark's file system."""

import json

import pytest

from sparkwax.engine.checkpoints.format.metadata_logs import parse_commit
from sparkwax.engine.checkpoints.state import batch_logs
from sparkwax.errors import CheckpointError

SINK = "/data/out"
LOG = f"{SINK}/_spark_metadata"


class LogStore:
    """The part of sparkwax's storage the sink log uses."""

    def __init__(self, files):
        self.files = dict(files)

    def list(self, path):
        class Entry:
            def __init__(self, name):
                self.name = name
        names = {name[len(path) + 1:].split("/")[0] for name in self.files
                 if name.startswith(path + "/")}
        return [Entry(name) for name in sorted(names)]

    def read_text(self, path):
        return self.files.get(path)

    def write_text(self, path, text):
        self.files[path] = text


def added(path):
    return json.dumps({"path": path, "size": 1, "action": "add"})


def deleted(path):
    return json.dumps({"path": path, "size": 1, "action": "delete"})


def test_offsets_get_the_new_partition_count_and_watermark_and_keep_the_rest():
    offsets = "\n".join(["v1", json.dumps({"batchWatermarkMs": 5, "batchTimestampMs": 9,
                                           "conf": {"spark.sql.shuffle.partitions": "2",
                                                    "other": "x"}}),
                         '{"logOffset":3}', '{"logOffset":7}'])
    lines = batch_logs.with_partitions(offsets, 48, watermark_ms=60_000).split("\n")
    meta = json.loads(lines[1])
    assert meta == {"batchWatermarkMs": 60_000, "batchTimestampMs": 9,
                    "conf": {"spark.sql.shuffle.partitions": "48", "other": "x"}}
    assert lines[0] == "v1" and lines[2:] == ['{"logOffset":3}', '{"logOffset":7}']
    assert json.loads(batch_logs.with_partitions(offsets, 3).split("\n")[1])[
        "batchWatermarkMs"] == 5
    with pytest.raises(ValueError):
        batch_logs.with_partitions("v1", 3)


def test_a_commit_gives_its_watermark():
    assert parse_commit('v1\n{"nextBatchWatermarkMs":1234}') == 1234
    assert parse_commit("v1") == 0


def test_the_sink_log_gets_an_empty_entry_for_an_ordinary_batch():
    store = LogStore({f"{LOG}/0": "v1\n" + added("a"), f"{LOG}/1": "v1\n" + added("b")})
    assert batch_logs.numbered(store, LOG) == [0, 1]
    assert batch_logs.sink_entry(store, SINK, 2, 10) == f"{LOG}/2"
    assert store.files[f"{LOG}/2"] == "v1"
    assert batch_logs.sink_entry(store, SINK, 2, 10) is None  # there already
    assert batch_logs.sink_entry(LogStore({}), SINK, 2, 10) is None  # no file sink


def test_a_compaction_batch_holds_every_live_file_as_spark_compacts():
    files = {  # (Spark deletes the entries a compaction covers: 0 and 1 are gone)
             f"{LOG}/2.compact": "v1\n" + "\n".join([added("a"), added("b"), added("c")]),
             f"{LOG}/3": "v1\n" + added("d"), f"{LOG}/4": "v1\n" + deleted("b")}
    store = LogStore(files)
    assert batch_logs.numbered(store, LOG) == [2, 3, 4]
    assert batch_logs.sink_entry(store, SINK, 5, 3) == f"{LOG}/5.compact"
    lines = store.files[f"{LOG}/5.compact"].split("\n")
    assert lines[0] == "v1"
    assert sorted(json.loads(line)["path"] for line in lines[1:]) == ["a", "c", "d"]


def test_the_first_compaction_reads_every_batch_before_it():
    store = LogStore({f"{LOG}/{n}": "v1\n" + added(str(n)) for n in range(9)})
    batch_logs.sink_entry(store, SINK, 9, 10)
    paths = [json.loads(line)["path"] for line in store.files[f"{LOG}/9.compact"].split("\n")[1:]]
    assert sorted(paths) == [str(n) for n in range(9)]


def test_a_missing_sink_log_entry_is_named():
    store = LogStore({f"{LOG}/0": "v1\n" + added("a"), f"{LOG}/2": "v1\n" + added("c")})
    with pytest.raises(CheckpointError, match="no entry 1"):
        batch_logs.sink_entry(store, SINK, 3, 4)


class CheckpointStore(LogStore):
    def read_bytes(self, path):
        text = self.files.get(path)
        return None if text is None else text.encode()


def test_the_rescale_batch_is_logged_and_a_planned_batch_moves_one_up():
    """Batch 4 committed, batch 5 planned (offsets only): the rescale is
    batch 5 (batch 4's sources, the new count, batch 4's next watermark), the
    planned batch becomes 6 with the new count, the commit comes last."""
    from sparkwax.engine.checkpoints.state.rescale import _write_logs

    def offsets(log_offset, watermark, partitions="2"):
        meta = {"batchWatermarkMs": watermark, "conf": {"spark.sql.shuffle.partitions": partitions}}
        return "\n".join(["v1", json.dumps(meta), json.dumps({"logOffset": log_offset})])

    ck = "/data/ck"
    store = CheckpointStore({
        f"{ck}/sparkwax-steps.json": json.dumps({"steps": {"s": {"step_id": "s", "state": "packed/1 buckets=8"}},
                                                 "confs": {"spark.sql.shuffle.partitions": "2"}}),
        f"{ck}/state/0/_metadata/metadata":
            'v1\n{"stateStoreInfo":[{"storeName":"default","numPartitions":2}]}'})
    plan = {"committed": 4, "partitions": [2, 6], "buckets": [8, 24], "sink": None,
            "offsets": offsets(3, 100), "planned": offsets(4, 900),
            "commit": 'v1\n{"nextBatchWatermarkMs":900}'}
    _write_logs(None, store, ck, plan)
    rescale_batch = store.files[f"{ck}/offsets/5"].split("\n")
    planned = store.files[f"{ck}/offsets/6"].split("\n")
    assert json.loads(rescale_batch[2]) == {"logOffset": 3}  # reads nothing new
    assert json.loads(rescale_batch[1])["batchWatermarkMs"] == 900
    assert json.loads(planned[2]) == {"logOffset": 4}
    for lines in (rescale_batch, planned):
        assert json.loads(lines[1])["conf"]["spark.sql.shuffle.partitions"] == "6"
    assert store.files[f"{ck}/commits/5"] == plan["commit"]
    assert f"{ck}/commits/6" not in store.files
    steps = json.loads(store.files[f"{ck}/sparkwax-steps.json"])
    assert steps["confs"]["spark.sql.shuffle.partitions"] == "6"
    assert steps["steps"]["s"]["state"] == "packed/1 buckets=24"
    assert '"numPartitions":6' in store.files[f"{ck}/state/0/_metadata/metadata"]
