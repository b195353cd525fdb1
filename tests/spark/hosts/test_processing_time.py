"""ProcessingTime: a timer fires in a no-data micro-batch, close to when it is due."""

import json
import time
from datetime import datetime, timedelta, timezone

import sparkwax as sw

DELAY = timedelta(seconds=2)
TOLERANCE = timedelta(seconds=4)


class Reminder(sw.StatefulLogic):
    """Arms a timer DELAY after the item arrived (wall clock); reports when it fired."""

    def __init__(self, resume=None):
        self.due = resume

    def on_item(self, value):
        self.due = datetime.now(timezone.utc) + DELAY
        return [], sw.RETAIN

    def notify_at(self):
        return self.due

    def on_notify(self):
        return [{"due": self.due, "fired": datetime.now(timezone.utc)}], sw.DISCARD

    def snapshot(self):
        return self.due


def test_timer_fires_in_a_no_data_batch(spark, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    (source / "one.json").write_text(json.dumps({"key": "k", "value": 1}) + "\n")
    rows, inputs = [], {}

    def sink(frame, batch_id):
        rows.extend((batch_id, r) for r in frame.collect())

    stream = spark.readStream.schema("key string, value long").json(str(source))
    out = sw.stateful(stream, key="key", builder=Reminder, time=sw.ProcessingTime(),
                      output_schema="due timestamp, fired timestamp")
    query = (out.writeStream.foreachBatch(sink).trigger(processingTime="200 milliseconds")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        deadline = time.monotonic() + 60
        while not rows and time.monotonic() < deadline:
            time.sleep(0.2)  # polling progress: processAllAvailable never returns here
        for progress in query.recentProgress:
            inputs[progress["batchId"]] = progress["numInputRows"]
    finally:
        query.stop()
    assert len(rows) == 1, f"timer did not fire within 60 s: {rows}"
    batch_id, row = rows[0]
    assert inputs.get(batch_id, 0) == 0, "the timer should fire in a batch without input"
    lag = row.fired - row.due  # both naive UTC (the session time zone)
    assert timedelta(0) <= lag <= TOLERANCE, f"fired {lag} after it was due"
