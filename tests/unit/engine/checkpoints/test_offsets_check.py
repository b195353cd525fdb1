"""Offsets files that are valid JSON but that Spark cannot restart from
(sparkwax/engine/checkpoints/format/offsets.py, issue 32): a character changed inside a JSON
string of the conf map or of a source's offset. The Spark tests
(tests/spark/checkpoints/test_damaged_checkpoint.py) damage real checkpoints so."""

from __future__ import annotations

import json

import pytest

from sparkwax.engine.checkpoints.format.metadata_logs import parse_offsets
from sparkwax.engine.checkpoints.format.offsets import (GROUP_STATE_VERSION, metadata_problem, pinned_conf_problem,
                                    source_problem, value_has_group_state)

STATE = "org.apache.spark.sql.execution.streaming.state."
# the conf of an offsets file written by Spark 4 (sparkwax's local session)
CONF = {
    "spark.sql.streaming.stateStore.providerClass": STATE + "HDFSBackedStateStoreProvider",
    "spark.sql.dropDuplicates.deterministicKeyOrder.enabled": "true",
    "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion": "2",
    "spark.sql.streaming.stateStore.rocksdb.formatVersion": "5",
    "spark.sql.streaming.queryEvolution.enableSourceEvolution": "false",
    "spark.sql.streaming.stateStore.encodingFormat": "unsaferow",
    "spark.sql.streaming.statefulOperator.useStrictDistribution": "true",
    GROUP_STATE_VERSION: "2",
    "spark.sql.streaming.multipleWatermarkPolicy": "min",
    "spark.sql.streaming.stateStore.rowChecksum.enabled": "false",
    "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled": "true",
    "spark.sql.streaming.aggregation.stateFormatVersion": "2",
    "spark.sql.function.protobufExtensions.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.streaming.join.stateFormatVersion": "2",
    "spark.sql.streaming.stateStore.compression.codec": "lz4",
    "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan": "false",
}
METADATA = {"batchWatermarkMs": 0, "batchTimestampMs": 1795794053615, "conf": CONF}


def offsets_text(metadata=METADATA, offset='{"logOffset":1}') -> str:
    return "v1\n" + json.dumps(metadata, separators=(",", ":")) + "\n" + offset


def test_a_sound_offsets_file_passes():
    entry = parse_offsets(1, offsets_text())
    assert metadata_problem(entry.metadata) is None
    assert pinned_conf_problem(CONF, previous=("offsets/0", CONF), recorded={
        "spark.sql.shuffle.partitions": "2", "spark.sql.streaming.stateStore.providerClass": None},
        group_state=True) is None
    assert source_problem(entry.offsets, source_logs={0: 1},
                          previous=("offsets/0", ('{"logOffset":0}',))) is None
    for codec in ("LZ4", "zstd", "org.apache.spark.io.ZStdCompressionCodec", "com.acme.Codec"):
        assert metadata_problem({"conf": {**CONF, "spark.sql.streaming.stateStore."
                                                  "compression.codec": codec}}) is None
    assert metadata_problem({"conf": {**CONF, "spark.sql.streaming.stateStore.providerClass":
                                      "com.acme.MyProvider"}}) is None


def changed(name, value):
    return {**METADATA, "conf": {**CONF, name: value}}


@pytest.mark.parametrize("metadata, problem", [
    ([1], "not a JSON object"),
    ({**METADATA, "batchWatermarkMs": "0"}, "has batchWatermarkMs '0', not a time"),
    ({**METADATA, "batchTimestampMs": -5}, "has batchTimestampMs -5"),
    ({**METADATA, "conf": ["a"]}, "not a JSON object of settings"),
    ({**METADATA, "conf": {**CONF, "spark.sql.shuffle.partitionz\u00e9": "2"}},
     "not a Spark setting's name"),
    ({**METADATA, "conf": {**CONF, "spark.sql.shuffle.partitions": 2}}, "not a string"),
    (changed("spark.sql.shuffle.partitions", "2a"), "not a positive whole number"),
    (changed("spark.sql.shuffle.partitions", "0"), "not a positive whole number"),
    (changed("spark.sql.streaming.stateStore.providerClass",
             STATE + "HDFSBackedStateStoreProvidex"), "not a state store provider class"),
    (changed("spark.sql.streaming.stateStore.providerClass", STATE + "HDFS BackedStore"),
     "not a state store provider class"),
    (changed("spark.sql.streaming.stateStore.compression.codec", "lz5"), "not a codec"),
    (changed("spark.sql.streaming.multipleWatermarkPolicy", "mix"), "not min or max"),
    (changed(GROUP_STATE_VERSION, "3"), "not 1 or 2"),
    (changed("spark.sql.streaming.stateStore.encodingFormat", "unsafexow"),
     "not unsaferow or avro"),
    (changed("spark.sql.streaming.statefulOperator.useStrictDistribution", "trux"),
     "not true or false"),
    (changed("spark.sql.streaming.stateStore.rocksdb.formatVersion", "5x"), "not a whole number"),
])
def test_a_conf_value_spark_would_refuse_is_named(metadata, problem):
    found = metadata_problem(metadata)
    assert found is not None and problem in found, found


