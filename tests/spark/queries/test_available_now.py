"""Queries of steps that ask Spark for a micro-batch at every trigger end
when asked (docs/guide.md "availableNow and processAllAvailable"): a
``ProcessingTime`` step with timers and a step with both timer kinds, both
hosts. ``availableNow`` stops by itself after the first micro-batch that read
nothing and found nothing more (the timers the input made due fired in it);
``processAllAvailable()`` returns with the query running; the timers not due
stay in state for the next run. Outputs equal the offline runner's per key."""

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest

import sparkwax as sw
from sparkwax.engine.spark_version import has_statestore_reader
from sparkwax.testing import Batch, Tick, run
from sparkwax.testing.reference import IdleAlarm
from sparkwax.testing.spark import run_script_on_spark

import kit
from kit import IN_TIER, NOON as T0, each_spark_host, per_key

pytestmark = pytest.mark.lines  # the tier run on every Spark line (docs/testing.md)

HOUR_MS = 3_600_000
LIMIT = 180.0  # seconds: only ends a hung test (never a speed assertion)


class Reminder(sw.StatefulLogic):
    """Counts a key's values; each arms a timer ``after_ms`` of processing
    time later (0: due at once); the timer emits the count and DISCARDs."""

    def __init__(self, resume=None):
        self.count, self.due = resume or (0, None)

    def on_item(self, value):
        self.count += 1
        self.due = sw.processing_now() + timedelta(milliseconds=value["after_ms"])
        return [], sw.RETAIN

    def notify_at(self):
        return self.due

    def on_notify(self):
        return [("fired", self.count)], sw.DISCARD

    def snapshot(self):
        return self.count, self.due


REMINDERS = [("now", {"after_ms": 0}), ("now", {"after_ms": 0}), ("later", {"after_ms": HOUR_MS}),
             ("also", {"after_ms": 0})]
TWO_CLOCKS = [("a", {"ts": T0, "idle_ms": HOUR_MS, "alarm_discard": False}),
              ("b", {"ts": T0 + timedelta(minutes=3), "idle_ms": None, "alarm_discard": False}),
              ("b", {"ts": T0 + timedelta(minutes=25), "idle_ms": None,
                     "alarm_discard": False})]


MORE = [("b", {"ts": T0 + timedelta(minutes=30), "idle_ms": None, "alarm_discard": False}),
        ("c", {"ts": T0 + timedelta(minutes=50), "idle_ms": None, "alarm_discard": False})]
EXPECTED_AFTER_MORE = {"a": [("window", 1)], "b": [("window", 1), ("window", 2)]}


def _write(folder, name, items):
    folder.mkdir(exist_ok=True)
    staging = folder.parent / f".{name}"
    staging.write_text("".join(json.dumps({"key": k, **v}, default=str) + "\n" for k, v in items))
    os.replace(staging, folder / name)


def _stream(spark, source, kind, host):
    if kind == "processing":
        frame = spark.readStream.schema("key string, after_ms long").json(str(source))
        return sw.stateful(frame, key="key", builder=Reminder, time=sw.ProcessingTime(),
                           output_schema="kind string, n long", step_id="remind", host=host)
    frame = spark.readStream.schema("key string, ts timestamp, idle_ms long, "
                                    "alarm_discard boolean").json(str(source))
    return sw.stateful(frame, key="key", builder=IdleAlarm, time=sw.EventTime("ts"),
                       output_schema="kind string, n long", step_id="alarm", host=host)


def _offline(kind):
    """The offline run: the data batch, then the no-data batch after it."""
    if kind == "processing":
        script = [Batch(REMINDERS, now=T0), Tick(now=T0 + timedelta(seconds=1))]
        return run(Reminder, script, time=sw.ProcessingTime(), step_id="remind")
    script = [Batch(TWO_CLOCKS, now=T0), Tick(now=T0 + timedelta(seconds=1))]
    return run(IdleAlarm, script, time=sw.EventTime("ts"), step_id="alarm")


def _by_key(spark, path):
    rows = spark.read.parquet(str(path)).collect()
    found = {}
    for row in sorted(rows, key=lambda r: (r["key"], r["n"])):
        found.setdefault(row["key"], []).append((row["kind"], row["n"]))
    return found


