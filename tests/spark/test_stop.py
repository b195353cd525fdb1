"""Ctrl-C and SIGTERM stop a query started by sw.start between micro-batches,
with one clear line, and a restart resumes exactly where it stopped.

The app (examples/recovery_app.py with a processing-time trigger) runs in its
own process group; SIGINT goes to the whole group, as a terminal's Ctrl-C
does (PySpark's JVM ignores it), SIGTERM to the Python process only, as
``kill PID`` does."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from sparkwax.testing import run
from sparkwax.testing.reference import Accumulator

from test_kill_recovery import APP, TIME, _batches_spark_ran, _commits, _make_input

import random


def _start(tmp: Path, trigger: str = "300 milliseconds") -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(APP), "--input", str(tmp / "in"), "--output", str(tmp / "out"),
         "--checkpoint", str(tmp / "ck"), "--trigger", trigger, "--progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, text=True)


def _wait_for_commits(tmp: Path, process, count: int) -> None:
    deadline = time.monotonic() + 300
    while _commits(tmp / "ck") < count:
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the app made no progress"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGINT to the group", "SIGTERM to python"])
def test_a_signal_stops_between_batches_and_a_restart_resumes(spark, tmp_path, how):
    files = _make_input(tmp_path / "in", random.Random(how))
    process = _start(tmp_path)
    try:
        _wait_for_commits(tmp_path, process, 2)
        if how.startswith("SIGINT"):
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
    name = how.split()[0]
    assert process.returncode == 0, err[-3000:]
    assert f"sparkwax: {name}: stopped query 'accumulate'" in err, err[-3000:]
    assert "Traceback" not in err and "SPARK_JOB_CANCELLED" not in err, err[-3000:]
    assert "done" in out
    assert "batch   0" in err  # progress lines
    stopped_at = _commits(tmp_path / "ck")
    assert stopped_at < len(files), "stopped before the input was consumed"

    process = _start(tmp_path, "available-now")  # resumes, and runs to the end
    try:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0 and "done" in out, err[-3000:]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
    ran = _batches_spark_ran(tmp_path / "ck", files)
    offline = run(Accumulator, ran, time=TIME)
    outputs = Counter(tuple(r) for r in spark.read.parquet(str(tmp_path / "out")).collect())
    assert outputs == Counter((key, *value) for key, value in offline.outputs)
