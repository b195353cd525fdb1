"""Processing-time timers that came due while a query was stopped fire at the
first trigger of its restart, with no new input (docs/semantics.md,
"ProcessingTime"): ProcessingTime and two-clock steps, both hosts.

Each test runs a first micro-batch that sets a timer a few seconds ahead,
stops the query, waits until the timer is overdue, and restarts it on the
same checkpoint with a one-hour trigger and a quiet source: Spark by itself
runs no micro-batch there until input comes (a restarted query has no
previous batch to ask for another), so without sparkwax's wake-up batch
nothing fires for an hour.
"""

import json
import os
import time
from datetime import datetime, timedelta, timezone

import pytest

import sparkwax as sw

from kit import commits, each_spark_host

AHEAD = timedelta(seconds=3)   # the timer, after the first batch's input was written
HOUR = {"processingTime": "1 hour"}  # one trigger at start, then none for an hour


class DueAt(sw.StatefulLogic):
    """A timer at the item's ``due`` (wall clock); reports it once fired."""

    def __init__(self, resume=None):
        self.due = resume

    def on_item(self, value):
        self.due = value["due"]
        return [], sw.RETAIN

    def notify_at(self):
        return self.due

    def on_notify(self):
        return [{"kind": "timer"}], sw.DISCARD

    def snapshot(self):
        return self.due


class DeadlineAt(DueAt):
    """The same time as a processing deadline of an event-time step."""

    def notify_at(self):
        return None

    def processing_notify_at(self):
        return self.due

    def on_processing_notify(self):
        return [{"kind": "deadline"}], sw.DISCARD


CASES = {"processing": (DueAt, sw.ProcessingTime()),
         "two-clock": (DeadlineAt, sw.EventTime("ts", watermark="1 minute"))}


def _run(spark, tmp_path, builder, time_mode, host, rows, stop_when):
    stream = spark.readStream.schema("key string, ts timestamp, due timestamp") \
        .json(str(tmp_path / "in"))
    out = sw.stateful(stream, key="key", builder=builder, time=time_mode, host=host,
                      output_schema="kind string")
    query = sw.start(out, checkpoint=str(tmp_path / "ck"), trigger=HOUR,
                     foreach_batch=lambda frame, batch: rows.extend(
                         (batch, tuple(r)) for r in frame.collect()))
    try:
        give_up = time.monotonic() + 120  # ends a hung test only
        while not stop_when() and time.monotonic() < give_up:
            assert query.exception() is None, query.exception()
            time.sleep(0.1)
        ran = []
        while not ran and time.monotonic() < give_up:  # the report follows the sink
            ran = [(p["batchId"], p["numInputRows"]) for p in query.recentProgress
                   if "addBatch" in p["durationMs"]]
            time.sleep(0.1)
        return ran
    finally:
        query.stop()


@each_spark_host
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_overdue_timer_fires_at_the_first_trigger_of_a_quiet_restart(
        spark, tmp_path, host, case):
    builder, time_mode = CASES[case]
    (tmp_path / "in").mkdir()
    due = datetime.now(timezone.utc) + AHEAD
    (tmp_path / "in" / "one.json").write_text(json.dumps(
        {"key": "k", "ts": "2024-01-01T00:00:00Z", "due": due.isoformat()}) + "\n")
    rows = []
    _run(spark, tmp_path, builder, time_mode, host, rows,
         stop_when=lambda: commits(tmp_path / "ck") >= 1)
    assert rows == [], "the timer fired before the stop: the test would prove nothing"
    time.sleep(max(0.0, (due - datetime.now(timezone.utc)).total_seconds()) + 0.5)

    batches = _run(spark, tmp_path, builder, time_mode, host, rows, stop_when=lambda: rows)
    expected = "timer" if case == "processing" else "deadline"
    assert rows == [(1, ("k", expected))], rows
    assert batches[0] == (1, 0), f"fired in {batches[0]}, not a batch without input"


def _waiting_files_run(spark, tmp_path, between=lambda checkpoint: None):
    """File a, an availableNow run, ``between(checkpoint)``, files b c d, an
    availableNow run: the keys the state then holds (each file's key)."""
    source, checkpoint = tmp_path / "in", tmp_path / "ck"
    source.mkdir()
    later = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat()

    def write(key):
        (source / f"{key}.json").write_text(json.dumps(
            {"key": key, "ts": "2024-01-01T00:00:00Z", "due": later}) + "\n")

    def run_available_now():
        stream = spark.readStream.schema("key string, ts timestamp, due timestamp") \
            .option("maxFilesPerTrigger", 1).json(str(source))
        out = sw.stateful(stream, key="key", builder=DueAt, time=sw.ProcessingTime(),
                          output_schema="kind string")
        sw.start(out, checkpoint=str(checkpoint), trigger={"availableNow": True},
                 path=str(tmp_path / "out")).awaitTermination()

    write("a")
    run_available_now()
    between(checkpoint)
    for key in "bcd":
        write(key)
    run_available_now()  # the batch from the offset log first, then one file per batch
    return {row["key"] for row in sw.read_state(spark, str(checkpoint)).collect()}


def test_available_now_after_a_restart_reads_every_waiting_file(spark, tmp_path):
    """The wake-up batch reads nothing and Spark runs it without looking for
    input: it is no sign of being caught up, so availableNow (and
    processAllAvailable) still take every file waiting at the restart."""
    assert _waiting_files_run(spark, tmp_path) == set("abcd")


def test_available_now_after_a_kill_reads_every_waiting_file(spark, tmp_path):
    """A kill between the offset log and the commit leaves a batch planned:
    the restart runs it first, from the log, without looking for input. It
    is no sign of being caught up either: availableNow takes every file."""
    def killed_before_the_commit(checkpoint):
        last = max(int(name) for name in os.listdir(checkpoint / "commits") if name.isdigit())
        for name in (str(last), f".{last}.crc"):  # as a kill -9 before the commit leaves it
            (checkpoint / "commits" / name).unlink(missing_ok=True)

    assert _waiting_files_run(spark, tmp_path, killed_before_the_commit) == set("abcd")