def test_a_conf_that_changed_between_batches_is_named():
    # the red team's case: 2 -> 1 is still a valid version, and Spark then
    # fails with STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE
    damaged = {**CONF, GROUP_STATE_VERSION: "1"}
    assert metadata_problem(changed(GROUP_STATE_VERSION, "1")) is None
    found = pinned_conf_problem(damaged, previous=("offsets/3", CONF))
    assert found.startswith(f"has conf {GROUP_STATE_VERSION} = '1' where offsets/3 has '2'")
    # with no older file left, the state's layout says which format it was written with
    found = pinned_conf_problem(damaged, group_state=True)
    assert "the step's state holds a groupState struct" in found
    assert "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE" in found
    assert pinned_conf_problem(damaged, group_state=False) is None
    assert "holds no groupState" in pinned_conf_problem(CONF, group_state=False)
    # the confs sparkwax recorded when the checkpoint started
    store = "spark.sql.streaming.stateStore.providerClass"
    found = pinned_conf_problem({**CONF, store: STATE + "RocksDBStateStoreProvider"},
                                recorded={store: STATE + "HDFSBackedStateStoreProvider"})
    assert "where the checkpoint was started with" in found and "sparkwax-steps.json" in found
    # a rescale changes the partitions from one batch to the next: not compared
    assert pinned_conf_problem({**CONF, "spark.sql.shuffle.partitions": "5"},
                               previous=("offsets/3", CONF),
                               recorded={"spark.sql.shuffle.partitions": "2"}) is None
    # a setting a newer Spark added is in the newer file only
    assert pinned_conf_problem({**CONF, "spark.sql.new.enabled": "true"},
                               previous=("offsets/3", CONF)) is None


@pytest.mark.parametrize("offsets, logs, previous, problem", [
    (['{"logOffset":7}'], {0: 1}, None, "but the file source's log sources/0 ends at entry 1"),
    (['{"logOffsex":1}'], {0: 1}, None, "source 0 is a file source (sources/0)"),
    (['{"logOffsex":1}'], {}, None, "a file source's offset is"),
    (['{"logOffset":"1"}'], {0: 1}, None, "N a whole number"),
    (['{"logOffset":-1}'], {}, None, "N a whole number"),
    (['{"logOffset":0}'], {0: 1}, ["{\"logOffset\":1}"], "before offsets/3's 1"),
    (['{"logOffset":1}', "5"], {0: 1}, ['{"logOffset":1}'], "2 source offsets where offsets/3"),
    (['{"logOffset":1'], {0: 1}, None, "which is not JSON"),
])
def test_a_damaged_source_offset_is_named(offsets, logs, previous, problem):
    found = source_problem(offsets, source_logs=logs,
                           previous=None if previous is None else ("offsets/3", previous))
    assert found is not None and problem in found, found


def test_other_sources_offsets_pass():
    assert source_problem(['{"topic":{"0":12,"1":4}}', "42", None]) is None


SCHEMA_V2 = (b'\x00\x02v2\x00\x00\x00\x01\x00Y{"type":"struct","fields":[{"name":"key","type":'
             b'"string","nullable":true,"metadata":{}}]}\x00\x00\x00\x01\x00\xf3{"type":"struct",'
             b'"fields":[{"name":"groupState","type":{"type":"struct","fields":[{"name":'
             b'"snapshot","type":"binary","nullable":true,"metadata":{}},{"name":"timer","type":'
             b'"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}')


def test_the_state_layout_from_a_schema_file():
    assert value_has_group_state(SCHEMA_V2) is True
    flat = SCHEMA_V2.replace(b'"groupState"', b'"snapshot2"')
    assert value_has_group_state(flat) is False
    assert value_has_group_state(SCHEMA_V2[:60]) is None
    assert value_has_group_state(None) is None
