"""Moving from applyInPandasWithState (docs/porting.md): Spark's own
sessionization example, written in its style (``hasTimedOut``, a state tuple,
``setTimeoutTimestamp``) and run by Spark, against its sparkwax port on both
hosts and offline, on the same micro-batches.

The original-style function follows the logic of Spark's example
``structured_network_wordcount_session_window.py`` (a session per key: count,
first and last time; a timeout closes it and emits one row), with an
event-time timeout in place of its processing-time one so that the runs are
deterministic. Spark runs it in two schedules: ``continuous`` (one query; after
each input file ``processAllAvailable``, which lets Spark's no-data batch fire
timeouts) and ``once`` (a new trigger-once query per file: no no-data batch
between two files).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

import sparkwax as sw
from sparkwax.testing import Batch, run
from sparkwax.engine.planning.following import start_confs
from sparkwax.testing.spark import run_script_on_spark

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/
from docs_blocks import offline_namespace  # noqa: E402
from kit import skip_unless_steps_follow  # noqa: E402

UTC = timezone.utc
T0 = datetime(2024, 1, 1, 12, tzinfo=UTC)
GAP = timedelta(seconds=10)
DELAY = "5 seconds"
INPUT = "session string, ts timestamp"
OUTPUT = "count long, start timestamp, `end` timestamp"


def at(seconds):
    return {"ts": T0 + timedelta(seconds=seconds)}


# -- the original style: applyInPandasWithState ---------------------------------------


def _ms(stamp) -> int:
    return int(pd.Timestamp(stamp).value // 1_000_000)  # the session runs in UTC


def spark_sessions(key, frames, state):
    """A session per key, Spark's example's logic with an event-time timeout."""
    if state.hasTimedOut:
        count, start, end = state.get
        state.remove()
        yield pd.DataFrame({"session": [key[0]], "count": [count], "start": [start],
                            "end": [end]})
        return
    times = pd.concat(list(frames))["ts"]
    count, start, end = len(times), times.min(), times.max()
    if state.exists:
        stored_count, start, stored_end = state.get      # the first start is kept
        count, end = count + stored_count, max(end, pd.Timestamp(stored_end))
    state.update((count, start, end))
    state.setTimeoutTimestamp(_ms(end) + int(GAP.total_seconds() * 1000))
    yield pd.DataFrame({"session": [], "count": [], "start": [], "end": []})


def original(stream):
    from pyspark.sql.streaming.state import GroupStateTimeout

    return stream.withWatermark("ts", DELAY).groupBy("session").applyInPandasWithState(
        spark_sessions, outputStructType="session string, " + OUTPUT,
        stateStructType=OUTPUT, outputMode="append",
        timeoutConf=GroupStateTimeout.EventTimeTimeout)


# -- the port: docs/porting.md's own classes and data ----------------------------------

DOC = offline_namespace("porting.md")   # runs the page's offline blocks (asserts included)


def ported(builder, host):
    def attach(stream):
        return sw.stateful(stream, key="session", builder=builder, output_schema=OUTPUT,
                           time=sw.EventTime("ts", watermark=DELAY), host=host)
    return attach


# -- one harness for both ---------------------------------------------------------------


def play(spark, attach, batches, folder, schedule):
    """Per key, the rows ``attach(stream)`` wrote when ``batches`` (one input file
    each) ran in ``schedule``: "continuous" or "once" (see the module's doc)."""
    source, checkpoint = os.path.join(folder, "in"), os.path.join(folder, "ck")
    os.makedirs(source)
    rows = []

    def collect(frame, _batch_id):
        rows.extend(tuple(row) for row in frame.collect())

    def start(**trigger):
        stream = spark.readStream.schema(INPUT).option("maxFilesPerTrigger", 1).json(source)
        frame = attach(stream)
        writer = frame.writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint)
        with start_confs(frame):  # a seeded step: as sw.start starts it
            return (writer.trigger(**trigger) if trigger else writer).start()

    query = start() if schedule == "continuous" else None
    for number, batch in enumerate(batches):
        path = os.path.join(source, f"{number:03d}.json")
        with open(path + ".tmp", "w") as handle:
            for key, event in batch:
                handle.write(json.dumps({"session": key, "ts": event["ts"].isoformat()}) + "\n")
        os.utime(path + ".tmp", (1_600_000_000 + number,) * 2)
        os.replace(path + ".tmp", path)
        if query is not None:
            query.processAllAvailable()
        else:
            once = start(once=True)
            once.awaitTermination()
    if query is not None:
        query.stop()
    by_key = {}
    for key, count, begin, end in rows:
        by_key.setdefault(key, []).append((count, _utc(begin), _utc(end)))
    return by_key


