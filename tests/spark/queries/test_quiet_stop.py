"""A graceful stop is quiet: an app with two queries (a Parquet file sink and
a foreachBatch sink) stopped by SIGTERM or Ctrl-C after it has processed
data prints sparkwax's lines and no ERROR line, no Java stack trace, exits 0,
and both sinks hold every committed micro-batch's output, equal to the
offline runner's for the batches Spark ran (nothing lost, nothing twice).

Spark's ``stop()`` interrupts a batch in flight: its file sink logged
``ERROR FileFormatWriter: Aborting job``, a broadcast ``ERROR TorrentBroadcast:
Store broadcast ... fail``, and a foreachBatch function cut short a
``java.lang.StackOverflowError`` from the stream thread
(``sparkwax.engine.queries.stopping``). The app runs in its own process group: SIGINT
goes to the group as a terminal's Ctrl-C does (PySpark's JVM ignores it),
SIGTERM to the Python process only, as ``kill PID`` does."""

import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from sparkwax.testing import Runner
from sparkwax.testing.reference import Accumulator

from kit import REPO, batches_spark_ran, commits as _commits, stop_group
from test_kill_recovery import TIME, _make_input

NAMES = ("files", "batches")

APP = textwrap.dedent("""
    import sys
    import sparkwax as sw
    from sparkwax.testing.reference import Accumulator

    source, out = sys.argv[1], sys.argv[2]
    spark = sw.local_session("local[2]", shuffle_partitions=2)

    def steps(name):
        stream = spark.readStream.schema("key string, ts timestamp, value long") \\
            .option("maxFilesPerTrigger", 1).json(source)
        return sw.stateful(stream, key="key", builder=Accumulator,
                           output_schema="kind string, a long, b long",
                           time=sw.EventTime("ts", watermark="2 minutes"), step_id=name)

    def write_batch(frame, batch_id):  # idempotent: a batch run again overwrites its folder
        frame.write.mode("overwrite").parquet(f"{out}/batches/batch={batch_id}")

    trigger = {"processingTime": "200 milliseconds"}
    queries = [
        sw.start(steps("files"), checkpoint=f"{out}/ck-files", path=f"{out}/files",
                 trigger=trigger, progress=True, query_name="files"),
        sw.start(steps("batches"), checkpoint=f"{out}/ck-batches", trigger=trigger,
                 foreach_batch=write_batch, progress=True, query_name="batches"),
    ]
    for query in queries:
        query.awaitTermination()
    print("done", flush=True)
""")

TRACE = re.compile(r"^\tat |^Caused by|Exception|Error:|Traceback|StackOverflow")


def _start(tmp: Path, text: str = APP) -> subprocess.Popen:
    """Run ``text`` as an app reading ``tmp/in`` and writing ``tmp/run``, in its own group."""
    app = tmp / "app.py"
    app.write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    return subprocess.Popen([sys.executable, str(app), str(tmp / "in"), str(tmp / "run")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)


def _wait_for_commits(tmp: Path, process, count: int) -> None:
    deadline = time.monotonic() + 300
    while min(_commits(tmp / "run" / f"ck-{name}") for name in NAMES) < count:
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the app made no progress"
        time.sleep(0.05)


def _outputs(spark, tmp: Path, name: str, committed: int) -> Counter:
    if name == "files":  # Spark's file sink: its own log says which files count
        rows = spark.read.parquet(str(tmp / "run" / "files")).collect()
    else:  # foreachBatch: one folder per batch, those committed count
        rows = [row for row in spark.read.parquet(str(tmp / "run" / "batches")).collect()
                if row["batch"] < committed]
    return Counter(tuple(row[column] for column in ("key", "kind", "a", "b")) for row in rows)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM to python", "SIGINT to the group"])
def test_a_graceful_stop_of_two_queries_prints_no_error_and_loses_nothing(spark, tmp_path, how):
    files = _make_input(tmp_path / "in", random.Random(how))
    process = _start(tmp_path)
    try:
        _wait_for_commits(tmp_path, process, 2)
        if how.startswith("SIGINT"):
            os.killpg(process.pid, signal.SIGINT)  # a terminal's Ctrl-C
        else:
            process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=180)
    finally:
        stop_group(process)  # what the test started, by its own id (its group)
    name = how.split()[0]
    assert process.returncode == 0, err[-3000:]
    assert "done" in out
    noisy = [line for line in err.splitlines() if " ERROR " in line or TRACE.search(line)]
    assert noisy == [], "\n".join(noisy[:20]) + "\n---\n" + err[-4000:]
    lines = err.splitlines()
    assert lines.count(f"sparkwax: {name}: stopping after the current micro-batch "
                       "(again to stop at once)") == 1, err[-3000:]
    for query in NAMES:
        stopped = [line for line in lines if f"stopped query {query!r}" in line]
        assert len(stopped) == 1, err[-3000:]
        checkpoint = tmp_path / "run" / f"ck-{query}"
        committed = _commits(checkpoint)
        assert f"(last batch {committed - 1})" in stopped[0]
        assert committed < len(files), "stopped before the input was consumed"
        ran = batches_spark_ran(checkpoint, files)
        assert len(ran) == committed, "a batch was planned but not run: the stop cut it"
        # every batch Spark ran, no-data ones included: no trailing one added
        offline = Runner(Accumulator, time=TIME, no_data_batches=False).run(ran)
        assert _outputs(spark, tmp_path, query, committed) == Counter(
            (key, *value) for key, value in offline.outputs), query


SLOW_LISTENER_APP = textwrap.dedent("""
    import sys, time
    import sparkwax as sw
    from sparkwax.engine.queries import listening
    from sparkwax.testing.reference import Accumulator

    original = listening.Listening.terminated
    def slow_terminated(self, query_id):  # Spark's bus thread still in our callback
        original(self, query_id)
        time.sleep(2)
    listening.Listening.terminated = slow_terminated

    source, out = sys.argv[1], sys.argv[2]
    spark = sw.local_session("local[2]", shuffle_partitions=2)
    stream = spark.readStream.schema("key string, ts timestamp, value long").json(source)
    step = sw.stateful(stream, key="key", builder=Accumulator,
                       output_schema="kind string, a long, b long",
                       time=sw.EventTime("ts", watermark="2 minutes"), step_id="s")
    query = sw.start(step, checkpoint=f"{out}/ck", path=f"{out}/o",
                     trigger={"availableNow": True}, progress=True)
    query.awaitTermination()
    print("done", flush=True)
""")


@pytest.mark.slow
def test_the_program_ends_after_the_listener_bus_has_delivered_its_last_event(tmp_path):
    """The query's end event wakes ``awaitTermination`` from inside the
    listener's callback; the program must not end while Spark's bus thread is
    still in that py4j call (it logged ``ERROR StreamingQueryListenerBus:
    Listener PythonStreamingQueryListenerWrapper threw an exception``: the
    race a two-query stop met in CI, made certain here by a slow callback)."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "1.json").write_text(
        '{"key": "a", "ts": "2024-01-01T00:00:00Z", "value": 1}\n')
    process = _start(tmp_path, SLOW_LISTENER_APP)
    try:
        out, err = process.communicate(timeout=300)
    finally:
        stop_group(process)
    assert process.returncode == 0, err[-3000:]
    assert "done" in out
    noisy = [line for line in err.splitlines() if " ERROR " in line or TRACE.search(line)]
    assert noisy == [], err[-3000:]
