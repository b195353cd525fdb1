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

from kit import batches_spark_ran, commits
from test_kill_recovery import APP, TIME, _make_input

import random


def _start(tmp: Path, trigger: str = "300 milliseconds", *,
           submit: bool = False) -> subprocess.Popen:
    launcher = [sys.executable, "-m", "sparkwax.cli.commands.submit"] if submit else [sys.executable]
    return subprocess.Popen(
        [*launcher, str(APP), "--input", str(tmp / "in"), "--output", str(tmp / "out"),
         "--checkpoint", str(tmp / "ck"), "--trigger", trigger, "--progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, text=True)


def _stop(process, tmp: Path, how: str):
    """Send the signal once two batches are committed; (stdout, stderr)."""
    try:
        _wait_for_commits(tmp, process, 2)
        if how.startswith("SIGINT"):
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGTERM)
        return process.communicate(timeout=120)
    finally:
        _kill(process)


def _kill(process) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)


def _resume_and_compare(spark, tmp: Path, files, *, submit: bool = False) -> None:
    """Restart to the end of the input; the outputs are the offline runner's
    for the batches Spark ran."""
    process = _start(tmp, "available-now", submit=submit)
    try:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0 and "done" in out, err[-3000:]
    finally:
        _kill(process)
    ran = batches_spark_ran(tmp / "ck", files)
    offline = run(Accumulator, ran, time=TIME)
    outputs = Counter(tuple(r) for r in spark.read.parquet(str(tmp / "out")).collect())
    assert outputs == Counter((key, *value) for key, value in offline.outputs)


def _wait_for_commits(tmp: Path, process, count: int) -> None:
    deadline = time.monotonic() + 300
    while commits(tmp / "ck") < count:
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the app made no progress"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGINT to the group",  # the tier (docs/testing.md): SIGTERM
                                 pytest.param("SIGTERM to python", marks=pytest.mark.lines)])
def test_a_signal_stops_between_batches_and_a_restart_resumes(spark, tmp_path, how):
    files = _make_input(tmp_path / "in", random.Random(how))
    process = _start(tmp_path)
    out, err = _stop(process, tmp_path, how)
    name = how.split()[0]
    assert process.returncode == 0, err[-3000:]
    assert f"sparkwax: {name}: stopped query 'accumulate'" in err, err[-3000:]
    assert "Traceback" not in err and "SPARK_JOB_CANCELLED" not in err, err[-3000:]
    assert "done" in out
    assert "batch   0" in err  # progress lines
    assert commits(tmp_path / "ck") < len(files), "stopped before the input was consumed"
    _resume_and_compare(spark, tmp_path, files)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM to sparkwax submit"])
def test_sparkwax_submit_passes_a_signal_on_as_a_graceful_stop(spark, tmp_path, how):
    """spark-submit's JVM ignores the SIGINT that sparkwax submit sends on, so
    the app stops between micro-batches and spark-submit exits 0."""
    files = _make_input(tmp_path / "in", random.Random(how))
    process = _start(tmp_path, submit=True)
    out, err = _stop(process, tmp_path, how)
    assert process.returncode == 0, (out + err)[-3000:]
    both = out + err  # spark-submit writes the app's stderr to its stdout
    assert err.count("sparkwax submit: SIGTERM: asked the app to stop") == 1, err[-3000:]
    assert both.count("sparkwax: SIGINT: stopping after the current micro-batch") == 1, both
    assert "sparkwax: SIGINT: stopped query 'accumulate'" in both, both[-3000:]
    assert "Traceback" not in both and "SPARK_JOB_CANCELLED" not in both, both[-3000:]
    assert commits(tmp_path / "ck") < len(files), "stopped before the input was consumed"
    _resume_and_compare(spark, tmp_path, files, submit=True)
