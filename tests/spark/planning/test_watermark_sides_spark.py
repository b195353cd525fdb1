"""A watermark per input: ``connect`` and ``join`` with one side far ahead in
event time drop nothing that Spark's min-watermark policy keeps, streaming
and bounded, and agree with the offline runner.

Readings at 0-4 minutes and a maintenance event at 10 minutes, delay 1
minute: one watermark over the union would be 9 minutes after the first
micro-batch and drop every later reading; per side it is min(0, 9) = 0.
"""

from __future__ import annotations

import json
import os

import pytest

import sparkwax as sw
import sparkwax.operators as ops
from sparkwax.testing import Batch, run, run_bounded

from kit import T0, at as t

TIME = sw.EventTime("ts", watermark="1 minute")
SIDES = ["readings", "maintenance"]
READINGS = "machine string, ts timestamp, seq long, celsius double"
MAINTENANCE = "machine string, ts timestamp, seq long, crew string"


class SideLog(sw.StatefulLogic):
    """Emits every item it sees: (side, minute)."""

    def __init__(self, resume=None):
        pass

    def on_item(self, item):
        side, value = item
        return [(side, int((value["ts"] - T0).total_seconds() // 60))], sw.RETAIN

    def snapshot(self):
        return None


FIRST = {"readings": [("m1", 0, 1, 20.0), ("m1", 1, 2, 21.0)],
         "maintenance": [("m1", 10, 3, "ann")]}
SECOND = {"readings": [("m1", 2, 4, 22.0), ("m1", 3, 5, 23.0), ("m1", 4, 6, 24.0)]}


def offline_script():
    def values(side, rows):
        field = "celsius" if side == "readings" else "crew"
        return ops.tag(side, [(m, {"ts": t(at), "seq": seq, field: x}) for m, at, seq, x in rows])

    return [Batch([i for s in SIDES for i in values(s, FIRST[s])]),
            Batch(values("readings", SECOND["readings"]))]


def _write(folder, number, rows):
    staging = folder.parent / f"{folder.name}-{number}.tmp"
    lines = []
    for machine, at, seq, extra in rows:
        field = "celsius" if isinstance(extra, float) else "crew"
        lines.append(json.dumps({"machine": machine, "ts": t(at).isoformat(), "seq": seq,
                                 field: extra}))
    staging.write_text("\n".join(lines) + "\n")
    os.replace(staging, folder / f"part-{number}.json")


def _streams(spark, tmp_path):
    folders = {name: tmp_path / name for name in SIDES}
    for folder in folders.values():
        folder.mkdir()
    for side in SIDES:
        _write(folders[side], 0, FIRST[side])
    readings = spark.readStream.schema(READINGS).json(str(folders["readings"]))
    maintenance = spark.readStream.schema(MAINTENANCE).json(str(folders["maintenance"]))
    return folders, readings, maintenance


def _run_two_batches(frame, folders, checkpoint):
    rows = []
    query = (frame.writeStream.foreachBatch(lambda batch, _: rows.extend(batch.collect()))
             .option("checkpointLocation", str(checkpoint)).start())
    try:
        query.processAllAvailable()
        _write(folders["readings"], 1, SECOND["readings"])
        query.processAllAvailable()
    finally:
        query.stop()
    return rows


def test_streaming_connect_keeps_the_slow_sides_rows(spark, tmp_path):
    folders, readings, maintenance = _streams(spark, tmp_path)
    frame = sw.connect(readings, maintenance, key="machine", builder=SideLog, names=SIDES,
                        time=TIME, output_schema="side string, minute long")
    rows = _run_two_batches(frame, folders, tmp_path / "checkpoint")
    got = sorted((r.side, r.minute) for r in rows)
    offline = run(SideLog, offline_script(), time=TIME, sides=SIDES)
    assert offline.late == 0
    assert got == sorted(offline.by_key["m1"])
    assert got == [("maintenance", 10)] + [("readings", m) for m in range(5)]


def test_streaming_join_keeps_the_slow_sides_rows(spark, tmp_path):
    folders, readings, maintenance = _streams(spark, tmp_path)
    joined = sw.join(readings, maintenance, key="machine", names=SIDES, time=TIME,
                      insert_mode="last", emit_mode="running")
    rows = _run_two_batches(joined, folders, tmp_path / "checkpoint")
    minutes = sorted(r.readings.seq for r in rows if r.readings is not None)
    # one running emit per reading (and the maintenance event's own emit)
    assert len(rows) == 6
    assert set(minutes) == {1, 2, 4, 5, 6}


def test_bounded_connect_keeps_a_watermark_per_side(spark):
    def frame_of(rows, schema):
        return spark.createDataFrame([(m, t(at), seq, x) for m, at, seq, x in rows], schema)

    readings = frame_of(FIRST["readings"] + SECOND["readings"], READINGS)
    maintenance = frame_of(FIRST["maintenance"], MAINTENANCE)
    # order by arrival (seq): the maintenance event (seq 3) comes before later readings
    frame = sw.connect(readings, maintenance, key="machine", builder=SideLog, names=SIDES,
                        time=TIME, order_by="seq", output_schema="side string, minute long")
    got = [(r.side, r.minute) for r in frame.collect()]
    items = [i for step in offline_script() for i in step.items]
    offline = run_bounded(SideLog, items, time=TIME, order_by="seq", sides=SIDES)
    assert offline.late == 0
    assert got == offline.by_key["m1"]
    assert len(got) == 6


def test_connect_needs_a_timestamp_event_column_on_every_side(spark):
    readings = spark.createDataFrame([("m1", t(0), 1, 20.0)], READINGS)
    texts = spark.createDataFrame([("m1", "2024-01-01", 2, "ann")],
                                  "machine string, ts string, seq long, crew string")
    with pytest.raises(sw.ConfigError, match="side 'maintenance'.*'ts' must be a timestamp"):
        sw.connect(readings, texts, key="machine", builder=SideLog, names=SIDES, time=TIME,
                    output_schema="side string, minute long")