def _utc(stamp):
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp


def offline(builder, batches):
    result = run(builder, [Batch(batch) for batch in batches],
                 time=sw.EventTime("ts", watermark=DELAY))
    return {key: list(rows) for key, rows in result.by_key.items()}


def session(count, first, last):
    return (count, at(first)["ts"], at(last)["ts"])


def batches_of(script):
    # the page's last two batches move the watermark past every session's timeout
    # as data batches (a trigger-once query runs no no-data batch)
    return [step.items for step in script]


# -- where the semantics agree: equal per key ---------------------------------------------

AGREED = {"a": [session(4, 0, 40)],
          "b": [session(1, 1, 1), session(2, 30, 37)],
          "c": [session(2, 20, 24), session(1, 50, 50)]}


def test_sessions_equal_per_key_when_spark_fires_timeouts_between_batches(spark, tmp_path):
    batches = batches_of(DOC["script"])
    by_spark = play(spark, original, batches, str(tmp_path / "original"), "continuous")
    assert {k: v for k, v in by_spark.items() if k != "z"} == AGREED
    assert offline(DOC["SparkStyleSession"], batches) == by_spark
    for host in ("per_key", "packed"):
        by_port = play(spark, ported(DOC["SparkStyleSession"], host), batches,
                       str(tmp_path / host), "continuous")
        assert by_port == by_spark, host


def test_spark_fires_a_timeout_once_the_watermark_is_past_it(spark, tmp_path):
    tie = batches_of(DOC["tie"])          # the watermark lands on a's timeout (10 s)
    by_spark = play(spark, original, tie, str(tmp_path / "original"), "continuous")
    assert by_spark["a"] == [session(2, 0, 11)]
    by_port = play(spark, ported(DOC["ExactSession"], "per_key"), tie,
                   str(tmp_path / "port"), "continuous")
    assert by_port["a"] == [session(2, 0, 11)]
    assert offline(DOC["SparkStyleSession"], tie)["a"] == [session(1, 0, 0), session(1, 11, 11)]


# -- where they differ: rows arrive when a's timeout passed but has not fired -------------
# batches: a at 0 s; b at 20 s (the watermark becomes 15 s, past a's timeout at
# 10 s); a at 16 s; then the two batches far ahead

SPLIT = [session(1, 0, 0), session(1, 16, 16)]


def test_spark_continues_the_session_only_when_no_batch_ran_in_between(spark, tmp_path):
    race = batches_of(DOC["race"])
    once = play(spark, original, race, str(tmp_path / "once"), "once")
    assert once["a"] == [session(2, 0, 16)]          # data first: a's timeout never seen
    between = play(spark, original, race, str(tmp_path / "continuous"), "continuous")
    assert between["a"] == SPLIT                      # a no-data batch fired it in between


@pytest.mark.parametrize("host", ["per_key", "packed"])
def test_sparkwax_fires_the_timeout_first_in_every_schedule(spark, tmp_path, host):
    race = batches_of(DOC["race"])
    for schedule in ("once", "continuous"):
        by_port = play(spark, ported(DOC["SparkStyleSession"], host), race,
                       str(tmp_path / schedule), schedule)
        assert by_port["a"] == SPLIT, schedule
    assert offline(DOC["SparkStyleSession"], race)["a"] == SPLIT


def test_a_grace_period_continues_the_session_in_every_schedule(spark, tmp_path):
    race = batches_of(DOC["race"])
    for schedule in ("once", "continuous"):
        by_port = play(spark, ported(DOC["LenientSession"], "per_key"), race,
                       str(tmp_path / schedule), schedule)
        assert by_port["a"] == [session(2, 0, 16)], schedule
    assert offline(DOC["LenientSession"], race)["a"] == [session(2, 0, 16)]


