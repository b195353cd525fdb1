"""Spark's checkpoint logs read by hand-written files (sparkwax.engine.checkpoints.format.metadata_logs), and
the offline half of replay (sparkwax.testing.checkpoint_replay.replay_batches): no Spark.

The texts below are what Spark 4.3 writes (taken from a real checkpoint of
examples/recovery_app.py, conf shortened)."""

from __future__ import annotations

import json
from datetime import timedelta, timezone

import pytest

import sparkwax as sw
from sparkwax.engine.checkpoints.format.metadata_logs import (PlannedBatch, describe_source, file_offset, log_number,
                               normal_path, orphaned_entries, parse_commit, parse_offsets,
                               plan_batches, planned_offsets, sink_units, source_files)
from sparkwax.errors import ConfigError
from sparkwax.step import Step
from sparkwax.testing import Batch, Tick, run
from sparkwax.testing.reference import Accumulator, Counter
from sparkwax.testing.checkpoint_replay import compare_unit, emit_row, normal, replay_batches

from kit import T0

CONF = {"spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.multipleWatermarkPolicy": "min"}


def offsets_text(watermark: int, log_offset, timestamp: int = 1795509326004) -> str:
    metadata = {"batchWatermarkMs": watermark, "batchTimestampMs": timestamp, "conf": CONF}
    source = "-" if log_offset is None else json.dumps({"logOffset": log_offset})
    return f"v1\n{json.dumps(metadata)}\n{source}"


def source_text(entries) -> str:
    return "v1\n" + "\n".join(
        json.dumps({"path": f"file:///data/in/{name}", "timestamp": 1600000000000 + n,
                    "batchId": batch}) for name, n, batch in entries)


def sink_text(names) -> str:
    return "v1\n" + "\n".join(
        json.dumps({"path": f"file:///data/out/{name}", "size": 900, "isDir": False,
                    "modificationTime": 1795509327000, "blockReplication": 1,
                    "blockSize": 33554432, "action": "add"}) for name in names)


def test_an_offsets_file():
    entry = parse_offsets(3, offsets_text(1704068659000, 3), "ck/offsets/3")
    assert (entry.batch_id, entry.watermark_ms, entry.timestamp_ms) == (3, 1704068659000,
                                                                       1795509326004)
    assert entry.offsets == ('{"logOffset": 3}',) and file_offset(entry.offsets[0]) == 3
    assert entry.metadata["conf"] == CONF and entry.version == "v1"
    assert parse_offsets(0, offsets_text(0, None)).offsets == (None,)


def test_a_commit_file():
    assert parse_commit('v1\n{"nextBatchWatermarkMs":1704068659000}') == 1704068659000
    assert parse_commit("v1\n{}") == 0


@pytest.mark.parametrize("text", ["", "garbage", "v1\n{not json", '{"logOffset":1}'])
def test_a_damaged_log_file_is_a_config_error_naming_it(text):
    with pytest.raises(ConfigError, match="ck/offsets/7"):
        parse_offsets(7, text, "ck/offsets/7")


def test_log_file_names():
    assert [log_number(n) for n in ["0", "12", "19.compact", ".12.crc", "12.tmp",
                                    ".5.b3c1.tmp", "_x"]] == \
        [(0, False), (12, False), (19, True), None, None, None, None]


def test_kinds_of_sources_are_told_apart():
    assert file_offset('{"logOffset":4}') == 4
    assert file_offset("12") is None and file_offset('{"events":{"0":5}}') is None
    assert "Kafka" in describe_source('{"events":{"0":5,"1":7}}')
    assert "events" in describe_source('{"events":{"0":5,"1":7}}')
    assert "rate or socket" in describe_source("12")
    assert "file source" in describe_source('{"logOffset":4}')


def test_paths_compare_in_one_spelling():
    assert normal_path("file:///data/in/a%20b.json") == normal_path("file:/data/in/a b.json") \
        == normal_path("/data/in/a b.json") == "file:/data/in/a b.json"
    assert normal_path("hdfs://nn:8020/in/x.json") == "hdfs://nn:8020/in/x.json"


