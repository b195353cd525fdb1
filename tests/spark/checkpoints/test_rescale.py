"""Growing a running app: its checkpoint rescaled from a laptop's state
partitions (and packed buckets) to a cluster's, without losing a key.

The commands are docs/deploy.md's "Growing" blocks (examples/growing_app.py,
``sparkwax state rescale``): two micro-batches on sparkwax's defaults, a
rescale 2 -> 5 partitions (packed: 8 -> 20 buckets), two more batches on
``local-cluster[2,1,1024]``. The sink, read with ``spark.read``, must equal a
run that never rescaled and the offline runner, per key, and the restarted
query must run 5 state partitions. A ``kill -9`` of the rescale at a random
moment leaves a checkpoint that the next start finishes or undoes.
"""

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import sparkwax as sw
from sparkwax.engine.checkpoints.snapshots import read_entries
from sparkwax.engine.spark_version import has_statestore_reader
from sparkwax.errors import RescaleError
from sparkwax.engine.checkpoints.state.rescale import (FOLDER, KILL_AT_ENV,
                                           finish_interrupted, rescale)
from sparkwax.testing import Batch, run

from kit import REPO

APP = REPO / "examples" / "growing_app.py"
DOC = REPO / "docs" / "deploy.md"
sys.path.insert(0, str(APP.parent))
import growing_app  # noqa: E402  (examples/ is not a package)
from spark_confs import confs  # noqa: E402
from pyspark import cloudpickle  # noqa: E402

cloudpickle.register_pickle_by_value(growing_app)  # workers cannot import examples/

CLI = [sys.executable, "-c", "import sys; from sparkwax.cli import main; sys.exit(main())"]
T0 = datetime(2024, 3, 1, tzinfo=timezone.utc)
FILES = 4


def _events(files: int = FILES, users: int = 9, seed: int = 7):
    """One list of ``(user, event)`` per file; time moves on, some users
    pause for more than 5 minutes (their totals close), also across the
    rescale (between files 1 and 2)."""
    rng = random.Random(seed)
    batches, clock = [], T0
    for _ in range(files):
        items = []
        for _ in range(12):
            clock += timedelta(seconds=rng.randint(5, 90))
            items.append((f"u{rng.randrange(users)}", {"ts": clock, "amount": rng.randint(1, 20)}))
        batches.append(items)
    return batches


def _write(folder: Path, number: int, items) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"part-{number:03d}.json"
    path.write_text("".join(json.dumps({"user": k, "ts": v["ts"].isoformat(),
                                        "amount": v["amount"]}) + "\n" for k, v in items))
    os.utime(path, (1_700_000_000 + number,) * 2)


def doc_commands(marker: str) -> list:
    """The commands of the ```console block after ``<!-- marker -->`` in deploy.md."""
    text = DOC.read_text()
    block = text[text.index(f"<!-- {marker} -->"):]
    block = block[block.index("```console") + len("```console"):]
    block = block[:block.index("```")]
    lines = [line[2:] for line in block.strip().splitlines() if line.startswith("$ ")]
    assert lines, marker
    return lines


def doc_block(marker: str) -> str:
    """The ```python block after ``<!-- marker -->`` in deploy.md."""
    text = DOC.read_text()
    block = text[text.index(f"<!-- {marker} -->"):]
    block = block[block.index("```python") + len("```python"):]
    return block[:block.index("```")]


def _run(command: str, folder: Path, extra=()) -> str:
    """A docs command with its example folders put under ``folder``."""
    args = command.replace("in/", f"{folder}/in/").replace("out/", f"{folder}/out/") \
        .replace("ck/", f"{folder}/ck/").split()
    if args[0] == "python":
        args[0] = sys.executable
    elif args[0] == "sparkwax":
        args[:1] = CLI
    done = subprocess.run([*args, *extra], cwd=REPO, capture_output=True, text=True,
                          timeout=600, start_new_session=True)
    assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


def _by_key(rows):
    found = {}
    for row in rows:
        found.setdefault(row["user"], Counter())[(row["kind"], row["total"], row["purchases"])] += 1
    return found


def _offline(batches):
    result = run(growing_app.Totals, [Batch(items) for items in batches], time=growing_app.TIME)
    return {key: Counter(tuple(out[f] for f in ("kind", "total", "purchases")) for out in outs)
            for key, outs in result.by_key.items()}


