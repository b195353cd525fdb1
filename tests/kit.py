"""The tests' shared kit: the times, host lists, small logics and helpers that
many test files used to copy. ``import kit`` works from every test file
(tests/conftest.py puts tests/ on sys.path). It never imports pyspark: unit
tests use it (tests/unit/test_no_pyspark.py).

Sessions are fixtures, not kit: ``spark`` (tests/spark/conftest.py) is the one
local[2] session every Spark test shares; ``remote`` (tests/connect/conftest.py)
is a Spark Connect client; ``confs`` (tests/spark_confs.py) sets session confs
for a block. tests/spark/conftest.py and tests/connect/conftest.py ship this
module to Python workers by value (workers cannot import tests/).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Sequence

import pytest
from hypothesis import strategies as st

import sparkwax as sw

# --- paths --------------------------------------------------------------------------------

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
PACKAGE = REPO / "sparkwax"

# --- times --------------------------------------------------------------------------------

UTC = timezone.utc
T0 = datetime(2024, 1, 1, tzinfo=UTC)          # the tests' usual start: midnight UTC
NOON = datetime(2024, 1, 1, 12, tzinfo=UTC)    # the start of the files whose T0 is noon
US = timedelta(microseconds=1)
MS = timedelta(milliseconds=1)
SEC = timedelta(seconds=1)
MIN = timedelta(minutes=1)


def at(minutes=0, seconds=0, ms=0):
    """``T0`` plus so many minutes (and seconds, milliseconds)."""
    return T0 + timedelta(minutes=minutes, seconds=seconds, milliseconds=ms)


def at_second(seconds):
    """``T0`` plus so many seconds."""
    return T0 + timedelta(seconds=seconds)


def event(minutes, **fields):
    """A value ``{"ts": at(minutes), **fields}``."""
    return {"ts": at(minutes), **fields}


def item(key, minutes, value):
    """A keyed item ``(key, {"ts": at(minutes), "value": value})``."""
    return (key, {"ts": at(minutes), "value": value})


# --- hosts --------------------------------------------------------------------------------

# the compatibility tier (tests/compat/run.sh: one run per older Spark line) runs fewer cases
IN_TIER = bool(os.environ.get("SPARKWAX_COMPAT_LINE"))
SPARK_HOSTS = ("per_key", "packed")
# each Spark host, with a bucket count for packed (None for per_key)
HOSTS_AND_BUCKETS = [("per_key", None), ("packed", 2)]
each_spark_host = pytest.mark.parametrize("host", SPARK_HOSTS)
each_spark_host_with_buckets = pytest.mark.parametrize("host, buckets", HOSTS_AND_BUCKETS)

def plain_keys(driver, keys, stored, values, committed, now_ms):
    """``driver.activate_keys`` of a batch of keys (no event times, order nor
    EOF: the packed host's common call), each column given."""
    from sparkwax._driver import Clocks, KeyBatch

    return driver.activate_keys(KeyBatch(keys, values, stored, committed), Clocks(now_ms))


# --- logics -------------------------------------------------------------------------------


class Fussy(sw.StatefulLogic):
    """Counts a key's values; a value "boom" raises in ``on_item``."""

    def __init__(self, resume=None):
        self.n = resume or 0

    def on_item(self, value):
        if value == "boom":
            raise ValueError("no boom here")
        self.n += 1
        return [self.n], sw.RETAIN

    def snapshot(self):
        return self.n


class Count(sw.StatefulLogic):
    """Counts a key's items; emits the count after each."""

    def __init__(self, resume=None):
        self.n = resume or 0

    def on_item(self, value):
        self.n += 1
        return [self.n], sw.RETAIN

    def snapshot(self):
        return self.n


class PassThrough(sw.StatefulLogic):
    """Emits each item as it is and holds no state (DISCARD)."""

    def __init__(self, resume=None):
        pass

    def on_item(self, value):
        return [value], sw.DISCARD

    def snapshot(self):
        return None


class Evens(sw.StatefulLogic):
    """Emits the even values; counts the odd ones (its state); at EOF emits 100 + that
    count (a chain stage whose emits the next stage counts)."""

    def __init__(self, resume=None):
        self.odd = resume or 0

    def on_item(self, value):
        if value % 2:
            self.odd += 1
            return [], sw.RETAIN
        return [value], sw.RETAIN

    def on_eof(self):
        return [100 + self.odd], sw.RETAIN

    def snapshot(self):
        return self.odd


# --- results ------------------------------------------------------------------------------


def per_key(result):
    """A run's outputs by key, each output a tuple (Spark rows compare as tuples)."""
    return {key: [tuple(value) for value in values] for key, values in result.by_key.items()}


def plain_row_value(value):
    """A Spark row's value as the offline runner's: Rows as dicts, lists
    element by element, naive timestamps as UTC (local_session runs in UTC)."""
    from pyspark.sql import Row

    if isinstance(value, Row):
        return {k: plain_row_value(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, list):
        return [plain_row_value(v) for v in value]
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def skip_unless_steps_follow(spark):
    """Skip on a line where no stateful step follows another (3.5: no
    transformWithStateInPandas; test_chaining_spark.py tests its refusal)."""
    from sparkwax.engine.spark_version import has_transform_with_state

    if not has_transform_with_state(spark):
        pytest.skip("Spark 3.5 runs nothing stateful after an applyInPandasWithState")


# --- logics -------------------------------------------------------------------------------


class SumV1(sw.StatefulLogic):
    """A running total of the values; emits ``(total, 1)`` (1: this version)."""

    def __init__(self, resume=None):
        self.total = resume or 0

    def on_item(self, value):
        self.total += value
        return [(self.total, 1)], sw.RETAIN

    def snapshot(self):
        return self.total


def sum_v1_step(session, folder, output_schema, step_id="sum"):
    """``SumV1`` over a json file stream of ``key string, value long`` rows in
    ``folder``, as a user attaches it (``session``: local or Connect)."""
    stream = session.readStream.schema("key string, value long").json(str(folder))
    return sw.stateful(stream, key="key", builder=SumV1, value="value",
                       output_schema=output_schema, step_id=step_id)


# --- scripts ------------------------------------------------------------------------------


def accumulator_script():
    """Four steps of ``reference.Accumulator`` input (``ACCUMULATOR_INPUT``,
    event time ``ACCUMULATOR_TIME``) with a crash: the script ``finish`` is
    checked on, locally and over Connect."""
    from sparkwax.testing import Batch, Crash

    return [
        Batch([item("a", 0, 1), item("b", 1, 2), item("c", 2, 3)]),
        Batch([item("a", 3, 5), item("b", 30, 6)]),
        Crash(),
        Batch([item("c", 40, 7), item("d", 41, 8)]),
    ]


ACCUMULATOR_INPUT = "key string, ts timestamp, value long"
ACCUMULATOR_OUTPUT = "kind string, a long, b long"
ACCUMULATOR_TIME = sw.EventTime("ts", watermark="2 minutes")


def recorder_commands():
    """``reference.TransitionRecorder`` values: an id, and maybe a DISCARD, a
    timer (minutes from ``at()``, or None to cancel) and what the next
    ``on_notify``/``on_eof`` return."""
    return st.fixed_dictionaries(
        {"id": st.integers(0, 9)},
        optional={"discard": st.booleans(),
                  "notify": st.one_of(st.none(), st.integers(-5, 90).map(at)),
                  "notify_discard": st.booleans(),
                  "eof_discard": st.booleans()})


# --- command line and processes -----------------------------------------------------------


def state_cli(argv):
    """``sparkwax state ARGV`` in this process; its exit code."""
    from sparkwax.cli.commands.state import state_command

    parser = argparse.ArgumentParser()
    return state_command(parser)(parser.parse_args(argv))


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_group(process: subprocess.Popen) -> None:
    """SIGKILL a child started with ``start_new_session=True`` and its whole
    process group (spark-submit, its JVM, the driver's Python), then reap it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)


def commits(checkpoint: Path) -> int:
    """How many micro-batches a checkpoint folder's commit log holds."""
    folder = checkpoint / "commits"
    return len([n for n in os.listdir(folder) if n.isdigit()]) if folder.is_dir() else 0


# --- kill -9 -------------------------------------------------------------------------------


def batches_spark_ran(checkpoint: Path, files: list) -> list:
    """The micro-batches as Spark cut them, from its offset and file-source
    logs, as script steps: ``files[n]`` are the items of input file
    ``part-{n:03d}.json``.

    After a crash between the file source writing its own log and the offset
    log, Spark's file source hands the interrupted batch's file *and* the next
    one to one micro-batch (maxFilesPerTrigger does not hold across that
    restart), so with event time the cuts, and hence lateness and timers, can
    differ from an uninterrupted run; sw.start, which the app uses, now writes
    the planned batch's offsets first (tests/spark/checkpoints/test_replay.py). Exactly-once
    is relative to these cuts. (sparkwax.testing.replay does the same with
    Spark's reader.)"""
    from sparkwax.testing import Batch, Tick

    log_files = {}
    for path in (checkpoint / "sources" / "0").iterdir():
        if path.name.startswith("."):
            continue
        for line in path.read_text().splitlines()[1:]:
            entry = json.loads(line)
            log_files.setdefault(entry["batchId"], set()).add(Path(entry["path"]).name)
    numbers = sorted(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    by_name = {f"part-{n:03d}.json": items for n, items in enumerate(files)}
    script, previous = [], -1
    for number in numbers:
        offset = json.loads((checkpoint / "offsets" / str(number)).read_text().splitlines()[-1])
        current = offset["logOffset"]
        names = [name for index in range(previous + 1, current + 1)
                 for name in sorted(log_files.get(index, []))]
        script.append(Batch([item for name in names for item in by_name[name]]) if names
                      else Tick())
        previous = current
    return script


def run_to_end(start: Callable[[], subprocess.Popen]) -> None:
    """Run a job (``start()``: its process, in its own group) until it prints
    ``done``."""
    process = start()
    try:
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0 and "done" in output, output[-3000:]
    finally:
        stop_group(process)


def run_with_kills(start: Callable[[], subprocess.Popen], checkpoint: Path,
                   points: Sequence[int], rng: random.Random) -> list:
    """Start the job, SIGKILL it inside the micro-batch after the
    checkpoint's ``points``-th commit, restart, ...; then run it to its end.
    The commit counts at each kill."""
    done_at = []
    for point in points:
        process = start()
        try:
            deadline = time.monotonic() + 300
            while commits(checkpoint) < point and process.poll() is None:
                assert time.monotonic() < deadline, "the job made no progress"
                time.sleep(0.05)
            time.sleep(rng.uniform(0, 0.4))  # land somewhere inside the next micro-batch
        finally:
            stop_group(process)
        done_at.append(commits(checkpoint))
    run_to_end(start)
    return done_at