def test_a_compact_source_log_gives_each_entry_its_files():
    logs = {(8, False): source_text([("part-008.json", 8, 8)]),
            (9, True): source_text([(f"part-{n:03d}.json", n, n) for n in range(10)]),
            (10, False): source_text([("part-010.json", 10, 10), ("part-011.json", 11, 10)])}
    files = source_files(logs)
    assert sorted(files) == list(range(11))
    assert files[8] == [("file:///data/in/part-008.json", 1600000000008)]  # not twice
    assert [p for p, _ in files[10]] == ["file:///data/in/part-010.json",
                                         "file:///data/in/part-011.json"]


def _checkpoint(log_offsets, committed, watermarks=None):
    watermarks = watermarks or [0] * len(log_offsets)
    offsets = {n: parse_offsets(n, offsets_text(w, o)) for n, (o, w) in
               enumerate(zip(log_offsets, watermarks))}
    files = source_files({(n, False): source_text([(f"part-{n:03d}.json", n, n)])
                          for n in range(max(log_offsets) + 1)})
    return offsets, set(committed), files


def test_batches_are_the_log_ranges_between_offsets():
    # batches 0-3 one file each, batch 4 two files (log 4 and 5: a restart after the
    # source had logged entry 4), batch 5 a no-data batch, batch 6 planned, not committed
    offsets, commits, files = _checkpoint([0, 1, 2, 3, 5, 5, 6], range(6),
                                          [0, 10, 20, 30, 40, 50, 60])
    batches = plan_batches(offsets, commits, files, checkpoint="ck")
    assert [b.log_range for b in batches] == [(-1, 0), (0, 1), (1, 2), (2, 3), (3, 5),
                                              (5, 5), (5, 6)]
    assert batches[4].files == ("file:///data/in/part-004.json",
                                "file:///data/in/part-005.json")
    assert batches[4].log_entries == (4, 5)
    assert [b.has_data for b in batches] == [True] * 5 + [False, True]
    assert [b.committed for b in batches] == [True] * 6 + [False]
    assert [b.watermark_ms for b in batches] == [0, 10, 20, 30, 40, 50, 60]


def test_purged_offsets_are_a_config_error_naming_the_retention_setting():
    offsets, commits, files = _checkpoint([0, 1, 2], range(3))
    del offsets[0]
    with pytest.raises(ConfigError, match="minBatchesToRetain"):
        plan_batches(offsets, commits, files, checkpoint="ck")


def test_a_missing_source_log_entry_is_a_config_error():
    offsets, commits, files = _checkpoint([0, 1, 2], range(3))
    del files[1]
    with pytest.raises(ConfigError, match="log entry 1"):
        plan_batches(offsets, commits, files, checkpoint="ck")


@pytest.mark.parametrize("offset, named", [
    ('{"events":{"0":5}}', "Kafka source (topics events)"),
    ("17", "counter offset"),
    ('{"0":{"value":3}}', "offset"),
])
def test_other_sources_are_a_config_error_naming_the_source_and_what_works(offset, named):
    text = f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{{}}}}\n{offset}'
    offsets = {0: parse_offsets(0, text)}
    with pytest.raises(ConfigError) as caught:
        plan_batches(offsets, {0}, {}, checkpoint="/data/ck")
    message = str(caught.value)
    assert named in message and "file source only" in message and "/data/ck" in message
    assert "Kafka" in message and "rate" in message


def test_two_sources_are_a_config_error():
    text = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"logOffset":0}\n{"logOffset":0}'
    with pytest.raises(ConfigError, match="2 sources"):
        plan_batches({0: parse_offsets(0, text)}, {0}, {})