@pytest.mark.slow
@pytest.mark.parametrize("host", ["packed"])  # per_key: the in-session tests below
def test_grow_from_laptop_to_cluster(spark, tmp_path, host):
    batches = _events()
    extra = ["--host", host]
    laptop, rescale_command, cluster, check = doc_commands("growing-commands")
    for number in (0, 1):
        _write(tmp_path / "in", number, batches[number])
    assert "done: 2 state partitions" in _run(laptop, tmp_path, extra)
    said = _run(rescale_command, tmp_path)
    assert "state partitions 2 -> 5" in said, said
    assert ("buckets 8 -> 20" in said) == (host == "packed"), said
    for number in (2, 3):
        _write(tmp_path / "in", number, batches[number])
    assert "done: 5 state partitions" in _run(cluster, tmp_path, extra)

    assert "every key restores" in _run(check, tmp_path)  # and exit code 0

    got = _by_key(spark.read.parquet(str(tmp_path / "out")).collect())
    assert got == _offline(batches)
    assert any(kind == "closed" for outs in got.values() for kind, _, _ in outs)
    assert not (tmp_path / "ck" / FOLDER).exists()
    namespace = {"spark": spark}
    exec(doc_block("growing-sql").replace('"ck/"', repr(str(tmp_path / "ck"))), namespace)
    offline = run(growing_app.Totals, [Batch(items) for items in batches], time=growing_app.TIME)
    assert {row["user"]: row["total"] for row in namespace["open_totals"].collect()} == {
        key: snapshot[0] for key, snapshot in offline.snapshots.items()}


def _checkpoint_with_two_batches(spark, tmp: Path, host: str, batches, read: bool = True):
    for number in (0, 1):
        _write(tmp / "in", number, batches[number])
    query = sw.start(growing_app.build(spark, str(tmp / "in"), host),
                     checkpoint=str(tmp / "ck"), path=str(tmp / "out"),
                     trigger={"availableNow": True})
    query.awaitTermination()
    if not read:
        return None
    return {e.key: (e.snapshot, e.timer) for e in read_entries(spark, str(tmp / "ck"))}


def _files(folder: Path):
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*")}


@pytest.mark.lines(every=True)  # runs on 3.5 only
@pytest.mark.parametrize("host", ["per_key", "packed"])
def test_without_a_state_reader_the_state_tools_refuse_by_name(spark, tmp_path, host):
    """Spark 3.5 has no "statestore" reader: rescale, read_state, state show
    (API and CLI) and finish are each the named ConfigError, before anything
    is written; the query then restarts on the checkpoint and equals offline
    (docs/deploy.md, "Spark versions")."""
    if has_statestore_reader(spark):
        pytest.skip("this Spark reads state (4.0+): the rescale tests above")
    batches = _events()
    _checkpoint_with_two_batches(spark, tmp_path, host, batches, read=False)
    checkpoint, named = str(tmp_path / "ck"), r"needs Spark 4\.0 or newer"
    files = _files(tmp_path / "ck")
    for call in (lambda: rescale(checkpoint, 5, spark=spark, idle_seconds=0),
                 lambda: sw.read_state(spark, checkpoint),
                 lambda: read_entries(spark, checkpoint),
                 lambda: sw.finish(checkpoint, builder=growing_app.Totals,
                                   output_schema=growing_app.OUTPUT_SCHEMA,
                                   time=growing_app.TIME)):
        with pytest.raises(sw.ConfigError, match=named):
            call()
    shown = subprocess.run([*CLI, "state", "show", checkpoint], cwd=REPO, capture_output=True,
                           text=True, timeout=600)
    assert shown.returncode != 0 and re.search(named, shown.stderr), shown.stderr[-3000:]
    assert "Traceback" not in shown.stderr, shown.stderr[-3000:]
    assert _files(tmp_path / "ck") == files
    for number in (2, 3):
        _write(tmp_path / "in", number, batches[number])
    query = sw.start(growing_app.build(spark, str(tmp_path / "in"), host),
                     checkpoint=checkpoint, path=str(tmp_path / "out"),
                     trigger={"availableNow": True})
    query.awaitTermination()
    assert _by_key(spark.read.parquet(str(tmp_path / "out")).collect()) == _offline(batches)
    from sparkwax.cli import main  # replay reads no state: it works on 3.5

    assert main(["replay", checkpoint, "growing_app:Totals", "--source-format", "json",
                 "--source-schema", growing_app.INPUT_SCHEMA, "--sink",
                 str(tmp_path / "out")]) == 0
    newest = os.environ.get("SPARKWAX_NEWEST_PYTHON")  # tests/compat/run.sh: make test's .venv
    if newest:  # what the refusal advises: read the checkpoint from a 4.0+ environment
        shown = subprocess.run([newest, *CLI[1:], "state", "show", checkpoint],
                               cwd=REPO, capture_output=True, text=True, timeout=600)
        assert shown.returncode == 0, shown.stderr[-3000:]
        offline = run(growing_app.Totals, [Batch(items) for items in batches],
                      time=growing_app.TIME)
        assert all(str(key) in shown.stdout for key in offline.snapshots), shown.stdout[-3000:]


