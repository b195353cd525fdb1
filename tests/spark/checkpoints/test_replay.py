"""replay on real checkpoints: the micro-batches a query ran, replayed offline
and compared with its sink, batch by batch and key by key.

- A query stopped with Ctrl-C (sw.start's graceful stop) mid-stream and
  restarted: replay finds no difference with the file sink; a deliberately
  changed logic makes replay (and ``sparkwax replay``) name the first
  differing batch and key.
- The restart after a stop between the file source's log and the offset log
  (issue 21, item 4): plain Spark hands two files to one micro-batch;
  ``sw.start`` keeps the batch plan, so the batches are an uninterrupted run's.
- Other sources are a ConfigError naming the source and what is supported.
- The test harness's foreachBatch sink is read too.
"""

import json
import os
import random
import shutil
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

import sparkwax as sw
from sparkwax.errors import ConfigError
from sparkwax.testing import Batch, replay
from sparkwax.testing.reference import Accumulator, Counter

from kit import REPO, T0 as BASE

sys.path.insert(0, str(REPO / "examples"))
import recovery_app  # noqa: E402

SOURCE = dict(source_format="json", source_schema=recovery_app.INPUT_SCHEMA)
STEP = dict(key="key", output_schema=recovery_app.OUTPUT_SCHEMA, time=recovery_app.TIME,
            step_id="accumulate")


def _write_input(folder: Path, files: int, seed: str) -> None:
    """``files`` JSON files, a few rows each, modification times one second apart
    (the file source's order); some rows late for the 2 minute watermark."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    clock = BASE
    for number in range(files):
        rows = []
        for _ in range(rng.randint(2, 4)):
            clock += timedelta(seconds=rng.randint(10, 150))
            ts = clock - timedelta(seconds=rng.randint(0, 200))
            rows.append({"key": rng.choice("abc"), "ts": ts.isoformat(),
                         "value": rng.randint(0, 30)})
        path = folder / f"part-{number:03d}.json"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        os.utime(path, (1_600_000_000 + number,) * 2)


def _start(spark, tmp: Path, **options):
    return sw.start(recovery_app.build(spark, str(tmp / "in")), checkpoint=str(tmp / "ck"),
                    path=str(tmp / "out"), trigger={"availableNow": True}, **options)


def _numbered(folder: Path):
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) \
        if folder.is_dir() else []


def _log_offsets(checkpoint: Path):
    return [json.loads((checkpoint / "offsets" / str(n)).read_text().splitlines()[-1])[
        "logOffset"] for n in _numbered(checkpoint / "offsets")]


def _per_key(outputs):
    grouped = {}
    for key, value in outputs:
        grouped.setdefault(key, []).append(repr(value))
    return {key: sorted(values) for key, values in grouped.items()}


class Changed(Accumulator):
    """The reference logic with a deliberate change: its timer's output counts one more."""

    def on_notify(self):
        emits, discard = super().on_notify()
        return [("notify", self.total + 1, self.count)], discard


@pytest.fixture(scope="module")
def stopped_and_restarted(spark, tmp_path_factory):
    """A checkpoint whose query was stopped with SIGINT mid-stream and restarted."""
    tmp = tmp_path_factory.mktemp("replay-stop")
    files = 6
    _write_input(tmp / "in", files, "stop")
    query = _start(spark, tmp)  # stop_on_signal: Ctrl-C stops between micro-batches
    deadline = time.monotonic() + 300
    while len(_numbered(tmp / "ck" / "commits")) < 2 and query.isActive:
        assert time.monotonic() < deadline, "the query made no progress"
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGINT)  # what a terminal's Ctrl-C does to the app
    query.awaitTermination(120)
    assert not query.isActive
    stopped_at = len(_numbered(tmp / "ck" / "commits"))
    assert 2 <= stopped_at < files, "stopped mid-stream"
    restarted = _start(spark, tmp, stop_on_signal=False)
    restarted.awaitTermination(300)
    assert restarted.exception() is None
    return tmp, files, stopped_at


def test_a_graceful_stop_and_restart_replays_equal_to_the_sink(spark, stopped_and_restarted):
    tmp, files, stopped_at = stopped_and_restarted
    logs = _log_offsets(tmp / "ck")
    assert logs[:files] == list(range(files)), "one file per micro-batch, stop or not"
    result = replay(str(tmp / "ck"), Accumulator, sink=str(tmp / "out"), spark=spark,
                    **STEP, **SOURCE)
    assert result.equal, result.report()
    assert [b.files for b in result.batches][:files] == [1] * files
    assert sum(b.rows for b in result.batches) == sum(
        len(p.read_text().splitlines()) for p in (tmp / "in").iterdir())
    assert not result.watermark_mismatches and not result.pending
    assert all(c.equal and len(c.batch_ids) == 1 for c in result.comparisons)
    assert result.run.outputs == [pair for b in result.batches for pair in b.outputs]
    assert "equal: every replayed batch matches the sink" in result.report()