def test_sink_files_per_batch_and_groups_a_compaction_left_without_logs():
    # Spark keeps the plain logs since the previous compaction: after 19.compact, 10-18
    # and 20-21 remain, 0-9 (9.compact included) are gone
    logs = {(n, False): sink_text([f"b{n}.parquet"]) for n in range(10, 19)}
    logs[(19, True)] = sink_text([f"b{n}.parquet" for n in range(20)])
    logs[(20, False)] = sink_text(["b20.parquet", "b20-2.parquet"])
    logs[(21, False)] = sink_text([])
    units = sink_units(logs)
    assert [ids for ids, _ in units] == [(*range(10), 19), *[(n,) for n in range(10, 19)],
                                         (20,), (21,)]
    by_ids = dict(units)
    assert by_ids[(12,)] == ["file:///data/out/b12.parquet"]
    assert by_ids[(*range(10), 19)] == [f"file:///data/out/b{n}.parquet"
                                        for n in [*range(10), 19]]
    assert by_ids[(20,)] == ["file:///data/out/b20.parquet", "file:///data/out/b20-2.parquet"]
    assert by_ids[(21,)] == []
    # a young checkpoint: 0-8 and 9.compact all there
    logs = {(n, False): sink_text([f"b{n}.parquet"]) for n in range(9)}
    logs[(9, True)] = sink_text([f"b{n}.parquet" for n in range(10)])
    assert sink_units(logs)[-1] == ((9,), ["file:///data/out/b9.parquet"])


def test_orphaned_source_entries_and_the_offsets_spark_would_have_written():
    offsets, commits, _ = _checkpoint([0, 1, 2, 3, 4], range(5))
    assert orphaned_entries(offsets, commits, range(5)) is None          # logs agree
    assert orphaned_entries(offsets, commits, range(6)) == (5, 5, 5)     # entry 5 orphaned
    assert orphaned_entries(offsets, set(range(4)), range(6)) is None    # batch 4 reruns
    assert orphaned_entries({}, set(), [0]) == (0, 0, 0)
    text = planned_offsets(offsets[4], 1704069586000, 5, 1795509999999)
    entry = parse_offsets(5, text)
    assert (entry.watermark_ms, entry.timestamp_ms, file_offset(entry.offsets[0])) == \
        (1704069586000, 1795509999999, 5)
    assert entry.metadata["conf"] == CONF and text.startswith("v1\n")


def test_emits_become_rows_by_the_spark_hosts_rules():
    fields = [("kind", "string"), ("a", "long"), ("at", "timestamp")]
    paris = T0.astimezone(timezone(timedelta(hours=1)))
    assert emit_row(("item", 3, paris), fields) == ("item", 3, T0)
    assert emit_row({"at": T0, "kind": "x", "a": 1}, fields) == ("x", 1, T0)
    assert emit_row(7, [("n", "long")]) == (7,)
    assert normal(1.5, "decimal(10,2)") == normal(__import__("decimal").Decimal("1.50"),
                                                  "decimal(10,2)")
    assert normal({"k": 1}, {"type": "map", "keyType": "string", "valueType": "long",
                             "valueContainsNull": True}) == (("k", 1),)


def test_compare_per_key_as_multisets_never_by_global_order():
    same = compare_unit((3,), {"a": [(1,), (2,)], "b": [(5,)]},
                        [("b", (5,)), ("a", (2,)), ("a", (1,))])
    assert same.equal and (same.offline_rows, same.sink_rows) == (3, 3)
    other = compare_unit((3,), {"a": [(1,), (1,)], "b": [(5,)]}, [("a", (1,)), ("c", (9,))])
    assert [(d.key, d.only_offline, d.only_sink) for d in other.differences] == [
        ("a", [(1,)], []), ("b", [(5,)], []), ("c", [], [(9,)])]


def _planned(number, items_or_none, watermark=0, timestamp=0, previous=None):
    start = number - 1 if previous is None else previous
    end = start + 1 if items_or_none is not None else start
    files = (f"part-{number}.json",) if items_or_none is not None else ()
    return PlannedBatch(number, watermark, timestamp, (start, end), files, True)


EVENT = sw.EventTime("ts", watermark="2 minutes")


def _script():
    def at(seconds, key, value):
        return key, {"ts": T0 + timedelta(seconds=seconds), "value": value}
    return [[at(0, "a", 1), at(10, "b", 2)], [at(200, "a", 3)], None, [at(400, "b", 7)]]