def test_rescale_refuses_what_it_cannot_do_and_changes_nothing(spark, tmp_path):
    batches = _events(files=2)
    _checkpoint_with_two_batches(spark, tmp_path, "per_key", batches)
    checkpoint = str(tmp_path / "ck")
    listing = sorted(str(p) for p in (tmp_path / "ck").rglob("*"))
    with pytest.raises(RescaleError, match="already has 2 state partitions"):
        rescale(checkpoint, 2, spark=spark, idle_seconds=0)
    with pytest.raises(RescaleError, match="per-key step: it has no buckets"):
        rescale(checkpoint, 3, buckets=9, spark=spark, idle_seconds=0)
    with pytest.raises(RescaleError, match="positive int"):
        rescale(checkpoint, 0, spark=spark, idle_seconds=0)
    assert sorted(str(p) for p in (tmp_path / "ck").rglob("*")) == listing


def test_rescale_refuses_a_running_query(spark, tmp_path):
    _write(tmp_path / "in", 0, _events(files=1)[0])
    query = sw.start(growing_app.build(spark, str(tmp_path / "in")),
                     checkpoint=str(tmp_path / "ck"), path=str(tmp_path / "out"),
                     trigger={"processingTime": "200 milliseconds"})
    try:
        query.spark_query.processAllAvailable()
        with pytest.raises(RescaleError, match="in use by a query"):
            rescale(str(tmp_path / "ck"), 3, spark=spark, idle_seconds=0)
    finally:
        query.stop()


@pytest.mark.lines(since="4.0")
@pytest.mark.parametrize("host", ["per_key", "packed"])
def test_state_show_finish_and_restart_across_a_rescale(spark, tmp_path, host, capsys):
    """In one session: the state read after the rescale is the state before
    it; the restarted query continues it exactly, on the checkpoint's 5
    partitions (and 20 buckets) although the session says 2 (and 8); a second
    rescale back down to 1 partition, then finish, equals offline."""
    if not has_statestore_reader(spark):
        pytest.skip("no statestore reader on this Spark (3.5): the refusal test below")
    batches = _events()
    before = _checkpoint_with_two_batches(spark, tmp_path, host, batches)
    checkpoint = str(tmp_path / "ck")
    result = rescale(checkpoint, 5, spark=spark, idle_seconds=0)
    assert result.partitions == (2, 5)
    assert result.buckets == ((8, 20) if host == "packed" else None)
    after = {e.key: (e.snapshot, e.timer) for e in read_entries(spark, checkpoint)}
    assert after == before and after
    assert {e.partition for e in read_entries(spark, checkpoint)} <= set(range(5))
    for number in (2, 3):  # restarted on the session's 2 partitions: Spark keeps the 5
        _write(tmp_path / "in", number, batches[number])
    query = sw.start(growing_app.build(spark, str(tmp_path / "in"), host),
                     checkpoint=checkpoint, path=str(tmp_path / "out"),
                     trigger={"availableNow": True})
    query.awaitTermination()
    assert query.spark_query.lastProgress["stateOperators"][0]["numShufflePartitions"] == 5
    said = capsys.readouterr().err
    assert ("runs on the checkpoint's 5 state partitions, not the session's "
            "spark.sql.shuffle.partitions=2") in said, said
    assert ("keeps the checkpoint's 20 buckets" in said) == (host == "packed"), said
    assert _by_key(spark.read.parquet(str(tmp_path / "out")).collect()) == _offline(batches)
    rescale(checkpoint, 1, spark=spark, idle_seconds=0)
    offline = run(growing_app.Totals, [Batch(items) for items in batches], time=growing_app.TIME)
    assert {e.key: e.snapshot for e in read_entries(spark, checkpoint)} == offline.snapshots
    # replay compares every batch before and after the rescales with the sink
    from sparkwax.cli import main

    assert main(["replay", checkpoint, "growing_app:Totals", "--source-format", "json",
                 "--source-schema", growing_app.INPUT_SCHEMA, "--sink",
                 str(tmp_path / "out")]) == 0, capsys.readouterr()
    assert "equal: every replayed batch matches the sink" in capsys.readouterr().out
    ends = sw.finish(checkpoint, builder=growing_app.Totals,
                     output_schema=growing_app.OUTPUT_SCHEMA, time=growing_app.TIME)
    closed = {row["user"]: row["total"] for row in ends.collect() if row["kind"] == "closed"}
    assert closed == {key: snapshot[0] for key, snapshot in offline.snapshots.items()}