def test_a_changed_logic_names_the_first_differing_batch_and_key(spark, stopped_and_restarted):
    tmp, _, _ = stopped_and_restarted
    original = replay(str(tmp / "ck"), Accumulator, spark=spark, **STEP, **SOURCE)
    changed = replay(str(tmp / "ck"), Changed, sink=str(tmp / "out"), spark=spark,
                     **STEP, **SOURCE)
    assert not changed.equal
    # where the two logics first part, offline: that batch, that key
    first = next(n for n, (a, b) in enumerate(zip(original.batches, changed.batches))
                 if a.outputs != b.outputs)
    mine, theirs = _per_key(original.batches[first].outputs), \
        _per_key(changed.batches[first].outputs)
    keys = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    comparison, difference = changed.first_difference
    assert comparison.batch_ids == (first,) and difference.key == keys[0]
    assert difference.only_offline and difference.only_sink
    assert all(row[0] == "notify" for row in difference.only_offline + difference.only_sink)
    assert f"first difference: batch {first}, key {keys[0]!r}" in changed.report()


def test_the_command_line_prints_the_table_and_exits_0_or_1(spark, stopped_and_restarted,
                                                            tmp_path, capsys):
    from sparkwax.cli import main

    tmp, files, _ = stopped_and_restarted
    common = ["--source-format", "json", "--source-schema", recovery_app.INPUT_SCHEMA,
              "--sink", str(tmp / "out")]
    # key, output schema, time and step id come from the checkpoint's sparkwax-steps.json
    assert main(["replay", str(tmp / "ck"), "sparkwax.testing.reference:Accumulator",
                 *common]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["batch", "|", "files", "|", "rows", "|", "keys",
                                           "|", "watermark", "|", "outputs"]
    assert "equal: every replayed batch matches the sink" in out
    app = tmp_path / "changed_app.py"
    app.write_text("from sparkwax.testing.reference import Accumulator\n\n"
                   "class Changed(Accumulator):\n"
                   "    def on_notify(self):\n"
                   "        emits, discard = super().on_notify()\n"
                   "        return [('notify', self.total + 1, self.count)], discard\n")
    assert main(["replay", str(tmp / "ck"), f"{app}:Changed", *common, "--key", "key",
                 "--output-schema", recovery_app.OUTPUT_SCHEMA,
                 "--time", "event:ts:2 minutes"]) == 1
    out = capsys.readouterr().out
    assert "first difference: batch" in out and "DIFFERENT" in out
    assert main(["replay", str(tmp / "ck"), f"{app}:Nope", *common]) == 2
    assert "has no 'Nope'" in capsys.readouterr().err

    # on a laptop: copies of the checkpoint, the input and the sink, the logged paths moved
    copy = tmp_path / "copy"
    for name in ("ck", "in", "out"):
        shutil.copytree(tmp / name, copy / name)
    moved = ["--source-format", "json", "--source-schema", recovery_app.INPUT_SCHEMA,
             "--sink", str(copy / "out"), "--map-path", f"{tmp / 'in'}={copy / 'in'}",
             "--map-path", f"file://{tmp / 'out'}={copy / 'out'}"]
    assert main(["replay", str(copy / "ck"), "sparkwax.testing.reference:Accumulator",
                 *moved]) == 0, capsys.readouterr()
    assert "equal: every replayed batch matches the sink" in capsys.readouterr().out
    (copy / "in" / "part-001.json").unlink()  # the copies are what replay reads
    assert main(["replay", str(copy / "ck"), "sparkwax.testing.reference:Accumulator",
                 *moved]) == 2
    assert "an input file a micro-batch read is gone" in capsys.readouterr().err


def _crash_before_the_offset_log(spark, tmp: Path, batch: int) -> None:
    """Run until batch ``batch`` is planned, and make Spark's write of
    ``offsets/<batch>`` fail: the file source has logged the batch's file, the
    offset log has no batch (a driver that died in between leaves the same)."""
    query = _start(spark, tmp, stop_on_signal=False)
    squat = tmp / "ck" / "offsets" / str(batch)
    deadline = time.monotonic() + 300
    while not (tmp / "ck" / "offsets" / str(batch - 1)).exists():
        assert time.monotonic() < deadline and query.isActive, "no progress"
        time.sleep(0.005)
    squat.mkdir()  # Spark's offsetLog.add finds "batch <batch>" taken and fails
    (squat / "taken").write_text("")
    with pytest.raises(Exception) as caught:  # sw.start's query may name the squatted file
        query.awaitTermination(300)
    assert "CONCURRENT_STREAM_LOG_UPDATE" in f"{caught.value} {caught.value.__cause__}"
    shutil.rmtree(squat)
    assert len(_numbered(tmp / "ck" / "sources" / "0")) == batch + 1  # logged, not planned
    assert _numbered(tmp / "ck" / "offsets") == list(range(batch))


@pytest.mark.parametrize("restart", ["sw.start", "Spark alone"])
def test_a_restart_keeps_the_file_source_s_batch_plan(spark, tmp_path, capfd, restart):
    """Issue 21, item 4: after a stop between the file source's log and the
    offset log, Spark's restart reads two files in one micro-batch (its file
    source's log is ahead); sw.start writes the planned batch's offsets first,
    so the batches are an uninterrupted run's. Either way the sink holds
    exactly what the batches Spark ran produce."""
    files, batch = 5, 2
    _write_input(tmp_path / "in", files, "plan")
    _crash_before_the_offset_log(spark, tmp_path, batch)
    capfd.readouterr()
    if restart == "sw.start":
        query = _start(spark, tmp_path, stop_on_signal=False)
    else:
        query = (recovery_app.build(spark, str(tmp_path / "in")).writeStream
                 .format("parquet").option("path", str(tmp_path / "out"))
                 .option("checkpointLocation", str(tmp_path / "ck"))
                 .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None
    logs = _log_offsets(tmp_path / "ck")
    if restart == "sw.start":
        assert f"wrote offsets/{batch} so the restart runs that batch as planned" in \
            capfd.readouterr().err
        assert logs[:files] == list(range(files)), logs  # one file per batch, as planned
    else:
        assert logs[batch - 1:batch + 1] == [batch - 1, batch + 1], logs  # two in one
    result = replay(str(tmp_path / "ck"), Accumulator, sink=str(tmp_path / "out"),
                    spark=spark, **STEP, **SOURCE)
    assert result.equal, result.report()
    assert result.batches[batch].files == (1 if restart == "sw.start" else 2)


def test_other_sources_are_a_config_error_naming_what_is_supported(spark, tmp_path):
    stream = spark.readStream.format("rate").option("rowsPerSecond", 5).load()
    query = (sw.stateful(stream.selectExpr("value % 3 AS key", "value"), key="key",
                         builder=Counter, output_schema="n long", value="value")
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(once=True).start())
    query.awaitTermination(300)
    with pytest.raises(ConfigError) as caught:
        replay(str(tmp_path / "ck"), Counter, key="key", output_schema="n long",
               value="value", spark=spark, source_format="json")
    message = str(caught.value)
    assert "rate or socket" in message and "file source only" in message
    assert "Kafka" in message and str(tmp_path / "ck") in message
    from sparkwax.engine.checkpoints.batch_history import read_inputs
    from sparkwax.engine.checkpoints.format.metadata_logs import PlannedBatch

    planned = PlannedBatch(0, 0, 0, (-1, 0), ("file:///nowhere/x.json",), True)
    with pytest.raises(ConfigError, match="'kafka' is not one"):
        read_inputs(spark, [planned], source_format="kafka")


def test_the_test_harness_s_foreach_batch_sink_is_read_per_batch(spark, tmp_path):
    from sparkwax.testing.spark import run_script_on_spark

    def at(minutes, key, value):
        return key, {"ts": BASE + timedelta(minutes=minutes), "value": value}
    script = [Batch([at(0, "a", 3), at(1, "b", 1)]), Batch([at(5, "a", 2)]),
              Batch([at(9, "b", 4), at(2, "a", 5)])]
    run_script_on_spark(spark, Accumulator, script, input_schema=recovery_app.INPUT_SCHEMA,
                        output_schema=recovery_app.OUTPUT_SCHEMA, time=recovery_app.TIME,
                        workdir=str(tmp_path))
    sink = next(tmp_path.glob("outputs-*"))
    result = replay(str(tmp_path / "checkpoint"), Accumulator, sink=str(sink), spark=spark,
                    key="key", output_schema=recovery_app.OUTPUT_SCHEMA,
                    time=recovery_app.TIME, **SOURCE)
    assert result.equal, result.report()
    assert [b.rows for b in result.batches if b.files] == [2, 1, 2]
    assert result.run.late == 1  # a at minute 2 after the watermark reached minute 3
