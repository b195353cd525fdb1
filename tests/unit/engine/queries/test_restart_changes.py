"""sw.start's restart check (docs/guide.md, "Restarting with changes"): each
refused and each allowed change, on the step record it keeps in
<checkpoint>/sparkwax-steps.json. An in-memory store stands for Spark's file
system; the records have the shape plan.py gives them."""

import json

import pytest

from sparkwax.engine.checkpoints.format.files import STEPS_FILE
from sparkwax.engine.deploy.session_confs import STATE_STORES
from sparkwax.engine.checkpoints.step_changes import STORE_CONF, describe_changes
from sparkwax.engine.queries.start import check_checkpoint
from sparkwax.errors import ConfigError

CK = "/data/ck"


class MemoryStore:
    """The part of sparkwax's storage that check_checkpoint uses."""

    def __init__(self):
        self.files = {}

    def read_bytes(self, path):
        text = self.files.get(path)
        return None if text is None else text.encode()

    def read_text(self, path):
        return self.files.get(path)

    def write_text(self, path, text):
        self.files[path] = text

    def exists(self, path):
        return any(name == path or name.startswith(path + "/") for name in self.files)

    def list(self, path):
        return []


def step(**changes):
    record = {"step_id": "s", "key": "user string", "output": "n bigint",
              "time": "event", "event_time": "ts - 120000 ms", "timers": True,
              "state": "per_key/1"}
    record.update(changes)
    return record


def confs(**changes):
    values = {"spark.sql.shuffle.partitions": "2", STORE_CONF: None}
    values.update(changes)
    return values


def restart(first, second, first_confs=None, second_confs=None):
    """Start on an empty checkpoint with ``first``, then restart with ``second``."""
    store = MemoryStore()
    check_checkpoint(store, CK, first, first_confs or confs())
    check_checkpoint(store, CK, second, second_confs or confs())
    return json.loads(store.files[f"{CK}/{STEPS_FILE}"])


REFUSED = [
    ("a step added", [step()], [step(), step(step_id="t")], "step 't' was added"),
    ("a step removed", [step(), step(step_id="t")], [step()], "step 't' was removed"),
    ("the key", [step()], [step(key="user string, day date")], "key changed"),
    ("the key's type", [step()], [step(key="user bigint")], "key changed"),
    ("the output schema", [step()], [step(output="n bigint, m bigint")], "output changed"),
    ("the time mode", [step()], [step(time="processing", event_time=None)], "time changed"),
    ("the event-time column", [step()], [step(event_time="at - 120000 ms")],
     "event-time column changed from 'ts' to 'at'"),
    ("timers on or off", [step()], [step(timers=False)], "timers changed"),
    ("the host", [step()], [step(state="packed/1 buckets=8")], "state changed"),
    ("the bucket count", [step(state="packed/1 buckets=8")],
     [step(state="packed/1 buckets=16")], "state changed"),
    ("ttl on or off", [step()], [step(state="per_key/1 ttl")], "state changed"),
]


@pytest.mark.parametrize("what, first, second, message", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_restart_that_cannot_resume_is_refused(what, first, second, message):
    with pytest.raises(ConfigError, match="was written by a different query") as caught:
        restart(first, second)
    assert message in str(caught.value)


@pytest.mark.parametrize("first, second", [
    (confs(), confs(**{"spark.sql.shuffle.partitions": "4"})),
    (confs(), confs(**{STORE_CONF: STATE_STORES["rocksdb"]})),
    (confs(**{STORE_CONF: STATE_STORES["rocksdb"]}), confs()),
], ids=["shuffle partitions", "hdfs to rocksdb", "rocksdb to default"])
def test_a_frozen_conf_change_is_refused(first, second):
    with pytest.raises(ConfigError, match="Spark would keep the checkpoint's value"):
        restart([step()], [step()], first, second)


def test_a_changed_partition_count_points_to_rescale():
    with pytest.raises(ConfigError, match=r"sparkwax state rescale CHECKPOINT --partitions 4"):
        restart([step()], [step()], confs(), confs(**{"spark.sql.shuffle.partitions": "4"}))
    with pytest.raises(ConfigError) as caught:
        restart([step()], [step()], confs(), confs(**{STORE_CONF: STATE_STORES["rocksdb"]}))
    assert "rescale" not in str(caught.value)


def test_the_sink_is_recorded_and_a_new_one_allowed():
    store = MemoryStore()
    check_checkpoint(store, CK, [step()], confs(), {"format": "parquet", "path": "/out"})
    check_checkpoint(store, CK, [step()], confs(), {"format": "parquet", "path": "/out2"})
    assert json.loads(store.files[f"{CK}/{STEPS_FILE}"])["sink"]["path"] == "/out2"


def test_a_changed_watermark_delay_is_allowed_and_recorded():
    recorded = restart([step()], [step(event_time="ts - 5000 ms")])
    assert recorded["steps"]["s"]["event_time"] == "ts - 5000 ms"  # replay uses the new one


@pytest.mark.parametrize("first, second", [
    (confs(), confs(**{STORE_CONF: STATE_STORES["hdfs"]})),
    (confs(**{STORE_CONF: STATE_STORES["hdfs"]}), confs()),
], ids=["default then hdfs", "hdfs then default"])
def test_the_default_state_store_and_hdfs_are_the_same(first, second):
    restart([step()], [step()], first, second)  # no ConfigError


def test_the_same_query_restarts_and_its_record_stays():
    store = MemoryStore()
    check_checkpoint(store, CK, [step()], confs())
    before = store.files[f"{CK}/{STEPS_FILE}"]
    check_checkpoint(store, CK, [step()], confs())
    assert store.files[f"{CK}/{STEPS_FILE}"] == before


def test_several_changes_are_named_together():
    changes = describe_changes({"steps": {"s": step()}, "confs": confs()},
                               {"steps": {"s": step(output="m bigint", timers=False)},
                                "confs": confs(**{"spark.sql.shuffle.partitions": "3"})})
    assert len(changes) == 3