# -- Flink's FraudDetector, checked per element ---------------------------------------------


def test_fraud_detector_on_spark(spark, tmp_path):
    txs = DOC["transactions"]()[:400]
    account_of = {tx["id"]: account for account, tx in txs}
    expected = {}
    for alert in DOC["flink_alerts"](txs):
        expected.setdefault(account_of[alert], []).append((alert,))
    assert sum(len(ids) for ids in expected.values()) >= 5     # enough alerts to compare
    script = [Batch(txs[start:start + 100]) for start in range(0, 400, 100)]
    result = run_script_on_spark(
        spark, DOC["FraudDetector"], script, input_schema="key string, id long, "
        "ts timestamp, amount double", output_schema="id long",
        time=sw.EventTime("ts", watermark="0 seconds"), workdir=str(tmp_path))
    assert {k: sorted(v) for k, v in result.by_key.items()} == expected


# -- the cut-over: a running original job's open sessions carried into the port --------------


@pytest.mark.lines
def test_the_original_stops_mid_session_and_the_port_continues_from_its_state(spark, tmp_path):
    """The original runs the first two batches and stops with sessions open;
    Spark's state reader gives its state, which seeds the port (``seed=``);
    the port runs the rest of the stream. Every session closes once, with
    the totals of the original run over the whole stream."""
    skip_unless_steps_follow(spark)  # seed= needs transformWithStateInPandas (4.0+)
    batches = batches_of(DOC["script"])
    whole = play(spark, original, batches, str(tmp_path / "whole"), "continuous")
    before = play(spark, original, batches[:2], str(tmp_path / "before"), "continuous")
    state = spark.read.format("statestore").load(str(tmp_path / "before" / "ck"))
    open_sessions = {row["key"]["session"]: (row["value"]["groupState"]["count"],
                                             _utc(row["value"]["groupState"]["start"]),
                                             _utc(row["value"]["groupState"]["end"]))
                     for row in state.collect()}
    assert open_sessions == {"a": session(3, 0, 8), "c": session(1, 20, 20)}  # mid-session
    seed = sw.seed_frame(spark, open_sessions, "session string")
    for host in ("per_key", "packed"):
        def seeded(stream, host=host):
            return sw.stateful(stream, key="session", builder=DOC["ExactSession"],
                               output_schema=OUTPUT, time=sw.EventTime("ts", watermark=DELAY),
                               host=host, seed=seed)
        after = play(spark, seeded, batches[2:], str(tmp_path / f"after-{host}"), "continuous")
        closed = {key: before.get(key, []) + after.get(key, [])
                  for key in set(before) | set(after)}
        assert closed == whole, host
    offline_after = run(DOC["ExactSession"], [Batch(batch) for batch in batches[2:]],
                        time=sw.EventTime("ts", watermark=DELAY), seed=open_sessions)
    assert {k: list(v) for k, v in offline_after.by_key.items()} == after


@pytest.mark.lines
def test_on_transform_with_state_a_timer_fires_when_the_watermark_reaches_it(spark, tmp_path):
    """The tie (the watermark lands exactly on a's timer) on the host a
    seeded or following step runs on: its timers fire as the per-key host's
    timeouts do, so the port keeps sparkwax's rule (due once reached)."""
    skip_unless_steps_follow(spark)  # seed= needs transformWithStateInPandas (4.0+)
    empty = sw.seed_frame(spark, {}, "session string")
    tie = batches_of(DOC["tie"])
    for host in ("per_key", "packed"):
        def seeded(stream, host=host):
            return sw.stateful(stream, key="session", builder=DOC["SparkStyleSession"],
                               output_schema=OUTPUT, time=sw.EventTime("ts", watermark=DELAY),
                               host=host, seed=empty)
        by_port = play(spark, seeded, tie, str(tmp_path / host), "continuous")
        assert by_port == offline(DOC["SparkStyleSession"], tie), host
        assert by_port["a"] == [session(1, 0, 0), session(1, 11, 11)]