def test_replaying_the_batches_spark_ran_matches_the_runner_on_them():
    batches = _script()
    offline = run(Accumulator, [Batch(b) if b is not None else Tick() for b in batches],
                  time=EVENT)
    fields = [("kind", "string"), ("a", "long"), ("b", "long")]
    # Spark's watermarks: max event time of earlier batches minus 2 minutes
    base = int(T0.timestamp() * 1000)
    marks = [0, base + 10_000 - 120_000, base + 200_000 - 120_000, base + 200_000 - 120_000]
    planned, previous = [], -1
    for number, items in enumerate(batches):
        planned.append((_planned(number, items, marks[number], previous=previous),
                        items or [], 1 if items else 0))
        previous = planned[-1][0].log_range[1]
    step = Step.of(Accumulator, time=EVENT)
    alone = replay_batches(step, planned, fields, 1, None)  # what the sink would hold
    sink = {b.batch_id: [(k, *emit_row(v, fields)) for k, v in b.outputs] for b in alone.batches}
    result = replay_batches(step, planned, fields, 1, [((n,), rows) for n, rows in sink.items()])
    assert result.equal, result.report()
    assert [o for b in result.batches for o in b.outputs] == offline.outputs
    assert not result.watermark_mismatches and result.first_difference is None
    assert "equal: every replayed batch matches the sink" in result.report()

    # a sink that lost a row of batch 1 and has a changed one: named, batch and key
    broken = {n: list(rows) for n, rows in sink.items()}
    dropped = broken[1].pop()
    broken[3] = [(k, "changed", *rest) for k, _, *rest in broken[3]]
    result = replay_batches(step, planned, fields, 1, [((n,), r) for n, r in broken.items()])
    assert not result.equal
    comparison, difference = result.first_difference
    assert comparison.batch_ids == (1,) and difference.key == dropped[0]
    assert difference.only_offline == [tuple(dropped[1:])] and difference.only_sink == []
    report = result.report()
    assert f"first difference: batch 1, key {dropped[0]!r}" in report
    assert "DIFFERENT" in report


def test_a_watermark_that_differs_from_spark_is_reported():
    batches = _script()
    planned, previous = [], -1
    for number, items in enumerate(batches):
        planned.append((_planned(number, items, 12345 if number == 2 else 0,
                                 previous=previous), items or [], 1))
        previous = planned[-1][0].log_range[1]
    result = replay_batches(Step.of(Accumulator, time=EVENT), planned,
                            [("kind", "string"), ("a", "long"), ("b", "long")], 1, None)
    assert [b.batch_id for b in result.watermark_mismatches] == [1, 2, 3]
    assert not result.equal
    assert "batch 2: Spark's watermark" in result.report()


def test_processing_time_now_is_the_batch_timestamp():
    stamps = [1_704_067_200_000, 1_704_067_260_000]
    planned = [(_planned(n, [("a", n)], timestamp=stamps[n]), [("a", n)], 1) for n in range(2)]
    result = replay_batches(Step.of(Counter), planned, [("n", "long")], 1, None)
    assert [b.outputs for b in result.batches] == [[("a", 1)], [("a", 2)]]
    assert all(b.offline_watermark_ms is None for b in result.batches)
    assert "not compared (no sink given)" in result.report()


class Fails(Counter):
    def on_item(self, value):
        if value == 2:
            raise ValueError("two")
        return super().on_item(value)


def test_a_logic_that_raises_offline_ends_the_replay_at_that_batch():
    planned = [(_planned(n, [("a", n)]), [("a", n)], 1) for n in range(4)]
    sink = [((n,), [("a", n + 1)]) for n in range(4)]
    result = replay_batches(Step.of(Fails), planned, [("n", "long")], 1, sink)
    batch_id, raised = result.error
    assert batch_id == 2 and raised.key == "a" and "two" in str(raised)
    assert [b.batch_id for b in result.batches] == [0, 1]
    assert not result.equal and not result.sink_only_batches
    assert "batch 2: the logic raised offline (CallbackError)" in result.report()
