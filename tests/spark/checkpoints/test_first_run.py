"""A first run stopped during start-up can be started again, and Ctrl-C there is quiet.

Spark 4 refuses to start a query with no batch in its offset log unless
``offsets/``, ``commits/`` and ``state/`` are empty, hidden files included
(``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``); a first run killed while
Spark wrote ``offsets/0`` (to ``offsets/.0.<uuid>.tmp``) left that file and
every later start failed. ``sw.start`` clears it
(``sparkwax.engine.checkpoints.first_run``). Ctrl-C inside ``writer.start()``
ran PySpark's handler inside py4j (``ERROR:root:KeyboardInterrupt while
sending command.`` and its tracebacks); ``sw.start`` holds the signal and
stops the query once started (``sparkwax.engine.queries.start_guard``).

The apps run in their own process group, as in tests/spark/queries/test_quiet_stop.py:
SIGINT goes to the group as a terminal's Ctrl-C does, SIGKILL to the group
kills the driver and its JVM."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import sparkwax as sw
from sparkwax.testing.reference import Accumulator

from kit import REPO, commits, stop_group

FILES = 3
MARK = "entering writer.start"
NOT_EMPTY = "STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY"
CLEARED = "a first run stopped before Spark logged its first micro-batch"

APP = textwrap.dedent(f"""
    import sys
    from pyspark.sql.streaming.readwriter import DataStreamWriter
    import sparkwax as sw
    from sparkwax.testing.reference import Accumulator

    original = DataStreamWriter.start
    def start(self, *args, **kwargs):  # tells the test when Spark's start begins
        print({MARK!r}, flush=True)
        return original(self, *args, **kwargs)
    DataStreamWriter.start = start

    source, out = sys.argv[1], sys.argv[2]
    spark = sw.local_session("local[2]", shuffle_partitions=2)
    stream = spark.readStream.schema("key string, ts timestamp, value long") \\
        .option("maxFilesPerTrigger", 1).json(source)
    step = sw.stateful(stream, key="key", builder=Accumulator,
                       output_schema="kind string, a long, b long",
                       time=sw.EventTime("ts", watermark="2 minutes"), step_id="s")
    query = sw.start(step, checkpoint=f"{{out}}/ck", path=f"{{out}}/o",
                     trigger={{"availableNow": True}})
    query.awaitTermination()
    print("done", flush=True)
""")


def _input(folder: Path) -> None:
    """``FILES`` one-row JSON files, oldest first."""
    folder.mkdir()
    for number in range(FILES):
        path = folder / f"part-{number}.json"
        path.write_text(json.dumps({"key": "a", "ts": f"2024-01-01T00:0{number}:00Z",
                                    "value": number}) + "\n")
        os.utime(path, (1_600_000_000 + number,) * 2)


def _launch(tmp: Path, run: str) -> subprocess.Popen:
    """The app on ``tmp/in`` and ``tmp/out``, in its own group; stderr to ``tmp/<run>.err``."""
    app = tmp / "app.py"
    app.write_text(APP)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    with open(tmp / f"{run}.err", "w") as err:
        return subprocess.Popen([sys.executable, str(app), str(tmp / "in"), str(tmp / "out")],
                                stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True, env=env)


def _wait_for_mark(process: subprocess.Popen) -> None:
    for line in process.stdout:
        if line.strip() == MARK:
            return
    raise AssertionError("the app ended before starting its query")


def _offsets_written(offsets: Path, process: subprocess.Popen) -> None:
    """Wait until Spark writes ``offsets/0`` (its hidden temporary file first)."""
    deadline = time.monotonic() + 300
    while not (offsets.is_dir() and os.listdir(offsets)):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.001)


def _kill(process: subprocess.Popen, how: int = signal.SIGKILL, timeout: float = 120) -> int:
    """Send ``how`` to the app's group; its exit code."""
    try:
        os.killpg(process.pid, how)
        process.wait(timeout=timeout)
    finally:
        stop_group(process)  # what the test started, by its own id (its group)
    return process.returncode