@pytest.mark.slow
def test_kill_9_during_rescale_leaves_a_usable_checkpoint(spark, tmp_path):
    """``state rescale`` in its own process, killed with SIGKILL: once after a
    random delay, then in each stage (``$SPARKWAX_RESCALE_KILL_AT``: built,
    one state file moved, logs half written). ``finish_interrupted`` (what
    sw.start and the state commands run first) says "as it was" or
    "rescaled", the state read is the state before every time, and the query
    continues on the checkpoint to the offline result."""
    batches = _events()
    before = _checkpoint_with_two_batches(spark, tmp_path, "packed", batches)
    checkpoint = str(tmp_path / "ck")
    command = [*CLI, "state", "rescale", checkpoint, "--partitions", "3", "--force"]
    expected = {"random": None, "building": "as it was", "placing": "as it was",
                "logging": "rescaled"}
    for stage, outcome in expected.items():
        env = {**os.environ, KILL_AT_ENV: stage} if stage != "random" else dict(os.environ)
        started = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
        try:
            started.wait(timeout=random.Random(5).uniform(2, 6) if stage == "random" else 300)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if started.poll() is None:
                os.killpg(started.pid, signal.SIGKILL)
            started.wait()
        assert started.returncode == -signal.SIGKILL, (stage, started.stderr.read()[-2000:])
        said = finish_interrupted(spark, checkpoint) or "nothing in progress"
        assert outcome is None or said.startswith(outcome), (stage, said)
        assert not (tmp_path / "ck" / FOLDER).exists()
        state = {e.key: (e.snapshot, e.timer) for e in read_entries(spark, checkpoint)}
        assert state == before, (stage, said)
        assert _partitions(checkpoint) == (3 if said.startswith("rescaled") else 2), said
    with confs(spark, {"spark.sql.shuffle.partitions": "3"}):
        for number in (2, 3):
            _write(tmp_path / "in", number, batches[number])
        query = sw.start(growing_app.build(spark, str(tmp_path / "in"), "packed"),
                         checkpoint=checkpoint, path=str(tmp_path / "out"),
                         trigger={"availableNow": True})
        query.awaitTermination()
        assert query.spark_query.lastProgress["stateOperators"][0]["numShufflePartitions"] == 3
    assert _by_key(spark.read.parquet(str(tmp_path / "out")).collect()) == _offline(batches)


def _partitions(checkpoint: str) -> int:
    steps = json.loads((Path(checkpoint) / "sparkwax-steps.json").read_text())
    return int(steps["confs"]["spark.sql.shuffle.partitions"])


FAR = datetime(2100, 1, 1, tzinfo=timezone.utc)


class Deadlines(sw.StatefulLogic):
    """Timers that never fire in a test: a processing-time one per key
    (ProcessingTime), or an event-time one and a processing deadline (both)."""

    def __init__(self, resume=None):
        self.n = resume or 0

    def on_item(self, value):
        self.n += value["amount"]
        return [], sw.RETAIN

    def notify_at(self):
        return FAR + timedelta(minutes=self.n)

    def snapshot(self):
        return self.n


class BothClocks(Deadlines):
    def processing_notify_at(self):
        return FAR + timedelta(hours=self.n)


