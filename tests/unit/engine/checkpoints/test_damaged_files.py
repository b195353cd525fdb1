"""The pure checks behind the named checkpoint failures (sparkwax/engine/checkpoints/format/files.py):
what a cut or garbled steps file, log entry or state file looks like. The
Spark tests (tests/spark/checkpoints/test_damaged_checkpoint.py) damage real checkpoints."""

from __future__ import annotations

import io
import json
import struct
import zipfile

import pytest

from sparkwax.engine.checkpoints.format.files import (key_fields_of_schema_file, load_chains, log_problem,
                                       lz4_framing_problem, metadata_problem, records_problem,
                                       short_path, state_file_name, state_message,
                                       step_of_operator, steps_problem, ways_out, zip_problem)

GOOD_STEPS = json.dumps({"confs": {"spark.sql.shuffle.partitions": "2"},
                         "steps": {"counts": {"step_id": "counts", "key": "key string"}}})


@pytest.mark.parametrize("text, problem", [
    ("", "is empty"),
    ("  \n", "is empty"),
    (GOOD_STEPS[:len(GOOD_STEPS) // 2], "is not JSON"),
    ("\x00\x01garbage", "is not JSON"),
    ("[1, 2]", "not an object"),
    ('{"steps": [1]}', "'steps' is not an object"),
    ('{"steps": {"counts": {"key": "k string"}}}', "'steps' is not an object"),
    ('{"steps": {}, "confs": 3}', "'confs' is not an object"),
])
def test_a_damaged_steps_file_is_named(text, problem):
    assert problem in steps_problem(text)


def test_a_sound_steps_file_passes():
    assert steps_problem(GOOD_STEPS) is None
    assert steps_problem('{"steps": {}}') is None


COMMIT = b'v1\n{"nextBatchWatermarkMs":0}'
OFFSETS = (b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{"a":"b"}}\n'
           b'{"logOffset":3}\n-\n42')


@pytest.mark.parametrize("data", [COMMIT, OFFSETS, COMMIT + b"\n"])
def test_sound_log_files_pass(data):
    assert log_problem(data) is None


@pytest.mark.parametrize("data, problem", [
    (None, "is missing"),
    (b"", "is empty"),
    (COMMIT[:12], "line 2 is not valid JSON"),
    (OFFSETS[:60], "line 2 is not valid JSON"),
    (b"v1\n", "nothing after its version line"),
    (b"v1\n{\"a\xff\xfe\":1}", "not UTF-8"),
    (b"x1\n{}", "not a version"),
])
def test_damaged_log_files_are_named(data, problem):
    assert problem in log_problem(data)


def test_the_query_metadata_file():
    assert metadata_problem(b'{"id":"1981528a"}') is None
    assert metadata_problem(None) is None
    assert "not valid JSON" in metadata_problem(b'{"id":"19')


def test_state_file_names():
    assert state_file_name("4.delta") == (4, "delta")
    assert state_file_name("10.snapshot") == (10, "snapshot")
    assert state_file_name("3.zip") == (3, "zip")
    assert state_file_name("3_1f0c-aa.changelog") == (3, "changelog")  # checkpoint format v2
    for name in ("_metadata", "SSTs", "4.delta.crc", ".4.delta.crc", "schema"):
        assert state_file_name(name) is None


def test_load_chains_newest_snapshot_first_then_the_fallbacks():
    files = {(v, "delta"): 1 for v in range(1, 6)}
    files.update({(2, "snapshot"): 1, (4, "snapshot"): 1, (6, "snapshot"): 1})
    assert load_chains(files, 5) == [
        [(4, "snapshot"), (5, "delta")],
        [(2, "snapshot"), (3, "delta"), (4, "delta"), (5, "delta")],
        [(v, "delta") for v in range(1, 6)],
    ]
    rocks = {(1, "changelog"): 1, (2, "changelog"): 1, (2, "zip"): 1}
    assert load_chains(rocks, 2)[0] == [(2, "zip")]


def _lz4_stream(payload: bytes, blocks: int = 2) -> bytes:
    """lz4-java's block format with RAW blocks (method 0x10), then the end mark."""
    out, size = b"", max(1, len(payload) // blocks)
    for start in range(0, len(payload), size):
        chunk = payload[start:start + size]
        out += b"LZ4Block" + bytes([0x15]) + struct.pack("<iii", len(chunk), len(chunk), 7) + chunk
    return out + b"LZ4Block" + bytes([0x15]) + struct.pack("<iii", 0, 0, 0)


def _records(*pairs) -> bytes:
    out = b""
    for key, value in pairs:
        out += struct.pack(">i", len(key)) + key
        out += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    return out + struct.pack(">i", -1)


def test_lz4_framing():
    stream = _lz4_stream(b"x" * 100)
    assert lz4_framing_problem(stream) is None
    assert "no end mark" in lz4_framing_problem(stream[:-21])
    assert "cut short inside a block" in lz4_framing_problem(stream[:40])
    assert "cut short inside a block header" in lz4_framing_problem(stream[:-5])
    garbled = stream[:3] + b"?" + stream[4:]
    assert "no LZ4 block starts at byte 0" in lz4_framing_problem(garbled)
    assert "after its end mark" in lz4_framing_problem(stream + b"\0")


def test_state_records():
    data = _records((b"k1" * 12, b"v" * 40), (b"k2" * 12, None), (b"k3", b""))
    assert records_problem(data, "delta") is None
    assert records_problem(data, "changelog") is None
    assert "without the end marker" in records_problem(data[:-4], "snapshot")
    assert "no value" in records_problem(data[:30], "delta")
    assert "claims a" in records_problem(b"\x7f\0\0\0" + data, "delta")
    assert "bytes follow its end marker" in records_problem(data + b"\0", "delta")
    # a changelog of a newer layout: only a missing end marker counts
    assert records_problem(b"\x7f\0\0\0abc\xff\xff\xff\xff", "changelog") is None
    assert records_problem(b"\x7f\0\0\0abc", "changelog") is not None


def _zip(metadata: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("CURRENT", "MANIFEST-000014\n" * 50)
        archive.writestr("metadata", metadata)
    return buffer.getvalue()


def test_rocksdb_zips():
    metadata = (b'v1\n{"sstFiles":[{"localFileName":"000018.sst","dfsSstFileName":'
                b'"000018-0f4d.sst","sizeBytes":1265}],"numKeys":3}')
    data = _zip(metadata)
    assert zip_problem(data) == (None, [("000018-0f4d.sst", 1265)])
    assert "not a readable zip" in zip_problem(data[:len(data) // 2])[0]
    flipped = bytearray(data)
    flipped[60:64] = b"\xff\xff\xff\xff"  # inside the first member's compressed bytes
    assert zip_problem(bytes(flipped))[0] is not None
    assert "'metadata' member" in zip_problem(_zip(b'v1\n{"sstFiles":['))[0]


def test_schema_files_and_steps_of_operators():
    schema = (b'\0\x02v2\0\0\0Y{"type":"struct","fields":[{"name":"user","type":"string",'
              b'"nullable":true,"metadata":{}}]}\0\0\0\x90{"type":"struct","fields":[]}')
    assert key_fields_of_schema_file(schema) == ["user"]
    assert key_fields_of_schema_file(b"garbage") is None
    steps = {"a": {"step_id": "a", "key": "user string", "state": "per_key/1"},
             "b": {"step_id": "b", "key": "user string, day struct<y:int,m:int>",
                   "state": "per_key/1"},
             "c": {"step_id": "c", "key": "card string", "state": "packed/1 buckets=8"}}
    assert step_of_operator(steps, ["user"]) == "a"
    assert step_of_operator(steps, ["user", "day"]) == "b"
    assert step_of_operator(steps, ["__sw_bucket"]) == "c"
    assert step_of_operator(steps, ["nope"]) is None
    assert step_of_operator({"only": steps["a"]}, None) == "only"


def test_messages_name_the_file_and_the_ways_out():
    assert short_path("/data/ck", "file:/data/ck/commits/3") == "commits/3"
    assert short_path("s3a://b/ck/", "s3a://b/ck/state/0/1/4.delta") == "state/0/1/4.delta"
    message = state_message("/data/ck", "counts", 0, ["file:/data/ck/state/0/1/4.delta"],
                            {"file:/data/ck/state/0/1/4.delta": "is cut short"},
                            "java.io.EOFException: Stream ended prematurely")
    assert message.startswith("step 'counts': Spark cannot load its state from checkpoint "
                              "/data/ck: state/0/1/4.delta is cut short")
    assert ways_out("/data/ck") in message
    assert "sparkwax state clear /data/ck" in message and "restore the folder" in message


def test_a_state_failure_without_a_damaged_file_says_so():
    message = state_message("/data/ck", None, 2, [], {}, "[CANNOT_LOAD_STATE_STORE.X] boom")
    assert message.startswith("stateful operator 2: Spark cannot load its state")
    assert "no damaged file" in message and "another query running" in message
    assert "If the checkpoint is damaged after all: two ways out:" in message