def _plain_run(tmp: Path, run: str) -> str:
    """Run the app to its end; its stderr."""
    process = _launch(tmp, run)
    try:
        out, _ = process.communicate(timeout=600)
    finally:
        stop_group(process)
    err = (tmp / f"{run}.err").read_text()
    assert process.returncode == 0 and "done" in out, err[-3000:]
    return err


def _ran_as_planned(checkpoint: Path) -> None:
    """Every file read, one per micro-batch (batch 0 did not take two)."""
    assert commits(checkpoint) >= FILES
    for number in range(FILES):
        offset = (checkpoint / "offsets" / str(number)).read_text().splitlines()[-1]
        assert json.loads(offset) == {"logOffset": number}


def test_a_start_clears_what_a_first_run_killed_while_logging_batch_zero_left(
        spark, tmp_path, capfd):
    """The leftovers of a real first run killed while Spark wrote offsets/0 (the
    files it left, by name), then a start in this process."""
    _input(tmp_path / "in")
    checkpoint = tmp_path / "ck"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / ".0.a45bc60d-b274-41c3-a15c-d6f25a952c5e.tmp").write_text("")
    (checkpoint / "sources" / "0").mkdir(parents=True)
    (checkpoint / "sources" / "0" / "0").write_text("v1\n" + json.dumps(
        {"path": (tmp_path / "in" / "part-0.json").as_uri(), "timestamp": 1_600_000_000_000,
         "batchId": 0}))
    (checkpoint / "metadata").write_text('{"id":"4ce44b73-bce6-4661-bb66-fe1bfc9c97d5"}')
    for path in checkpoint.rglob("*"):
        os.utime(path, (time.time() - 60,) * 2)  # a dead run's: not being written now
    stream = spark.readStream.schema("key string, ts timestamp, value long") \
        .option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    step = sw.stateful(stream, key="key", builder=Accumulator,
                       output_schema="kind string, a long, b long",
                       time=sw.EventTime("ts", watermark="2 minutes"), step_id="s")
    query = sw.start(step, checkpoint=str(checkpoint), path=str(tmp_path / "out"),
                     trigger={"availableNow": True}, stop_on_signal=False)
    query.awaitTermination()
    _ran_as_planned(checkpoint)
    lines = [line for line in capfd.readouterr().err.splitlines() if CLEARED in line]
    assert len(lines) == 1
    assert lines[0].endswith("offsets/.0.a45bc60d-b274-41c3-a15c-d6f25a952c5e.tmp, sources/0/0")
    assert (checkpoint / "metadata").read_text() == '{"id":"4ce44b73-bce6-4661-bb66-fe1bfc9c97d5"}'


@pytest.mark.slow
def test_a_first_run_stopped_during_start_up_is_quiet_and_starts_again(tmp_path):
    """Ctrl-C (SIGINT to the group) while ``writer.start()`` is in its py4j
    call: the query stops before its first batch with sparkwax's line and no
    traceback. Then (the same checkpoint, still no batch) kill -9 of the
    driver and its JVM as Spark writes offsets/0. Then a plain start runs
    every file, one per batch."""
    _input(tmp_path / "in")
    checkpoint = tmp_path / "out" / "ck"
    first = _launch(tmp_path, "first")
    _wait_for_mark(first)
    assert _kill(first, signal.SIGINT) == 0
    err = (tmp_path / "first.err").read_text()
    assert "KeyboardInterrupt while sending command" not in err, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    stopped = [line for line in err.splitlines() if "stopped query 's'" in line]
    assert len(stopped) == 1 and "(no batch yet)" in stopped[0], err[-3000:]
    assert commits(checkpoint) == 0

    second = _launch(tmp_path, "second")
    _wait_for_mark(second)
    _offsets_written(checkpoint / "offsets", second)
    assert _kill(second) == -signal.SIGKILL
    left = [name for name in os.listdir(checkpoint / "offsets") if name.endswith(".tmp")]
    assert commits(checkpoint) == 0

    err = _plain_run(tmp_path, "third")
    assert NOT_EMPTY not in err
    assert (CLEARED in err) == bool(left), err[-3000:]
    _ran_as_planned(checkpoint)