def _deadlines(spark, checkpoint: str):
    """Each key's processing deadline, as ``sw.read_state`` shows it."""
    rows = sw.read_state(spark, checkpoint).select("user", "deadline").collect()
    return {row["user"]: None if row["deadline"] is None
            else row["deadline"].replace(tzinfo=timezone.utc) for row in rows}


def _timeouts(spark, checkpoint: str):
    """Spark's stored timeout per state row (key or bucket)."""
    frame = spark.read.format("statestore").load(checkpoint)
    return sorted(row[0] for row in frame.select("value.timeoutTimestamp").collect())


@pytest.mark.parametrize("host", ["per_key", "packed"])
@pytest.mark.parametrize("logic, mode", [(Deadlines, sw.ProcessingTime()),
                                         (BothClocks, growing_app.TIME)],
                         ids=["processing", "two-clock"])
def test_timers_and_spark_timeouts_survive_a_rescale(spark, tmp_path, host, logic, mode):
    _write(tmp_path / "in", 0, _events(files=1)[0])
    stream = spark.readStream.schema(growing_app.INPUT_SCHEMA).json(str(tmp_path / "in"))
    out = sw.stateful(stream, key="user", builder=logic, output_schema="n long", time=mode,
                      host=host)
    # (a step with processing-time timers never ends availableNow: stop after batch 0)
    query = sw.start(out, checkpoint=str(tmp_path / "ck"), format="noop",
                     trigger={"processingTime": "300 milliseconds"})
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "ck" / "commits" / "0").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        query.stop()
    checkpoint = str(tmp_path / "ck")
    before = {e.key: (e.snapshot, e.timer) for e in read_entries(spark, checkpoint)}
    timeouts = _timeouts(spark, checkpoint)
    deadlines = _deadlines(spark, checkpoint)
    if logic is BothClocks:  # read_state shows each key's processing deadline
        assert deadlines == {key: FAR + timedelta(hours=n) for key, (n, _) in before.items()}
    else:
        assert set(deadlines.values()) == {None}
    rescale(checkpoint, 3, spark=spark, idle_seconds=0)
    assert {e.key: (e.snapshot, e.timer) for e in read_entries(spark, checkpoint)} == before
    assert _deadlines(spark, checkpoint) == deadlines
    after = _timeouts(spark, checkpoint)
    if host == "per_key":  # one row per key: each timeout as it was
        assert after == timeouts and len(after) == len(before)
    else:  # buckets: each new bucket times out no later than the earliest of its keys did
        assert min(after) == min(timeouts) and set(after) <= set(timeouts)
    assert all(t > 0 for t in after)


def test_a_foreach_batch_sink_never_sees_the_rescale_batch(spark, tmp_path):
    batches, seen = _events(), []

    def record(frame, batch_id):
        seen.append((batch_id, [row.asDict() for row in frame.collect()]))

    def run_phase(numbers):
        for number in numbers:
            _write(tmp_path / "in", number, batches[number])
        query = sw.start(growing_app.build(spark, str(tmp_path / "in")),
                         checkpoint=str(tmp_path / "ck"), foreach_batch=record,
                         trigger={"availableNow": True})
        query.awaitTermination()

    run_phase((0, 1))
    result = rescale(str(tmp_path / "ck"), 3, spark=spark, idle_seconds=0)
    with confs(spark, {"spark.sql.shuffle.partitions": "3"}):
        run_phase((2, 3))
    ids = [batch_id for batch_id, _ in seen]
    assert result.batch not in ids and ids == sorted(ids) and max(ids) > result.batch
    assert _by_key(row for _, rows in seen for row in rows) == _offline(batches)


def test_a_failed_rescale_is_undone_at_once(spark, tmp_path, monkeypatch):
    """A failure (not a kill) while the state files move: the rescale undoes
    its moves under its own liveness record and raises the failure itself."""
    from sparkwax.engine.checkpoints.state import rescale as module

    before = _checkpoint_with_two_batches(spark, tmp_path, "per_key", _events(files=2))
    checkpoint = str(tmp_path / "ck")

    def fail(stage):
        if stage == "placing":
            raise OSError("the disk is full")

    monkeypatch.setattr(module, "_crash_point", fail)
    with pytest.raises(OSError, match="the disk is full"):
        rescale(checkpoint, 3, spark=spark, idle_seconds=0)
    assert not (tmp_path / "ck" / FOLDER).exists()
    assert {e.key: (e.snapshot, e.timer) for e in read_entries(spark, checkpoint)} == before