@each_spark_host
@pytest.mark.parametrize("kind", ["processing", "two_clocks"])
def test_available_now_stops_with_the_due_timers_fired(spark, tmp_path, kind, host):
    expected = _offline(kind)
    if kind == "processing":
        assert expected.by_key == {"now": [("fired", 2)], "also": [("fired", 1)]}
        pending = "later"
    else:  # the windows closed by the last watermark; a's hour-long alarm waits
        assert expected.by_key == {"a": [("window", 1)], "b": [("window", 2)]}
        pending = "a"
    assert expected.timers.get(pending) or expected.deadlines.get(pending)
    _write(tmp_path / "in", "one.json", REMINDERS if kind == "processing" else TWO_CLOCKS)
    out, ck = tmp_path / "out", str(tmp_path / "ck")
    query = sw.start(_stream(spark, tmp_path / "in", kind, host), checkpoint=ck,
                     path=str(out), trigger={"availableNow": True})
    try:
        assert query.awaitTermination(LIMIT), "availableNow did not stop"
    finally:
        query.stop()
    assert query.exception() is None
    assert _by_key(spark, out) == expected.by_key
    rows = [p["numInputRows"] for p in sorted(query.recentProgress, key=lambda p: p["batchId"])]
    assert rows[0] > 0 and rows[1] == 0, rows   # the data, then the batch that fired the timers
    # the timer not yet due stays in state for the next run
    if not has_statestore_reader(spark):  # 3.5: the named refusal (docs/deploy.md)
        with pytest.raises(sw.ConfigError, match=r"needs Spark 4\.0 or newer"):
            sw.read_state(spark, ck)
        return
    state = {r["key"]: r for r in sw.read_state(spark, ck).collect()}
    assert set(state) == set(expected.snapshots)
    assert state[pending]["error"] is None
    assert (state[pending]["timer"] or state[pending]["deadline"]) is not None


@each_spark_host
def test_process_all_available_returns_and_the_query_goes_on(spark, tmp_path, host):
    source, out = tmp_path / "in", tmp_path / "out"
    _write(source, "one.json", TWO_CLOCKS)
    query = sw.start(_stream(spark, source, "two_clocks", host), checkpoint=str(tmp_path / "ck"),
                     path=str(out), trigger={"processingTime": "500 milliseconds"})
    try:
        query.processAllAvailable()
        assert query.isActive
        assert _by_key(spark, out) == _offline("two_clocks").by_key
        # more input: processAllAvailable waits for it and for the no-data batch
        # after it (b's new window is closed by c's event time)
        _write(source, "two.json", MORE)
        query.processAllAvailable()
        assert query.isActive
        assert _by_key(spark, out) == EXPECTED_AFTER_MORE
    finally:
        query.stop()


APP = '''
import sys
import sparkwax as sw
from test_available_now import Reminder

source, checkpoint, out = sys.argv[1:4]
spark = sw.local_session("local[2]", shuffle_partitions=2)
frame = spark.readStream.schema("key string, after_ms long").json(source)
stream = sw.stateful(frame, key="key", builder=Reminder, time=sw.ProcessingTime(),
                     output_schema="kind string, n long", step_id="remind")
sw.start(stream, checkpoint=checkpoint, path=out).awaitTermination()  # no trigger: 1 s
print("done")
'''


@pytest.mark.lines(pool="submit")  # the tier: one spark-submit test per line (tests/tier.py)
def test_submit_once_ends_an_app_with_processing_timers(spark, tmp_path):
    """The app asks for no trigger (a ProcessingTime step gets a 1 s trigger
    and would run forever); ``sparkwax submit --once`` makes it availableNow."""
    _write(tmp_path / "in", "one.json", REMINDERS)
    app = tmp_path / "app.py"
    app.write_text(APP)
    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(  # this module and the kit it imports
        [here, os.path.dirname(os.path.abspath(kit.__file__)), os.environ.get("PYTHONPATH", "")])}
    sparkwax_cli = os.path.join(os.path.dirname(sys.executable), "sparkwax")
    done = subprocess.run(
        [sparkwax_cli, "submit", str(app), "--once", str(tmp_path / "in"), str(tmp_path / "ck"),
         str(tmp_path / "out"), "--", "--master", "local[2]"],
        env=env, capture_output=True, text=True, timeout=LIMIT * 2, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "done" in done.stdout
    assert _by_key(spark, tmp_path / "out") == _offline("processing").by_key


@pytest.mark.skipif(IN_TIER, reason="the harness reads progress as sw.start does (tested there)")
def test_the_spark_harness_ends_a_script_with_processing_timers(spark, tmp_path):
    """``run_script_on_spark`` drains a query that asks for a micro-batch at
    every trigger as ``sw.start``'s query does (Spark's own
    ``processAllAvailable`` would never return)."""
    online = run_script_on_spark(spark, Reminder, [Batch(REMINDERS)],
                                 input_schema="key string, after_ms long",
                                 output_schema="kind string, n long",
                                 time=sw.ProcessingTime(), step_id="remind",
                                 workdir=str(tmp_path))
    assert per_key(online) == per_key(_offline("processing"))
